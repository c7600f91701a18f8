# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""replay.launch.py, run: a synthetic bag replayed through the stack fills the memory,
and with exit_when_done:=true the launch ends, every node with 0, when the bag does.

Run by test_launch_testing.py with `python -m launch_testing.launch_test`; reads the
scratch folder from WAYMARK_LAUNCH_TEST_DIR. Loaded as a module outside sys.modules, so
no `from __future__ import annotations`.
"""

import json
import os
import time
import unittest
from pathlib import Path

import launch
import launch_testing.actions
import launch_testing.asserts
import rclpy
import yaml
from launch.actions import IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from std_msgs.msg import String

from waymark.sim.bag import write_bag
from waymark.sim.world import build_demo_world
from waymark_ros.launch_support import launch_plan
from waymark_ros.ros import qos

ROOT = Path(__file__).resolve().parents[2]
REPLAY = ROOT / 'launch' / 'replay.launch.py'
CONFIG = ROOT / 'config'
SCRATCH = Path(os.environ.get('WAYMARK_LAUNCH_TEST_DIR', '/tmp/waymark_launch_test'))
NAMESPACE = 'replayed'
BAG_S = 30.0  # played at its own pace: the memory fills while it plays
WAIT_S = 240.0  # longest wait for one thing; nodes start slowly on a busy machine


def own_parameters() -> dict:
    """The demo's topics (the synthetic bag's) and this run's own data folders."""
    parameters = yaml.safe_load((CONFIG / 'demo.yaml').read_text())
    parameters['/**/memory_node']['ros__parameters']['data_dir'] = str(SCRATCH / 'memory')
    reasoner = parameters.setdefault('/**/reasoner_node', {}).setdefault('ros__parameters', {})
    reasoner['memory'] = {'data_dir': str(SCRATCH / 'memory')}
    reasoner['traces'] = {'dir': str(SCRATCH / 'traces')}
    task = parameters.setdefault('/**/task_node', {}).setdefault('ros__parameters', {})
    task['data_dir'] = str(SCRATCH / 'tasks')
    return parameters


def generate_test_description():
    SCRATCH.mkdir(parents=True, exist_ok=True)
    bag = write_bag(
        build_demo_world(seed=1), SCRATCH / 'bag', camera_rate_hz=2.0, seed=1, max_duration_s=BAG_S
    )
    (SCRATCH / 'bag.json').write_text(json.dumps(bag.message_counts))
    params_file = SCRATCH / 'replay.yaml'
    params_file.write_text(yaml.safe_dump(own_parameters()))
    arguments = {
        'bag': str(bag.path),
        'rate': '1.0',
        'exit_when_done': 'true',
        'namespace': NAMESPACE,
        'camera': 'zed2i',
        'odometry': launch_plan.NO_ODOMETRY,
        'models': 'orin_nx',
        'image_model': '',
        'params_file': str(params_file),
    }
    replay = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(str(REPLAY)), launch_arguments=arguments.items()
    )
    return launch.LaunchDescription([replay, launch_testing.actions.ReadyToTest()])


class TestTheBagFillsTheMemory(unittest.TestCase):
    def test_memory_fills_and_the_launch_ends_with_the_bag(self, proc_info):
        rclpy.init()
        try:
            node = rclpy.create_node('replay_probe')
            stats = {}

            def on_stats(msg: String) -> None:
                stats.update(json.loads(msg.data))

            node.create_subscription(String, f'/{NAMESPACE}/memory/stats', on_stats, qos.latched())
            deadline = time.monotonic() + WAIT_S + BAG_S
            while stats.get('frames', 0) == 0:
                self.assertLess(time.monotonic(), deadline, f'memory stayed empty: {stats}')
                rclpy.spin_once(node, timeout_sec=0.5)
        finally:
            rclpy.shutdown()
        # The bag ends, then the launch: capture_node stops only when the launch does.
        proc_info.assertWaitForShutdown(process='replay', timeout=WAIT_S)
        proc_info.assertWaitForShutdown(process='capture_node', timeout=WAIT_S)


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):
    def test_the_whole_bag_was_played_and_acknowledged(self, proc_output):
        played = ''.join(
            output.text.decode(errors='replace')
            for output in proc_output
            if output.process_name.startswith('replay')
        )
        for topic, count in json.loads((SCRATCH / 'bag.json').read_text()).items():
            self.assertIn(f'{topic}: {count} messages', played)
        self.assertIn('replayed in', played)
        self.assertNotIn('not all acknowledged', played)
        self.assertNotIn('nothing heard', played)  # it waited for memory to open

    def test_every_process_exits_with_0(self, proc_info):
        self.assertEqual(len(proc_info.process_names()), len(launch_plan.NODES) + 1)
        launch_testing.asserts.assertExitCodes(proc_info)

    def test_no_process_printed_a_traceback(self, proc_output):
        for output in proc_output:
            self.assertNotIn('Traceback', output.text.decode(errors='replace'), output.process_name)
