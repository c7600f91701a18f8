# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The Go1's command path over real DDS: teleop (joy_vel) and waymark (cmd_vel_nav) into
twist_mux, its output into safety_node with config/go1_safety.yaml, safety_node's output into
the driver. Teleop is limited to the first walk's cap and stopped by the e-stop like waymark.

twist_mux is a stand-in that does what the real one does (support/twist_mux.py, with its
source cited); the driver is sim_base_node as the Go1 driver as released, its zeroing window
missed: it walks on at the last command, so whatever stops it is safety_node.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from geometry_msgs.msg import Twist
from nav_msgs.msg import Odometry
from std_msgs.msg import Bool

from waymark_ros.launch_support import base_plan
from waymark_ros.ros import qos
from waymark_testing.ros_harness import wait_until
from waymark_testing.twist_mux import TwistMuxStandIn

pytestmark = pytest.mark.dds

CONFIG = Path(__file__).resolve().parents[3] / 'config'
DRIVER = {'driver_model': 'unitree_ros', 'miss_reset_window': True, 'command_timeout_s': 0.4}
PERIOD_S = 0.05


def velocity(msg: Odometry) -> tuple[float, float]:
    return msg.twist.twist.linear.x, msg.twist.twist.angular.z


class CommandPath:
    """The path as a robot runs it, with the test holding teleop's and waymark's sticks."""

    def __init__(self, ros, launch) -> None:
        self.odometry = ros.collect(Odometry, '/odom')
        self.state = ros.latest_json('safety/state')
        mux = yaml.safe_load((CONFIG / base_plan.MUX_PARAMS).read_text())
        self.mux = TwistMuxStandIn(ros.node, mux['twist_mux']['ros__parameters'], 'cmd_vel_mux')
        launch('sim_base_node', **DRIVER)
        launch('safety_node', params_file=CONFIG / base_plan.GO1_SAFETY_PARAMS)
        self.teleop = ros.node.create_publisher(Twist, 'joy_vel', 10)
        self.waymark = ros.node.create_publisher(Twist, 'cmd_vel_nav', 10)
        self._e_stop = ros.node.create_publisher(Bool, 'e_stop', qos.latched())
        self.sticks: dict[str, tuple[float, float]] = {}  # publisher name -> (v, w), resent
        ros.node.create_timer(PERIOD_S, self._tick)
        wait_until(lambda: 'reasons' in self.state, 30, 'no state from safety_node')
        wait_until(lambda: len(self.odometry) > 2, 30, 'no odometry')
        wait_until(
            lambda: ros.node.count_subscribers('cmd_vel_mux') > 0, 30, 'safety_node on cmd_vel_mux'
        )

    def _tick(self) -> None:
        for name, (v, w) in list(self.sticks.items()):
            msg = Twist()
            msg.linear.x, msg.angular.z = v, w
            getattr(self, name).publish(msg)

    def e_stop(self, engaged: bool) -> None:
        self._e_stop.publish(Bool(data=engaged))
        wait_until(lambda: self.state.get('e_stop') is engaged, 10, f'e-stop not {engaged}')

    def wait_velocity(self, condition, what: str, timeout_s: float = 10.0) -> None:
        def met() -> bool:
            last = self.odometry[-5:]
            return len(last) == 5 and all(condition(velocity(m)) for m in last)

        wait_until(met, timeout_s, what)

    def moved_since(self, count: int) -> set[tuple[float, float]]:
        return {velocity(m) for m in self.odometry[count:]} - {(0.0, 0.0)}


def test_teleop_through_the_mux_is_capped_by_safety_node(ros, launch):
    path = CommandPath(ros, launch)
    cap = yaml.safe_load((CONFIG / base_plan.GO1_SAFETY_PARAMS).read_text())
    limits = cap['/**/safety_node']['ros__parameters']['limits']
    path.sticks['teleop'] = (2.0, 3.0)  # full stick, far above the cap
    path.wait_velocity(
        lambda v: v == (limits['max_linear'], limits['max_angular']), 'teleop not at the cap'
    )
    assert max(abs(v) for v, _ in path.moved_since(0)) <= limits['max_linear']
    assert max(abs(w) for _, w in path.moved_since(0)) <= limits['max_angular']
    assert path.mux.passed > 0

    # Teleop outranks waymark while it speaks; the waymark command is not what drives.
    path.sticks['waymark'] = (0.1, -0.2)
    count = len(path.odometry)
    wait_until(lambda: len(path.odometry) > count + 20, 10, 'no odometry')
    assert (0.1, -0.2) not in path.moved_since(count)

    # Teleop lets go: after its mux timeout waymark has the base, within the cap.
    del path.sticks['teleop']
    path.wait_velocity(lambda v: v == (0.1, -0.2), 'waymark did not get the base back')


def test_the_e_stop_stops_teleop_and_holds_until_released(ros, launch):
    path = CommandPath(ros, launch)
    path.sticks['teleop'] = (0.15, 0.0)
    path.wait_velocity(lambda v: v == (0.15, 0.0), 'teleop does not drive')
    path.e_stop(True)
    path.wait_velocity(lambda v: v == (0.0, 0.0), 'the e-stop did not stop teleop')
    count = len(path.odometry)
    x = path.odometry[-1].pose.pose.position.x
    wait_until(lambda: len(path.odometry) > count + 25, 10, 'no odometry while e-stopped')
    assert path.moved_since(count) == set()  # teleop still pushes; nothing moves
    assert path.odometry[-1].pose.pose.position.x == x

    path.e_stop(False)  # commands from before the release are not resumed; new ones drive
    path.wait_velocity(lambda v: v == (0.15, 0.0), 'teleop does not drive after the release')


def test_teleop_that_goes_silent_is_stopped_by_safety_node_not_the_driver(ros, launch):
    # The driver stand-in keeps the last command forever; the mux sends no zero.
    path = CommandPath(ros, launch)
    path.sticks['teleop'] = (0.2, 0.0)
    path.wait_velocity(lambda v: v == (0.2, 0.0), 'teleop does not drive')
    del path.sticks['teleop']  # the operator's laptop dropped off
    path.wait_velocity(lambda v: v == (0.0, 0.0), "safety_node's watchdog did not stop it")
