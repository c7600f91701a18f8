# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""robot.launch.py, run: every preset and every backend that runs here, models off.

One launch holds a few robot launches side by side, each in its own namespace with its own
presets and data folder, so every camera and odometry preset, both model presets and the
backends start in one go. Each node must come up, serve its interfaces in its namespace,
hold the parameters launch_plan.expected_parameters says (the plan the static checks in
test_launch_files.py use), and exit with 0 on shutdown without a traceback. The lifecycle
nodes (launch_plan.MANAGED) hold autostart false, so it is the launch that brought them to
active.

Run by test_launch_testing.py with `python -m launch_testing.launch_test`; reads the
scratch folder from WAYMARK_LAUNCH_TEST_DIR. Loaded as a module outside sys.modules, so
no `from __future__ import annotations` (dataclasses would not find the module).
"""

import array
import os
import time
import unittest
from dataclasses import dataclass
from pathlib import Path

import launch
import launch_testing.actions
import launch_testing.asserts
import rclpy
import yaml
from launch.actions import GroupAction, IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from lifecycle_msgs.msg import State
from lifecycle_msgs.srv import GetState
from rclpy.parameter import parameter_value_to_python
from rclpy.parameter_client import AsyncParameterClient

from waymark_ros.launch_support import launch_plan
from waymark_ros.nodes.navigator.registry import GOAL_TOPIC, INTERNAL, NAV2

ROOT = Path(__file__).resolve().parents[2]
ROBOT = ROOT / 'launch' / 'robot.launch.py'
CONFIG = ROOT / 'config'
SCRATCH = Path(os.environ.get('WAYMARK_LAUNCH_TEST_DIR', '/tmp/waymark_launch_test'))
WAIT_S = 240.0  # longest wait for one thing; nodes start slowly on a busy machine
RESEND_S = 5.0  # a read not answered in this long is sent again (see answer)
SERVICES = {
    'memory_node': ('search_memory', 'list_sessions', 'delete_session'),
    'reasoner_node': ('query',),
    'task_node': ('mark', 'list_tasks', 'get_task', 'consolidate'),
}
ACTIONS = {
    'reasoner_node': ('ask',),
    'navigator_node': ('go_to', 'explore'),
    'task_node': ('run_task',),
}


@dataclass(frozen=True)
class Case:
    namespace: str
    camera: str
    odometry: str
    models: str
    backend: str

    def arguments(self) -> dict[str, str]:
        """All stack arguments, as robot.launch.py receives them."""
        return {
            'namespace': self.namespace,
            'camera': self.camera,
            'odometry': self.odometry,
            'models': self.models,
            'memory_uri': '',
            'llm_base_url': '',
            'llm_model': '',
            'image_model': '',  # off: no image model is cached here
            'backend': self.backend,
            'params_file': str(SCRATCH / f'{self.namespace}.yaml'),
            'use_sim_time': 'false',
        }


CASES = (
    Case('go1', 'zed2i', 'fast_lio_mid360', 'orin_nx', INTERNAL),
    Case('d455', 'realsense_d455', 'point_lio_mid360', 'workstation', GOAL_TOPIC),
    # nav2_msgs: Nav2's, or the test-only stand-in the runner puts on the paths
    Case('zed', 'zed2i', launch_plan.NO_ODOMETRY, 'workstation', NAV2),
)


def own_parameters(namespace: str) -> dict:
    """The case's params_file: its own data folders, nothing under the home directory."""
    folder = SCRATCH / namespace
    return {
        '/**/memory_node': {'ros__parameters': {'data_dir': str(folder / 'memory')}},
        '/**/reasoner_node': {
            'ros__parameters': {
                'memory': {'data_dir': str(folder / 'memory')},
                'traces': {'dir': str(folder / 'traces')},
            }
        },
        '/**/task_node': {'ros__parameters': {'data_dir': str(folder / 'tasks')}},
    }


def generate_test_description():
    SCRATCH.mkdir(parents=True, exist_ok=True)
    robots = []
    for case in CASES:
        (SCRATCH / f'{case.namespace}.yaml').write_text(
            yaml.safe_dump(own_parameters(case.namespace))
        )
        robot = IncludeLaunchDescription(
            PythonLaunchDescriptionSource(str(ROBOT)), launch_arguments=case.arguments().items()
        )
        robots.append(GroupAction([robot], scoped=True))
    return launch.LaunchDescription([*robots, launch_testing.actions.ReadyToTest()])


def plain(value):
    return list(value) if isinstance(value, (array.array, list, tuple)) else value


class TestTheStacksComeUp(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        rclpy.init()
        cls.node = rclpy.create_node('launch_probe')

    @classmethod
    def tearDownClass(cls):
        cls.node.destroy_node()
        rclpy.shutdown()

    def wait_for(self, predicate, what: str) -> None:
        deadline = time.monotonic() + WAIT_S
        while not predicate():
            if time.monotonic() > deadline:
                self.fail(f'no {what} after {WAIT_S:.0f} s')
            rclpy.spin_once(self.node, timeout_sec=0.5)

    def answer(self, send, what: str):
        """The result of the request `send()` makes, sent again every RESEND_S until one
        is answered: a request sent before the server has matched this client's reader
        back gets a response DDS drops, and only a new request is answered. For requests
        that may be repeated (reads)."""
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            future = send()
            resend_at = min(deadline, time.monotonic() + RESEND_S)
            while not future.done() and time.monotonic() < resend_at:
                rclpy.spin_once(self.node, timeout_sec=0.5)
            if future.done():
                return future.result()
        self.fail(f'no {what} after {WAIT_S:.0f} s')

    def services_of(self, name: str, namespace: str) -> set[str]:
        try:
            found = self.node.get_service_names_and_types_by_node(name, namespace)
        except rclpy.node.NodeNameNonExistentError:
            return set()
        return {service for service, _ in found}

    def test_every_node_serves_its_interfaces_in_its_namespace(self):
        for case in CASES:
            ns = f'/{case.namespace}'
            for name in launch_plan.NODES:
                wanted = {f'{ns}/{service}' for service in SERVICES.get(name, ())}
                wanted |= {f'{ns}/{a}/_action/send_goal' for a in ACTIONS.get(name, ())}
                wanted.add(f'{ns}/{name}/get_parameters')
                self.wait_for(
                    lambda w=wanted, n=name, s=ns: w <= self.services_of(n, s),
                    f'{name} serving in {ns}',
                )

    def lifecycle_state(self, client) -> int | None:
        """The node's state id, or None while its get_state service is not up."""
        if not client.service_is_ready():
            return None
        answer = self.answer(
            lambda: client.call_async(GetState.Request()), f'an answer from {client.srv_name}'
        )
        return answer.current_state.id

    def test_the_launch_brought_the_lifecycle_nodes_to_active(self):
        """Started with autostart false (the plan, checked below), so active means the
        launch's configure and activate requests succeeded."""
        for case in CASES:
            for name in launch_plan.MANAGED:
                client = self.node.create_client(GetState, f'/{case.namespace}/{name}/get_state')
                self.wait_for(
                    lambda c=client: self.lifecycle_state(c) == State.PRIMARY_STATE_ACTIVE,
                    f'{case.namespace}/{name} active',
                )
                self.node.destroy_client(client)

    def test_every_node_holds_the_parameters_of_the_plan(self):
        for case in CASES:
            given = case.arguments()
            plan = launch_plan.expected_parameters(
                CONFIG, given, use_sim_time=launch_plan.sim_time(given)
            )
            for name, expected in plan.items():
                client = AsyncParameterClient(self.node, f'/{case.namespace}/{name}')
                self.wait_for(client.services_are_ready, f'parameters of {name}')
                answer = self.answer(
                    lambda c=client, e=expected: c.get_parameters(sorted(e)),
                    f'parameter values of {name}',
                )
                values = [plain(parameter_value_to_python(v)) for v in answer.values]
                held = dict(zip(sorted(expected), values, strict=True))
                wanted = {key: plain(value) for key, value in expected.items()}
                self.assertEqual(held, wanted, f'{case.namespace}/{name}')


@launch_testing.post_shutdown_test()
class TestShutdown(unittest.TestCase):
    def test_every_node_exits_with_0(self, proc_info):
        self.assertEqual(len(proc_info.process_names()), len(CASES) * len(launch_plan.NODES))
        launch_testing.asserts.assertExitCodes(proc_info)

    def test_no_node_printed_a_traceback(self, proc_output):
        for output in proc_output:
            self.assertNotIn('Traceback', output.text.decode(errors='replace'), output.process_name)
