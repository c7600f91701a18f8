# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""`waymark evaluate` with memory built over DDS: the bag is replayed through capture_node
and memory_node, exactly as on the robot, then scored like the direct build.

    python -m waymark_ros.tools.evaluate BAG QUESTIONS --mode dds [--rate 2] [--preset NAME]

capture_node gets the sensor presets' parameters, as on the robot, with the evaluation's
topics (the depth topic too, replayed when the bag has it), map frame and extrinsic on
top; sensor presets are found by name in this package's installed config/sensors.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path

import rclpy
from ament_index_python.packages import get_package_share_directory
from rclpy.executors import SingleThreadedExecutor

from waymark.evaluation.harness import SESSION, EvaluationConfig, resolve_sensors
from waymark.evaluation.harness import main as harness
from waymark.evaluation.ingest import summarize
from waymark_ros.tools.processes import start_node, stop_node
from waymark_ros.tools.replay import replay
from waymark_ros.tools.stack import StackClient, spin_until, wait_for_ingest

STARTUP_TIMEOUT_S = 120.0
INGEST_TIMEOUT_S = 3600.0
# capture_node places an image with the poses it has once the pose stream has been quiet
# for max_pose_wait_s (0.5 s on the robot). A replay's publisher can pause that long on a
# busy machine, and then an image would get a neighbour's pose or none: wait longer, so
# the memory built does not depend on the machine's load.
REPLAY_POSE_WAIT_S = 5.0
# A replay as fast as taken delivers one stream ahead of another by many messages; depth
# grids are small (a few hundred numbers), so keep enough that each image still finds its
# own however far the depth stream runs ahead.
REPLAY_DEPTH_BUFFER = 2000


def build_over_dds(config: EvaluationConfig, truth: dict | None, data: Path) -> dict:
    sensors = resolve_sensors(config, truth)
    extrinsic = sensors.extrinsic
    logs = config.out / 'logs'
    started = time.monotonic()
    nodes = [
        start_node(
            'memory_node',
            logs,
            {
                'data_dir': str(data),
                'text_model': config.text_model,
                'image_model': config.image_model,
                'ocr': config.ocr,
                'segments.window_s': float(config.segment_window_s),
                'map_frame': sensors.map_frame,
            },
        ),
        start_node(
            'capture_node',
            logs,
            {
                **sensors.parameters,
                'session': SESSION,
                'state_dir': str(data / 'capture'),  # a new build starts it over too
                'reliable_input': True,
                'image_topic': sensors.image_topic,
                'image_type': sensors.image_type,
                'pose_topic': sensors.pose_topic,
                'pose_type': sensors.pose_type,
                'depth_topic': sensors.depth_topic,
                'map_frame': sensors.map_frame,
                'extrinsic_source': 'parameter',
                'camera_extrinsic': [*extrinsic.position, *extrinsic.orientation],
                'max_pose_wait_s': max(
                    REPLAY_POSE_WAIT_S, float(sensors.parameters.get('max_pose_wait_s', 0.0))
                ),
                'depth.buffer_size': max(
                    REPLAY_DEPTH_BUFFER, int(sensors.parameters.get('depth.buffer_size', 0))
                ),
            },
        ),
    ]
    rclpy.init()
    client = StackClient('waymark_evaluate')
    executor = SingleThreadedExecutor()
    executor.add_node(client)
    try:
        ready = lambda: 'frames' in client.status['memory'] and client.status['capture']  # noqa: E731
        spin_until(executor, ready, STARTUP_TIMEOUT_S, 'memory_node and capture_node')
        topics = [sensors.image_topic, sensors.pose_topic]
        topics += [sensors.depth_topic] if sensors.depth_topic else []
        report = replay(client, config.bag, rate=config.rate, topics=topics)
        wait_for_ingest(executor, client, report.published[sensors.image_topic], INGEST_TIMEOUT_S)
        capture, memory = dict(client.status['capture']), dict(client.status['memory'])
    finally:
        for node in reversed(nodes):
            stop_node(node, timeout_s=120.0)  # memory_node finishes its queue and closes
        executor.shutdown()
        client.destroy_node()
        rclpy.try_shutdown()
    return {
        'mode': 'dds',
        'keyframes': capture.get('keyframes_published', 0),
        'ingested': memory.get('keyframes_ingested', 0),
        'seconds': time.monotonic() - started,
        'counts': {**capture, **{f'memory.{k}': v for k, v in memory.items()}},
        'topics': {
            'image': sensors.image_topic,
            'pose': sensors.pose_topic,
            'depth': sensors.depth_topic,
        },
        'all_acknowledged': report.all_acknowledged,
        'sensors': sensors.to_dict(),
        'ingest': summarize(capture),
    }


def main(argv: Sequence[str] | None = None) -> int:
    presets = Path(get_package_share_directory('waymark_ros')) / 'config' / 'sensors'
    return harness(argv, builders={'dds': build_over_dds}, preset_dir=presets)


if __name__ == '__main__':
    sys.exit(main())
