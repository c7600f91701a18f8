# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""config/twist_mux.yaml and config/go1_safety.yaml: one command path on the Go1, teleop and
waymark into twist_mux, its output into safety_node, safety_node's into the driver."""

from __future__ import annotations

from pathlib import Path

import yaml
from test_config import flatten

from waymark.parameters.safety import SafetyParameters
from waymark.settings import settings
from waymark_ros.launch_support import base_plan

CONFIG = Path(__file__).resolve().parents[1] / 'config'


def load(name: str) -> dict:
    return yaml.safe_load((CONFIG / name).read_text())


def mux() -> dict:
    return load(base_plan.MUX_PARAMS)['twist_mux']['ros__parameters']


def go1_safety() -> dict:
    return load(base_plan.GO1_SAFETY_PARAMS)['/**/safety_node']['ros__parameters']


def test_teleop_outranks_waymark_and_the_mux_holds_no_e_stop_of_its_own():
    topics = mux()['topics']
    assert topics['teleop']['priority'] > topics['waymark']['priority']
    assert all(0 <= t['priority'] <= 255 and t['timeout'] > 0 for t in topics.values())
    # safety_node holds the e-stop downstream; a mux lock would only silence the mux
    assert 'locks' not in mux()
    assert mux()['use_stamped'] is False  # waymark publishes geometry_msgs/Twist
    assert len({t['topic'] for t in topics.values()}) == len(topics)  # one input each


def test_the_path_runs_from_navigator_and_teleop_through_the_mux_and_safety_node_to_the_driver():
    robot = load('robot.yaml')
    navigator = robot['/**/navigator_node']['ros__parameters']
    driver = load(base_plan.GO1_PARAMS)[f'/**/{base_plan.GO1_NODE}']['ros__parameters']
    assert mux()['topics']['waymark']['topic'] == navigator['cmd_vel_topic']
    assert go1_safety()['input_topic'] == base_plan.MUX_OUTPUT
    assert go1_safety()['output_topic'] == driver['cmd_vel_topic_name']
    assert base_plan.MUX_OUTPUT not in {t['topic'] for t in mux()['topics'].values()}


def test_the_first_walk_cap_is_safety_nodes_hard_limit_in_the_file():
    declared = {info.name: info for info in settings(SafetyParameters)}
    values = flatten(go1_safety())
    for name, value in values.items():
        assert name in declared, name
        assert not declared[name].problem(value), (name, value)
    assert values['limits.max_linear'] <= 0.2 and values['limits.max_angular'] <= 0.5
    assert values['limits.max_linear'] < SafetyParameters().limits.max_linear
