# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""One RViz layout per sensor preset: each rviz/<preset>.rviz shows the preset's frame,
pose, map cloud and camera topics, as the preset's YAML names them, and is what the
generator writes from rviz/waymark.rviz today (so a renamed topic fails here)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from waymark_ros.launch_support.rviz_layout import (
    CAMERA,
    MAP_CLOUD,
    POSE_DISPLAYS,
    PRESET_LAUNCHES,
    ROBOT,
    launch_arguments,
    launch_topics,
    write_launch_layout,
)
from waymark_ros.tools.rviz_configs import preset_layouts

ROOT = Path(__file__).resolve().parents[1]
SENSORS = ROOT / 'config' / 'sensors'


def section(preset: str, node: str) -> dict:
    sections = yaml.safe_load((SENSORS / f'{preset}.yaml').read_text())
    return sections.get(f'/**/{node}', {}).get('ros__parameters', {})


def displays(preset: str) -> tuple[str, dict[str, dict]]:
    layout = yaml.safe_load((ROOT / 'rviz' / f'{preset}.rviz').read_text())
    manager = layout['Visualization Manager']
    return manager['Global Options']['Fixed Frame'], {d['Name']: d for d in manager['Displays']}


def test_every_sensor_preset_has_a_layout():
    assert set(PRESET_LAUNCHES) == {p.stem for p in SENSORS.glob('*.yaml')}
    assert all((ROOT / 'rviz' / f'{preset}.rviz').is_file() for preset in PRESET_LAUNCHES)


def test_the_layouts_are_up_to_date_with_the_template_and_presets():
    for path, text in preset_layouts(ROOT).items():
        assert path.read_text() == text, (
            f'{path.name} is stale: python -m waymark_ros.tools.rviz_configs'
        )


@pytest.mark.parametrize('preset', sorted(PRESET_LAUNCHES))
def test_a_layout_shows_the_frame_and_topics_its_preset_names(preset):
    capture, navigator = section(preset, 'capture_node'), section(preset, 'navigator_node')
    camera = section(PRESET_LAUNCHES[preset][0], 'capture_node')
    fixed_frame, shown = displays(preset)
    assert fixed_frame == navigator.get('map_frame', capture.get('map_frame'))
    pose_topic = navigator.get('odom_topic', capture.get('pose_topic'))
    pose_type = navigator.get('pose_type', capture.get('pose_type'))
    assert shown[ROBOT]['Topic']['Value'] == pose_topic
    assert shown[ROBOT]['Class'] == POSE_DISPLAYS[pose_type]
    assert shown[CAMERA]['Topic']['Value'] == capture.get('image_topic', camera['image_topic'])
    assert shown[CAMERA]['Enabled']
    if 'cloud_topic' in navigator:
        assert shown[MAP_CLOUD]['Topic']['Value'] == navigator['cloud_topic']
        assert shown[MAP_CLOUD]['Enabled'] and not shown['Map']['Enabled']
        latched = navigator.get('map_transient_local', True)
        durability = shown[MAP_CLOUD]['Topic']['Durability Policy']
        assert durability == ('Transient Local' if latched else 'Volatile')
    assert shown['TF']['Enabled']


def test_a_launch_with_two_presets_shows_the_cameras_image_and_the_odometrys_pose():
    config = ROOT / 'config'
    topics = launch_topics(config, launch_arguments(config, 'realsense_d455', 'point_lio_mid360'))
    assert topics.image_topic == section('realsense_d455', 'capture_node')['image_topic']
    assert topics.pose_topic == section('point_lio_mid360', 'navigator_node')['odom_topic']
    assert topics.fixed_frame == 'camera_init' and topics.cloud_topic == '/cloud_registered'


def test_a_launch_writes_the_layout_of_its_own_presets():
    config = ROOT / 'config'
    arguments = launch_arguments(config, 'zed2i', 'point_lio_mid360')
    path = write_launch_layout(config, arguments, ROOT / 'rviz' / 'waymark.rviz')
    try:
        assert path.read_text() == (ROOT / 'rviz' / 'point_lio_mid360.rviz').read_text()
    finally:
        path.unlink()
