# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""What the robot and replay launches start, worked out without ROS 2 `launch`.

Parameter files are layered, later ones winning: robot.yaml, the camera preset, the
odometry preset, the model preset, the base's safety file (base:=go1), then the launch's
own file; the launch arguments go on
top as per-node parameters. A preset that does not exist is an error naming those that do,
raised before any node starts. Kept apart from launching.py so that tests check it where
`launch` is not installed.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import yaml

from waymark_ros.launch_support.base_plan import NO_BASE, base_safety_file

# safety_node stands between navigator_node (cmd_vel_nav) and the base (cmd_vel); task_node
# runs tasks over reasoner_node's Ask and navigator_node's GoTo.
NODES = (
    'capture_node',
    'memory_node',
    'reasoner_node',
    'navigator_node',
    'safety_node',
    'task_node',
)
# Nodes whose exit ends the whole launch: with safety_node gone nothing limits or stops the
# commands, so the driver is stopped too (it lies the robot down as it exits).
REQUIRED = {'safety_node': 'safety_node exited: nothing would limit or stop the base'}
# Lifecycle nodes the launch brings up itself (autostart false; launching.managed_bring_up):
# it configures each, activates it once configured, and ends if either step fails.
MANAGED = ('memory_node', 'navigator_node')
MODEL_PRESETS = ('workstation', 'orin_nx')
NO_ODOMETRY = 'none'  # poses from the camera preset
# DDS defaults of a launch when the environment sets none: not the domain every other ROS
# user starts in, and no discovery beyond this machine (docs/security.md).
DEFAULT_DOMAIN_ID = '17'
DEFAULT_DISCOVERY_RANGE = 'LOCALHOST'
DISCOVERY_RANGES = ('LOCALHOST', 'SUBNET', 'OFF', 'SYSTEM_DEFAULT')
MAX_DOMAIN_ID = 101  # the highest ID that is safe on every OS (ROS 2 docs)
# An image_model argument that leaves the parameter files' model; an empty one turns the
# image view off, as an empty image_model parameter does.
FROM_PRESET = 'preset'


def parameter_files(config: Path, arguments: Mapping[str, str]) -> list[Path]:
    """The parameter files of every node, in the order they apply."""
    files = [config / 'robot.yaml', preset(config / 'sensors', arguments['camera'])]
    if arguments['odometry'] != NO_ODOMETRY:
        files.append(preset(config / 'sensors', arguments['odometry']))
    files.append(preset(config / 'models', arguments['models']))
    if (base_safety := base_safety_file(arguments)) is not None:
        files.append(base_safety)
    own = Path(arguments['params_file']).expanduser()
    if not own.is_file():
        raise ValueError(f'params_file {own} does not exist')
    if own.resolve() not in {path.resolve() for path in files}:
        files.append(own)
    return files


def preset(folder: Path, name: str) -> Path:
    path = folder / f'{name}.yaml'
    if not path.is_file():
        available = ', '.join(sorted(p.stem for p in folder.glob('*.yaml')))
        raise ValueError(f'no preset {name!r} in {folder}; available: {available}')
    return path


def dds_environment(arguments: Mapping[str, str]) -> dict[str, str]:
    """ROS_DOMAIN_ID and ROS_AUTOMATIC_DISCOVERY_RANGE of the nodes, checked."""
    domain, reach = arguments['ros_domain_id'].strip(), arguments['discovery_range'].strip()
    if not (domain.isascii() and domain.isdigit()) or int(domain) > MAX_DOMAIN_ID:
        raise ValueError(
            f'ros_domain_id must be an integer in [0, {MAX_DOMAIN_ID}], got {domain!r}'
        )
    if reach.upper() not in DISCOVERY_RANGES:
        raise ValueError(
            f'discovery_range must be one of {", ".join(DISCOVERY_RANGES)}, got {reach!r}'
        )
    return {'ROS_DOMAIN_ID': str(int(domain)), 'ROS_AUTOMATIC_DISCOVERY_RANGE': reach.upper()}


def sim_time(arguments: Mapping[str, str]) -> bool:
    """The use_sim_time argument: true (the nodes follow /clock, as a bag replayed with
    --clock publishes it) or false (wall time)."""
    text = arguments['use_sim_time'].strip().lower()
    if text not in ('true', 'false'):
        raise ValueError(f'use_sim_time must be true or false, got {arguments["use_sim_time"]!r}')
    return text == 'true'


def node_overrides(arguments: Mapping[str, str], use_sim_time: bool) -> dict[str, dict]:
    """Launch arguments as per-node parameters; an empty argument leaves the files' value,
    except image_model, where empty means off and `FROM_PRESET` leaves the files' value.
    The `MANAGED` nodes get `autostart` false: the launch drives their transitions.

    One OpenAI-compatible server (llm_base_url, llm_model) serves the agent, the verifier
    and the captioner.
    """
    base_url, model = arguments['llm_base_url'], arguments['llm_model']
    memory: dict[str, object] = {'captioner.base_url': base_url} if base_url else {}
    reasoner: dict[str, object] = {'llm.base_url': base_url} if base_url else {}
    if model:
        memory['captioner.model'] = reasoner['llm.model'] = model
    if arguments['memory_uri']:
        memory['uri'] = arguments['memory_uri']
    if arguments['image_model'] != FROM_PRESET:
        memory['image_model'] = arguments['image_model']
    overrides: dict[str, dict] = {
        'capture_node': robot_extrinsic(arguments),
        'memory_node': memory,
        'reasoner_node': reasoner,
        'navigator_node': {'backend': arguments['backend']},
        'safety_node': {},
        'task_node': {},
    }
    for name in MANAGED:
        overrides[name]['autostart'] = False
    for parameters in overrides.values():
        parameters['use_sim_time'] = use_sim_time
    return overrides


def robot_extrinsic(arguments: Mapping[str, str]) -> dict[str, object]:
    """On the robot (a base and a SLAM preset), capture_node reads the camera extrinsic from
    TF, where the robot description (launch_frames) puts the camera below the SLAM's body
    frame; replays and evaluations, with no live TF, keep the presets' numbers."""
    on_robot = arguments.get('base', NO_BASE) != NO_BASE
    if on_robot and arguments['odometry'] != NO_ODOMETRY:
        return {'extrinsic_source': 'tf'}
    return {}


def expected_parameters(
    config: Path, arguments: Mapping[str, str], use_sim_time: bool
) -> dict[str, dict[str, object]]:
    """Each node's parameters as the launch sets them (dotted names), files then overrides."""
    overrides = node_overrides(arguments, use_sim_time)
    expected: dict[str, dict[str, object]] = {}
    for node in NODES:
        values: dict[str, object] = {}
        for path in parameter_files(config, arguments):
            sections = yaml.safe_load(path.read_text()) or {}
            for key in ('/**', f'/**/{node}'):
                values |= _dotted(sections.get(key, {}).get('ros__parameters', {}))
        expected[node] = values | overrides[node]
    return expected


def _dotted(tree: Mapping[str, object], prefix: str = '') -> dict[str, object]:
    flat: dict[str, object] = {}
    for key, value in tree.items():
        if isinstance(value, Mapping):
            flat |= _dotted(value, f'{prefix}{key}.')
        else:
            flat[prefix + key] = value
    return flat
