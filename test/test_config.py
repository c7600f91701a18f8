# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The shipped parameter files (config/*.yaml and the sensor presets in config/sensors/):
every key is a parameter the node declares, and the node starts with it. ROS silently
ignores unknown keys, so a typo would otherwise go unseen. For the nodes whose parameters
are settings (waymark.parameters), each value is also checked against its setting's type,
range and choices, and each section made into the node's settings (their checks across
settings), without starting anything."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from rcl_interfaces.msg import ParameterType
from rcl_interfaces.srv import GetParameters

from waymark.settings import build, settings
from waymark_ros.tools.parameters_doc import NODES
from waymark_testing.ros_harness import wait_until

CONFIG = Path(__file__).resolve().parents[1] / 'config'


def flatten(tree: dict, prefix: str = '') -> dict[str, object]:
    flat = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            flat.update(flatten(value, f'{prefix}{key}.'))
        else:
            flat[prefix + key] = value
    return flat


SENSORS = sorted(f'sensors/{path.name}' for path in (CONFIG / 'sensors').glob('*.yaml'))
MODELS = sorted(f'models/{path.name}' for path in (CONFIG / 'models').glob('*.yaml'))
LAUNCH_CONFIGS = ['robot.yaml', 'replay.yaml', 'demo.yaml']
# Any namespace: a key without the wildcard would silently not apply under a namespace.
ANY_NAMESPACE = '/**/'


def test_the_sensor_presets_ship():
    expected = {'zed2i', 'realsense_d455', 'fast_lio_mid360', 'point_lio_mid360'}
    assert {Path(name).stem for name in SENSORS} >= expected


def test_the_model_presets_ship():
    assert {Path(name).stem for name in MODELS} >= {'orin_nx', 'workstation'}


@pytest.mark.parametrize('config', [*LAUNCH_CONFIGS, *SENSORS, *MODELS])
def test_every_section_applies_in_any_namespace(config):
    sections = yaml.safe_load((CONFIG / config).read_text())
    assert sections and all(key.startswith(ANY_NAMESPACE) for key in sections), sections.keys()


@pytest.mark.parametrize('config', [*LAUNCH_CONFIGS, *SENSORS, *MODELS])
def test_every_section_is_a_node_or_the_sensor_mounts(config):
    sections = yaml.safe_load((CONFIG / config).read_text())
    names = {key.removeprefix(ANY_NAMESPACE) for key in sections}
    assert names <= set(NODES) | {'robot_state_publisher'}, names - set(NODES)
    if 'robot_state_publisher' in names:  # only the mounts, read by waymark.frames
        mounts = sections[f'{ANY_NAMESPACE}robot_state_publisher']['ros__parameters']
        assert set(mounts) == {'mount'} and config.startswith('sensors/'), config


@pytest.mark.parametrize('config', [*LAUNCH_CONFIGS, *SENSORS, *MODELS])
def test_every_configured_value_fits_its_setting(config):
    sections = yaml.safe_load((CONFIG / config).read_text())
    problems = []
    for key, section in sections.items():
        name = key.removeprefix(ANY_NAMESPACE)
        if name not in NODES:
            continue
        declared = {info.name: info for info in settings(NODES[name])}
        values = flatten(section['ros__parameters'])
        for param, value in values.items():
            info = declared.get(param)
            problem = 'is not a parameter of the node' if info is None else info.problem(value)
            if problem:
                problems.append(f'{name} {param}={value!r} {problem}')
        if not problems:
            try:  # the checks that span settings, as the node makes its own
                build(NODES[name], values)
            except ValueError as error:
                problems.append(f'{name}: {error}')
    assert not problems, f'{config}: {problems}'


# Started here: the launch files' own configs. The sensor and model presets are started
# by the robot launch test (test_launch_testing.py), every one, with their parameters read
# back from the running nodes; here they are checked against the settings only.
@pytest.mark.dds
@pytest.mark.parametrize('config', LAUNCH_CONFIGS)
def test_every_configured_parameter_is_declared(ros, launch, tmp_path, config):
    path = CONFIG / config
    sections = yaml.safe_load(path.read_text())
    started = {}  # every node of the file starts at once; each is asked in turn
    for key, section in sections.items():
        name = key.removeprefix(ANY_NAMESPACE)
        if name not in NODES:
            continue  # the mounts (robot_state_publisher's section): test_frames.py
        overrides = {}
        if name == 'memory_node':
            # No model download in a test: the preset's model ids are checked as names only.
            overrides = {'data_dir': str(tmp_path / 'memory'), 'image_model': ''}
        if name == 'task_node':  # its ledger and places in the test's folder
            overrides = {'data_dir': str(tmp_path / 'tasks')}
        started[name] = (launch(name, params_file=path, **overrides), section)
    for name, (node, section) in started.items():
        expected = flatten(section['ros__parameters'])
        request = GetParameters.Request(names=list(expected))
        response = ros.call(
            GetParameters, f'/{name}/get_parameters', request, timeout_s=90, resend_after_s=10
        )
        undeclared = [
            param
            for param, value in zip(expected, response.values, strict=True)
            if value.type == ParameterType.PARAMETER_NOT_SET
        ]
        assert not undeclared, f'{config}: {name} does not declare {undeclared}'
        wait_until(node.running, 1, f'{name} exited with the {config} parameters')
