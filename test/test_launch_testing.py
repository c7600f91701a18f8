# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""robot.launch.py run by launch_testing: the four nodes come up and serve their interfaces.

Needs a ROS 2 install with `launch_testing_ros` (the PyPI wheels have none): skipped with
the reason otherwise. test_launch_files.py checks the launch files where this cannot run.
"""

from __future__ import annotations

import unittest
from pathlib import Path

import pytest

pytest.importorskip(
    'launch_testing', reason='ROS 2 launch_testing is not installed (PyPI wheels have none)'
)

import launch
import launch_testing.actions
import launch_testing.asserts
import rclpy
from launch.actions import IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource

ROBOT = Path(__file__).resolve().parents[1] / 'launch' / 'robot.launch.py'
SERVICES = ('/go1/query', '/go1/search_memory', '/go1/list_sessions')
ACTIONS = ('/go1/go_to', '/go1/explore', '/go1/ask')


@pytest.mark.launch_test
def generate_test_description():
    robot = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(str(ROBOT)),
        launch_arguments={'namespace': 'go1', 'models': 'orin_nx', 'image_model': ''}.items(),
    )
    return launch.LaunchDescription([robot, launch_testing.actions.ReadyToTest()])


class TestTheStackComesUp(unittest.TestCase):
    def test_services_and_actions_are_served_in_the_namespace(self, proc_output):
        rclpy.init()
        try:
            node = rclpy.create_node('launch_probe')
            deadline = node.get_clock().now().nanoseconds + 120 * 10**9
            wanted = set(SERVICES)
            while node.get_clock().now().nanoseconds < deadline:
                names = {name for name, _ in node.get_service_names_and_types()}
                if wanted <= names and all(f'{a}/_action/send_goal' in names for a in ACTIONS):
                    break
                rclpy.spin_once(node, timeout_sec=0.5)
            names = {name for name, _ in node.get_service_names_and_types()}
            self.assertTrue(wanted <= names, wanted - names)
            for action in ACTIONS:
                self.assertIn(f'{action}/_action/send_goal', names)
        finally:
            rclpy.shutdown()


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):
    def test_every_node_exits_cleanly(self, proc_info):
        launch_testing.asserts.assertExitCodes(proc_info)
