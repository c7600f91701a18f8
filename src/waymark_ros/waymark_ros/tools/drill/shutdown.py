# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The Ctrl-C drill: every node stopped at once while the robot drives.

sim_base_node plays the Go1's driver (`driver_model: unitree_ros`, its reset window
missed, so the last command persists as it can on the robot) on the driving drills' hall,
driven by navigator_node through safety_node, with task_node up beside them. All of them
get SIGINT at once, as a terminal's Ctrl-C gives every process of a launch.
"""

from __future__ import annotations

import signal
import subprocess
import time

from nav_msgs.msg import OccupancyGrid

from waymark_ros.ros import qos
from waymark_ros.ros.navigation_msgs import occupancy_grid_msg
from waymark_ros.tools.drill.drills import MAP_RESOLUTION_M, Settings
from waymark_ros.tools.drill.driving import (
    SAFETY_TIMEOUT_S,
    SIM_BASE_HZ,
    START,
    STILL,
    Odometer,
    drive_far,
    hall,
)
from waymark_ros.tools.drill.report import DrillResult
from waymark_ros.tools.drill.stack import Stack, wait_until

EXIT_BOUND_S = 10.0  # every driving node is gone this soon after Ctrl-C
NODES = ('navigator_node', 'safety_node', 'task_node', 'sim_base_node')


def ctrl_c_driving(stack: Stack, settings: Settings) -> DrillResult:
    result = DrillResult('Ctrl-C (SIGINT to every node) while driving')
    odometer = _start(stack)
    drive_far(stack, odometer, settings, timeout_s=60.0)
    sent = time.monotonic()
    for name in NODES:
        stack.nodes[name].process.send_signal(signal.SIGINT)
    result.injected += 1
    for name in NODES:
        process = stack.nodes[name].process
        remaining = sent + EXIT_BOUND_S - time.monotonic()
        try:
            code = process.wait(timeout=max(remaining, 0.0))
        except subprocess.TimeoutExpired:
            code = None
        took = time.monotonic() - sent
        if code != 0:
            result.wrong += 1
        say = 'still running' if code is None else f'exit {code}'
        result.note(f'{name}: {say} {took:.2f} s after SIGINT (bound {EXIT_BOUND_S:g} s)')
    last = odometer.latest()
    if last is None or abs(last.linear) > STILL or abs(last.angular) > STILL:
        result.wrong += 1
    result.note(
        f"the base's last odometry: {last.linear:.2f} m/s, {last.angular:.2f} rad/s"
        if last is not None
        else 'no odometry from the base'
    )
    # Every node was stopped on purpose: not "dead"; its exit is what is judged above.
    return result


def _start(stack: Stack) -> Odometer:
    """The hall on /map, the Go1 driver stand-in at its start, safety, navigator and task
    nodes, ready."""
    origin, cells = hall()
    grid = occupancy_grid_msg(
        cells, MAP_RESOLUTION_M, origin, 'map', stack.node.get_clock().now().to_msg()
    )
    stack.node.create_publisher(OccupancyGrid, '/map', qos.latched()).publish(grid)
    odometer = Odometer(stack)
    stack.start(
        'sim_base_node',
        initial_pose=[*START, 0.0],
        rate_hz=SIM_BASE_HZ,
        driver_model='unitree_ros',
        miss_reset_window=True,
    )
    stack.start('safety_node', command_timeout_s=SAFETY_TIMEOUT_S)
    stack.start('navigator_node')
    stack.start('task_node', data_dir=str(stack.root / 'tasks'))
    wait_until(odometer.latest, 60.0, "sim_base's odometry")
    for name in ('navigator_node', 'task_node'):
        stack.wait_ready(name)
    return odometer
