# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Ctrl-C while the robot drives, on a loaded machine: every driving node exits 0 within
EXIT_BOUND_S and the base is left standing.

navigator_node drives sim_base_node as the Go1's driver (`driver_model: unitree_ros`, its
reset window missed: the last command persists) through safety_node, while busy loops
take every core; then all three get SIGINT at once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
from nav_msgs.msg import Odometry
from rclpy.action import ActionClient

from waymark_interfaces.action import GoTo
from waymark_testing.actions import connect, send
from waymark_testing.actions import go_to as target
from waymark_testing.navigation_worlds import START, grid_msg, latched_map, room
from waymark_testing.ros_harness import wait_until

pytestmark = pytest.mark.dds

EXIT_BOUND_S = 10.0  # the bound every driving node's exit must keep after Ctrl-C
BUSY_LIMIT_S = 300  # a busy loop ends by itself after this, should teardown never run


@pytest.fixture
def load():
    """One busy loop per core, stopped at teardown."""
    loops = [
        subprocess.Popen(
            ['timeout', str(BUSY_LIMIT_S), sys.executable, '-c', 'while True: pass'],
            stdin=subprocess.DEVNULL,
        )
        for _ in range(os.cpu_count() or 2)
    ]
    yield
    for loop in loops:
        loop.terminate()
    for loop in loops:
        loop.wait(timeout=10)


def test_ctrl_c_while_driving_under_load_ends_every_node_and_leaves_the_base_standing(
    ros, launch, load
):
    odometry = ros.collect(Odometry, '/odom', 100)
    latched_map(ros, grid_msg(room()))
    nodes = [
        launch(
            'sim_base_node',
            driver_model='unitree_ros',
            miss_reset_window=True,
            initial_pose=[*START, 0.0],
        ),
        launch('safety_node'),
        launch(
            'navigator_node', cmd_vel_topic='cmd_vel_nav', reliable_input=True, robot_radius_m=0.3
        ),
    ]
    with ros.paused() as node:
        client = ActionClient(node, GoTo, 'go_to')
    connect(client, timeout_s=120.0)
    send(client, target(8.0, 1.0))
    wait_until(
        lambda: odometry and odometry[-1].twist.twist.linear.x > 0.2, 60, 'the base not driving'
    )

    for node in nodes:
        node.process.send_signal(signal.SIGINT)
    for node in nodes:
        try:
            code = node.process.wait(timeout=EXIT_BOUND_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f'{node.name} still running {EXIT_BOUND_S:g} s after SIGINT')
        assert code == 0, f'{node.name} exited {code}:\n{node.log_tail()}'
    last = odometry[-1].twist.twist
    assert (last.linear.x, last.angular.z) == (0.0, 0.0)
    assert 'lying down' in nodes[0].log_tail()
