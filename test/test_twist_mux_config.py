# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""config/twist_mux.yaml: teleop wins over waymark, the e-stop locks both, and the topics
are waymark's own (safety_node's output, the e-stop the nodes listen to)."""

from __future__ import annotations

from pathlib import Path

import yaml
from test_config import flatten

from waymark.parameters.safety import SafetyParameters
from waymark.settings import settings

CONFIG = Path(__file__).resolve().parents[1] / 'config'


def load(name: str) -> dict:
    return yaml.safe_load((CONFIG / name).read_text())


def test_teleop_outranks_waymark_and_the_e_stop_outranks_both():
    mux = load('twist_mux.yaml')['twist_mux']['ros__parameters']
    topics, locks = mux['topics'], mux['locks']
    assert topics['joystick']['priority'] > topics['waymark']['priority']
    assert all(0 <= t['priority'] <= 255 and t['timeout'] > 0 for t in topics.values())
    assert locks['e_stop']['priority'] > max(t['priority'] for t in topics.values())
    assert locks['e_stop']['timeout'] == 0.0  # latched: no heartbeat expected
    assert mux['use_stamped'] is False  # waymark publishes geometry_msgs/Twist


def test_the_mux_takes_safety_nodes_output_and_waymarks_e_stop():
    config = load('twist_mux.yaml')
    mux = config['twist_mux']['ros__parameters']
    safety = config['/**/safety_node']['ros__parameters']
    robot = load('robot.yaml')
    robot_safety = robot['/**/safety_node']['ros__parameters']
    robot_navigator = robot['/**/navigator_node']['ros__parameters']
    assert mux['topics']['waymark']['topic'] == safety['output_topic']
    assert safety['output_topic'] != robot_safety['input_topic']
    assert robot_safety['input_topic'] == robot_navigator['cmd_vel_topic']
    assert mux['locks']['e_stop']['topic'] == robot_safety['e_stop_topic']
    assert robot_navigator['e_stop_topic'] == robot_safety['e_stop_topic']
    topics = {t['topic'] for t in mux['topics'].values()}
    assert len(topics) == len(mux['topics'])  # one input each


def test_its_safety_node_section_holds_only_valid_settings():
    declared = {info.name: info for info in settings(SafetyParameters)}
    section = load('twist_mux.yaml')['/**/safety_node']['ros__parameters']
    for name, value in flatten(section).items():
        assert name in declared, name
        assert not declared[name].problem(value), (name, value)
