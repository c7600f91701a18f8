# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""robot.launch.py's `base` argument: the Go1 driver, wired to waymark, only when asked.

The driver (`unitree_ros`) is not installed here and cannot run without the robot, so its
node is checked as the launch describes it: launch_probe.py reads the LaunchDescription
the way `ros2 launch` would run it, without starting the driver, against a stand-in
package index that holds only an empty `unitree_driver` file. With the real index (no
driver), the launch itself runs and must refuse before any node starts.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from support import go1_driver

from waymark_ros.launch_support import base_plan, launch_plan

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / 'config'
ROBOT = ROOT / 'launch' / 'robot.launch.py'
PROBE = ROOT / 'test' / 'support' / 'launch_probe.py'
VENDOR = ROOT.parent / 'shared' / 'vendor' / 'ros2' / 'activate.sh'


def arguments(**given: str) -> dict[str, str]:
    values = {
        'base': base_plan.GO1,
        'go1_robot_ip': base_plan.FROM_FILE,
        'go1_params_file': str(CONFIG / base_plan.GO1_PARAMS),
    }
    return values | given


def go1_parameters() -> dict:
    sections = yaml.safe_load((CONFIG / base_plan.GO1_PARAMS).read_text())
    assert list(sections) == [f'/**/{base_plan.GO1_NODE}']
    return sections[f'/**/{base_plan.GO1_NODE}']['ros__parameters']


# -- the plan, without `launch` ------------------------------------------------------------


def test_none_starts_no_driver():
    assert base_plan.NO_BASE == 'none' and base_plan.NO_BASE in base_plan.BASES
    assert base_plan.base_driver(arguments(base='none')) is None


def test_the_go1_driver_is_the_unitree_ros_node_with_its_parameter_file():
    driver = base_plan.base_driver(arguments())
    assert (driver.package, driver.executable, driver.name) == (
        'unitree_ros',
        'unitree_driver',
        'unitree_ros_node',
    )
    assert driver.parameter_file == CONFIG / 'go1.yaml' and driver.overrides == {}
    wifi = base_plan.base_driver(arguments(go1_robot_ip=' 192.168.12.1 '))
    assert wifi.overrides == {'robot_ip': '192.168.12.1'}


@pytest.mark.parametrize(
    ('given', 'message'),
    [
        ({'base': 'go2'}, "base must be one of none, go1, got 'go2'"),
        ({'go1_robot_ip': '192.168.123'}, 'go1_robot_ip must be an IPv4 address'),
        ({'go1_robot_ip': 'go1.local'}, 'go1_robot_ip must be an IPv4 address'),
        ({'go1_params_file': '/nonexistent/go1.yaml'}, 'go1_params_file /nonexistent'),
    ],
)
def test_bad_base_arguments_are_refused_with_the_reason(given, message):
    with pytest.raises(ValueError, match=message):
        base_plan.base_driver(arguments(**given))


def fake_index(root: Path, executable: bool = True, mux: bool = True) -> Path:
    """A package index holding `unitree_ros` (and its executable, if asked) and twist_mux."""
    programs = {'unitree_ros': 'unitree_driver'} | ({'twist_mux': 'twist_mux'} if mux else {})
    for package, name in programs.items():
        marker = root / 'share' / 'ament_index' / 'resource_index' / 'packages' / package
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
        if executable:
            program = root / 'lib' / package / name
            program.parent.mkdir(parents=True)
            program.touch()
    return root


def test_a_missing_driver_is_refused_saying_how_to_get_it(tmp_path, monkeypatch):
    driver = base_plan.base_driver(arguments())
    monkeypatch.setenv('AMENT_PREFIX_PATH', str(tmp_path))
    with pytest.raises(base_plan.DriverMissingError) as error:
        base_plan.require_installed(driver)
    assert "package 'unitree_ros'" in str(error.value)
    assert 'docs/go1.md' in str(error.value) and 'base:=none' in str(error.value)
    monkeypatch.setenv('AMENT_PREFIX_PATH', str(fake_index(tmp_path / 'bare', executable=False)))
    with pytest.raises(base_plan.DriverMissingError, match="no executable 'unitree_driver'"):
        base_plan.require_installed(driver)
    monkeypatch.setenv('AMENT_PREFIX_PATH', str(fake_index(tmp_path / 'whole')))
    found = base_plan.require_installed(driver)
    assert found == tmp_path / 'whole' / 'lib' / 'unitree_ros' / 'unitree_driver'


def test_the_drivers_parameters_are_ones_it_declares():
    assert set(go1_parameters()) <= go1_driver.PARAMETERS


def test_the_driver_walks_at_waymarks_commands_and_keeps_its_odometry_apart():
    parameters = go1_parameters()
    assert parameters['robot_ip'] == '192.168.123.161' and parameters['robot_target_port'] == 8082
    # Relative names: a launch namespace moves them with the nodes'. The driver puts `ns`
    # in front of every topic, so it stays empty.
    assert parameters['ns'] == ''
    assert parameters['cmd_vel_topic_name'] == 'cmd_vel'  # the end of waymark's chain
    topics = [parameters[f'{kind}_topic_name'] for kind in ('odom', 'imu', 'bms_state')]
    assert all(not topic.startswith('/') and topic.startswith('go1/') for topic in topics)
    # The leg odometry never feeds the nodes' poses, which come from the SLAM.
    for camera in ('zed2i', 'realsense_d455'):
        plan = launch_plan.expected_parameters(
            CONFIG,
            {
                'camera': camera,
                'odometry': 'fast_lio_mid360',
                'models': 'orin_nx',
                'params_file': str(CONFIG / 'robot.yaml'),
                'memory_uri': '',
                'llm_base_url': '',
                'llm_model': '',
                'image_model': launch_plan.FROM_PRESET,
                'backend': 'internal',
            },
            use_sim_time=False,
        )
        read = {plan['capture_node']['pose_topic'], plan['navigator_node']['odom_topic']}
        assert not read & ({f'/{topic}' for topic in topics} | set(topics))
    # base_link hangs below the SLAM's body frame in the description: not the driver's
    assert parameters['odom_child_frame_id'] not in {'base_link', 'body', 'aft_mapped'}
    assert parameters['use_obstacle_avoidance'] is False


# -- the launch description (ROS 2 `launch`, installed or vendored) ------------------------


def probe(*words: str, env: dict[str, str] | None = None, timeout_s: float = 120) -> tuple:
    """(exit code, output) of launch_probe.py, with `launch` from ROS or the vendor folder."""
    run = [sys.executable, str(PROBE), *words]
    if importlib.util.find_spec('launch_ros') is None:
        if not VENDOR.is_file():
            pytest.skip(f'ROS 2 launch is neither installed nor vendored at {VENDOR}')
        run = ['bash', '-c', 'source "$1" >&2 || exit 1; shift; exec "$@"', 'probe', str(VENDOR)]
        run += [sys.executable, str(PROBE), *words]
    done = subprocess.run(
        run,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    return done.returncode, done.stdout, done.stderr


def described(*words: str, env: dict[str, str] | None = None) -> dict:
    code, out, err = probe(str(ROBOT), *words, env=env)
    assert code == 0, err
    return json.loads(out.strip().splitlines()[-1])


def test_the_default_launch_starts_no_driver():
    nodes = described()['nodes']
    assert {node['executable'] for node in nodes} == set(launch_plan.NODES)


def test_base_go1_without_the_driver_is_refused_before_any_node_starts(tmp_path):
    assert 'not installed here' in described('base:=go1')['error']
    # The launch itself, run as `ros2 launch` runs it: it ends at once with the reason.
    code, out, err = probe(
        '--run', str(ROBOT), 'base:=go1', 'image_model:=', env={'HOME': str(tmp_path)}
    )
    output = out + err
    assert code != 0, output
    assert "ROS 2 package 'unitree_ros', which is not installed here" in output
    assert 'process started' not in output


def test_base_go1_starts_the_driver_in_the_namespace_wired_to_the_stack(tmp_path):
    index = fake_index(tmp_path / 'index')
    env = {'AMENT_PREFIX_PATH': os.pathsep.join([str(index), os.environ['AMENT_PREFIX_PATH']])}
    nodes = described(
        'base:=go1',
        'namespace:=go1_a',
        'go1_robot_ip:=192.168.12.1',
        'ros_domain_id:=42',
        env=env,
    )['nodes']
    drivers = [node for node in nodes if node['package'] == 'unitree_ros']
    assert len(drivers) == 1, nodes
    driver = drivers[0]
    assert driver['executable'] == 'unitree_driver'
    assert driver['name'] == '/go1_a/unitree_ros_node' and driver['namespace'] == '/go1_a'
    # The file's values, with the launch's address on top; relative topics that the
    # namespace moves next to the nodes' own cmd_vel.
    assert driver['parameters'] == go1_parameters() | {'robot_ip': '192.168.12.1'}
    assert driver['remappings'] == []
    stack = {node['executable']: node for node in nodes if node['package'] == 'waymark_ros'}
    assert set(stack) == set(launch_plan.NODES)
    # One command path: twist_mux's output is safety_node's input, safety_node's the driver's.
    muxes = [node for node in nodes if node['package'] == base_plan.MUX_PACKAGE]
    assert len(muxes) == 1 and muxes[0]['namespace'] == '/go1_a'
    assert muxes[0]['remappings'] == [['cmd_vel_out', base_plan.MUX_OUTPUT]]
    assert muxes[0]['env'] == driver['env']
    safety = stack['safety_node']['parameters']
    assert safety['input_topic'] == base_plan.MUX_OUTPUT
    assert safety['output_topic'] == driver['parameters']['cmd_vel_topic_name']
    assert safety['limits.max_linear'] == 0.2  # the first walk's cap, from go1_safety.yaml
    # The launch ends when safety_node, the driver or the mux exits; not for the others.
    required = {node['executable'] for node in nodes if node['required']}
    assert required == {'safety_node', 'unitree_driver', 'twist_mux'}
    assert stack['navigator_node']['namespace'] == driver['namespace']
    # The same DDS domain and reach as the nodes.
    assert driver['env'] == stack['navigator_node']['env']
    assert driver['env']['ROS_DOMAIN_ID'] == '42'
    # On the robot the camera extrinsic comes from TF, below the SLAM's body frame.
    capture = stack['capture_node']['parameters']
    assert capture['extrinsic_source'] == 'tf'
    assert (capture['base_frame'], capture['camera_frame']) == ('body', 'zed_left_camera_frame')


def test_without_a_base_or_a_slam_the_extrinsic_stays_the_presets():
    given = {'base': base_plan.GO1, 'odometry': 'fast_lio_mid360'}
    assert launch_plan.robot_extrinsic(given) == {'extrinsic_source': 'tf'}
    assert launch_plan.robot_extrinsic(given | {'base': base_plan.NO_BASE}) == {}
    assert launch_plan.robot_extrinsic(given | {'odometry': launch_plan.NO_ODOMETRY}) == {}
    assert launch_plan.robot_extrinsic({'odometry': 'fast_lio_mid360'}) == {}  # replay


def test_base_go1_without_twist_mux_is_refused_before_any_node_starts(tmp_path):
    index = fake_index(tmp_path / 'index', mux=False)
    env = {'AMENT_PREFIX_PATH': os.pathsep.join([str(index), os.environ['AMENT_PREFIX_PATH']])}
    error = described('base:=go1', env=env)['error']
    assert "package 'twist_mux', which is not installed here" in error
    assert 'ros-$ROS_DISTRO-twist-mux' in error
