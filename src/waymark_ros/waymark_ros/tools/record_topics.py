# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The topics to record on the robot for a camera and an odometry preset, or the whole
`ros2 bag record` command, worked out from the presets as the launch layers them.

    python -m waymark_ros.tools.record_topics --camera zed2i --odometry fast_lio_mid360
    ros2 bag record -s mcap -o go1_run $(python -m waymark_ros.tools.record_topics \\
        --camera zed2i --odometry fast_lio_mid360)

A recording holds what an evaluation and a replay read with those presets (capture_node's
image, CameraInfo, depth and pose; the navigator's pose and map), the frames (`/tf`,
`/tf_static`: the description, the SLAM's and the driver's), the raw MID-360 data the SLAM
was fed (`/livox/lidar`, `/livox/imu`: FAST-LIO or Point-LIO can be run again on them), and
the base's side (the Go1 driver's odometry, IMU and battery, the command that reached the
driver, the e-stop and safety_node's state). Base topics are relative, like the nodes':
`--namespace` puts them under the launch's namespace. safety_node's local-stop cloud is left
out: at the camera's rate it outweighs everything else, and nothing replays it.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from waymark.frames import read_mounts
from waymark.parameters.navigator import NavigatorParameters
from waymark_ros.launch_support.launch_plan import NO_ODOMETRY, expected_parameters, preset
from waymark_ros.launch_support.rviz_layout import launch_arguments

FRAMES = ('/tf', '/tf_static')
# livox_ros_driver2's topics with multi_topic 0 (src/lddc.cpp), what FAST-LIO and
# Point-LIO subscribe to (common.lid_topic, common.imu_topic).
LIDAR = ('/livox/lidar', '/livox/imu')
# Relative, as config/go1.yaml and the nodes name them.
BASE = ('go1/odom', 'go1/imu', 'go1/bms_state', 'cmd_vel', 'e_stop', 'safety/state')


def default_config() -> Path:
    """The source tree's config/ when run from it, else the installed share's."""
    here = Path(__file__).resolve().parents[4] / 'config'
    if (here / 'sensors').is_dir():
        return here
    from ament_index_python.packages import get_package_share_directory

    return Path(get_package_share_directory('waymark_ros')) / 'config'


def read_topics(config: Path, camera: str, odometry: str) -> list[str]:
    """What replay and evaluation read with these presets (capture and navigator inputs)."""
    nodes = expected_parameters(config, launch_arguments(config, camera, odometry), False)
    capture, navigator = nodes['capture_node'], nodes['navigator_node']
    topics = [capture['image_topic']]
    info = capture.get('camera_info_topic', 'auto')
    if info != 'auto':
        topics.append(info)
    if capture.get('depth_topic'):
        topics.append(capture['depth_topic'])
    topics += [capture['pose_topic'], navigator['odom_topic']]
    defaults = NavigatorParameters()
    map_source = navigator.get('map_source', defaults.map_source)
    grid = navigator.get('map_topic', defaults.map_topic)
    topics.append(
        navigator.get('cloud_topic', defaults.cloud_topic) if map_source != 'grid' else grid
    )
    return list(dict.fromkeys(str(t) for t in topics))


def record_topics(
    camera: str, odometry: str, namespace: str = '', config: Path | None = None
) -> list[str]:
    """Every topic to record, each once, absolute."""
    config = config or default_config()
    sensors = [preset(config / 'sensors', camera)]
    if odometry != NO_ODOMETRY:
        sensors.append(preset(config / 'sensors', odometry))
    topics = read_topics(config, camera, odometry) + list(FRAMES)
    if 'lidar' in read_mounts(sensors):
        topics += LIDAR
    prefix = '/' + namespace.strip('/') + '/' if namespace.strip('/') else '/'
    topics += [prefix + name for name in BASE]
    return list(dict.fromkeys(topics))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--camera', required=True, help='camera preset (config/sensors)')
    parser.add_argument(
        '--odometry', default='fast_lio_mid360', help=f'odometry preset, or {NO_ODOMETRY}'
    )
    parser.add_argument('--namespace', default='', help="the launch's namespace")
    parser.add_argument(
        '--command',
        metavar='BAG',
        help='print the whole `ros2 bag record` command (mcap) into folder BAG',
    )
    args = parser.parse_args(argv)
    try:
        topics = record_topics(args.camera, args.odometry, args.namespace)
    except ValueError as error:
        print(f'record_topics: {error}', file=sys.stderr)
        return 2
    if args.command:
        print(shlex.join(['ros2', 'bag', 'record', '-s', 'mcap', '-o', args.command, *topics]))
    else:
        print('\n'.join(topics))
    return 0


if __name__ == '__main__':
    sys.exit(main())
