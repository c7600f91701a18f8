# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""robot.launch.py, run with a memory_node that cannot be configured: its data_dir lies
under a regular file, so opening the database fails. The launch must end by itself, with
a reason naming the failed configure, rather than leave the other nodes up.

Run by test_launch_testing.py with `python -m launch_testing.launch_test`; reads the
scratch folder from WAYMARK_LAUNCH_TEST_DIR. Loaded as a module outside sys.modules, so
no `from __future__ import annotations`.
"""

import os
import threading
import unittest
from pathlib import Path

import launch
import launch_testing.actions
import yaml
from launch.actions import IncludeLaunchDescription, RegisterEventHandler
from launch.event_handlers import OnShutdown
from launch.launch_description_sources import PythonLaunchDescriptionSource

from waymark_ros.launch_support import launch_plan

ROOT = Path(__file__).resolve().parents[2]
ROBOT = ROOT / 'launch' / 'robot.launch.py'
SCRATCH = Path(os.environ.get('WAYMARK_LAUNCH_TEST_DIR', '/tmp/waymark_launch_test'))
NAMESPACE = 'broken'
BLOCKER = SCRATCH / 'not_a_folder'  # a file where memory_node's data_dir should start
WAIT_S = 240.0  # longest wait for the launch to end; nodes start slowly on a busy machine
REASON = 'memory_node could not be configured: the launch ends; its log says why'

# Why the launch shut down, in order, as its Shutdown events said.
reasons: list[str] = []
ended = threading.Event()


def on_shutdown(event, _context) -> None:
    reasons.append(event.reason)
    ended.set()


def generate_test_description():
    SCRATCH.mkdir(parents=True, exist_ok=True)
    BLOCKER.write_text('in the way of memory_node data_dir\n')
    params_file = SCRATCH / 'broken.yaml'
    folder = SCRATCH / NAMESPACE
    params_file.write_text(
        yaml.safe_dump(
            {
                '/**/memory_node': {'ros__parameters': {'data_dir': str(BLOCKER / 'memory')}},
                '/**/reasoner_node': {
                    'ros__parameters': {
                        'memory': {'data_dir': str(folder / 'memory')},
                        'traces': {'dir': str(folder / 'traces')},
                    }
                },
                '/**/task_node': {'ros__parameters': {'data_dir': str(folder / 'tasks')}},
            }
        )
    )
    arguments = {
        'namespace': NAMESPACE,
        'odometry': launch_plan.NO_ODOMETRY,
        'image_model': '',  # off: no image model is cached here
        'params_file': str(params_file),
    }
    robot = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(str(ROBOT)), launch_arguments=arguments.items()
    )
    return launch.LaunchDescription(
        [
            RegisterEventHandler(OnShutdown(on_shutdown=on_shutdown)),
            robot,
            launch_testing.actions.ReadyToTest(),
        ]
    )


class TestTheLaunchEnds(unittest.TestCase):
    def test_the_launch_shuts_down_by_itself(self):
        # Returns as the shutdown begins, while the nodes are still stopping: a test that
        # returned first would shut the launch down itself.
        self.assertTrue(ended.wait(WAIT_S), f'the launch still runs after {WAIT_S:.0f} s')


@launch_testing.post_shutdown_test()
class TestTheReason(unittest.TestCase):
    def test_the_reason_is_the_failed_configure(self):
        self.assertEqual(reasons[:1], [REASON])

    def test_memory_node_logged_why(self, proc_output):
        log = ''.join(
            output.text.decode(errors='replace')
            for output in proc_output
            if output.process_name.startswith('memory_node')
        )
        self.assertIn('configure failed', log)
        self.assertIn(BLOCKER.name, log)
