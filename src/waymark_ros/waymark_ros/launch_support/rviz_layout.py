# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""RViz layouts that follow the sensor presets: fixed frame, robot pose, map cloud and
camera image as a launch with those presets configures the nodes.

rviz/waymark.rviz is the layout (the demo's, in the simulated world's `map` and `/odom`);
for a robot it is rewritten with the topics of the launch's parameter files. The robot and
replay launches write one for their own camera and odometry presets when they start RViz;
rviz/<preset>.rviz are the same for each preset on its own (PRESET_LAUNCHES), written by
`python -m waymark_ros.tools.rviz_configs` for running `rviz2 -d` by hand. Kept free of
ROS 2 `launch` so that tests check it anywhere.
"""

from __future__ import annotations

import copy
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from waymark.parameters.capture import CaptureParameters
from waymark.parameters.navigator import GRID, NavigatorParameters
from waymark_ros.launch_support.launch_plan import FROM_PRESET, NO_ODOMETRY, expected_parameters

# Each preset as the robot launch takes it (camera, odometry): a camera preset with the
# pose source it names (the ZED's own tracking; FAST-LIO for the RealSense, which has
# none), an odometry preset with the launch's default camera.
PRESET_LAUNCHES: dict[str, tuple[str, str]] = {
    'zed2i': ('zed2i', NO_ODOMETRY),
    'realsense_d455': ('realsense_d455', 'fast_lio_mid360'),
    'fast_lio_mid360': ('zed2i', 'fast_lio_mid360'),
    'point_lio_mid360': ('zed2i', 'point_lio_mid360'),
}
# pose_type -> the RViz display that draws it
POSE_DISPLAYS = {
    'odometry': 'rviz_default_plugins/Odometry',
    'pose_stamped': 'rviz_default_plugins/Pose',
    'pose_with_covariance': 'rviz_default_plugins/PoseWithCovariance',
}
# Names of the template's displays that follow the presets.
ROBOT, MAP, CAMERA = 'Robot and its recent trajectory', 'Map', 'Camera'
MAP_CLOUD, FRAMES = 'Map cloud', 'TF'


@dataclass(frozen=True)
class LayoutTopics:
    """What RViz shows of the robot's inputs: frames and topics, as the nodes read them."""

    fixed_frame: str
    pose_topic: str
    pose_type: str
    map_source: str
    map_topic: str
    cloud_topic: str
    map_latched: bool
    image_topic: str


def launch_arguments(config: Path, camera: str, odometry: str) -> dict[str, str]:
    """The robot launch's arguments for these presets, the others at their defaults."""
    return {
        'camera': camera,
        'odometry': odometry,
        'models': 'workstation',
        'params_file': str(config / 'robot.yaml'),
        'memory_uri': '',
        'llm_base_url': '',
        'llm_model': '',
        'image_model': FROM_PRESET,
        'backend': 'internal',
    }


def layout_topics(parameters: Mapping[str, Mapping[str, object]]) -> LayoutTopics:
    """From each node's parameters (launch_plan.expected_parameters): the navigator's
    frame, pose and map, capture_node's camera."""
    navigator, capture = parameters['navigator_node'], parameters['capture_node']
    nav, cap = NavigatorParameters(), CaptureParameters()
    return LayoutTopics(
        fixed_frame=str(navigator.get('map_frame', nav.map_frame)),
        pose_topic=str(navigator.get('odom_topic', nav.odom_topic)),
        pose_type=str(navigator.get('pose_type', nav.pose_type)),
        map_source=str(navigator.get('map_source', nav.map_source)),
        map_topic=str(navigator.get('map_topic', nav.map_topic)),
        cloud_topic=str(navigator.get('cloud_topic', nav.cloud_topic)),
        map_latched=bool(navigator.get('map_transient_local', nav.map_transient_local)),
        image_topic=str(capture.get('image_topic', cap.image_topic)),
    )


def launch_topics(config: Path, arguments: Mapping[str, str]) -> LayoutTopics:
    return layout_topics(expected_parameters(config, arguments, use_sim_time=False))


def render(template: Mapping, topics: LayoutTopics) -> dict:
    """The template layout with the robot's frame and topics, a map cloud display next to
    the map and a TF display (to check the camera's and the floor's frames)."""
    layout = copy.deepcopy(dict(template))
    manager = layout['Visualization Manager']
    manager['Global Options']['Fixed Frame'] = topics.fixed_frame
    durability = 'Transient Local' if topics.map_latched else 'Volatile'
    displays = []
    for display in manager['Displays']:
        name = display.get('Name')
        if name == ROBOT:
            display['Class'] = POSE_DISPLAYS[topics.pose_type]
            display['Topic']['Value'] = topics.pose_topic
        elif name == MAP:
            display['Enabled'] = topics.map_source == GRID
            display['Topic']['Value'] = topics.map_topic
            display['Topic']['Durability Policy'] = durability
            displays.append(display)
            display = {
                'Class': 'rviz_default_plugins/PointCloud2',
                'Name': MAP_CLOUD,
                'Enabled': topics.map_source != GRID,  # a map cloud or the scans
                'Topic': {
                    'Value': topics.cloud_topic,
                    'Durability Policy': durability,
                    'Reliability Policy': 'Reliable',
                },
                'Color Transformer': 'AxisColor',
                'Axis': 'Z',
                'Size (m)': 0.03,
                'Style': 'Points',
            }
        elif name == CAMERA:
            display['Enabled'] = True
            display['Topic']['Value'] = topics.image_topic
        displays.append(display)
    displays.append(
        {'Class': 'rviz_default_plugins/TF', 'Name': FRAMES, 'Enabled': True, 'Marker Scale': 0.3}
    )
    manager['Displays'] = displays
    return layout


def render_text(template_path: Path, topics: LayoutTopics, title: str) -> str:
    """The rendered layout as a file's text, headed by where it came from."""
    layout = render(yaml.safe_load(template_path.read_text()), topics)
    head = (
        f'# {title}: rviz/{template_path.name} with the frame and topics of these presets.\n'
        '# Written by `python -m waymark_ros.tools.rviz_configs`; edit the template.\n'
    )
    return head + yaml.safe_dump(layout, sort_keys=False)


def write_launch_layout(config: Path, arguments: Mapping[str, str], template: Path) -> Path:
    """The layout for a launch's presets (its arguments), in a file of its own for RViz."""
    title = f'camera:={arguments["camera"]} odometry:={arguments["odometry"]}'
    text = render_text(template, launch_topics(config, arguments), title)
    with tempfile.NamedTemporaryFile('w', prefix='waymark-', suffix='.rviz', delete=False) as f:
        f.write(text)
    return Path(f.name)
