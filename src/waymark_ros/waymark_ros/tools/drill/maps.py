# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The map drill: a point-cloud map message of 50 million points (about 600 MB, what an
accumulated `/Laser_map` grows to) reaches navigator_node while it drives on a small map.

It passes when the navigator refuses the message with one log line naming its size and
`cloud.max_cloud_points`, counts it in /diagnostics, keeps the map it had, stays alive,
and drives a goal to REACHED afterwards. The message is real: every point is sent, so the
navigator pays for receiving it, which the drill reports (its RSS before and after).
"""

from __future__ import annotations

import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from sensor_msgs.msg import PointCloud2, PointField

from waymark_ros.ros import qos
from waymark_ros.ros.navigation_msgs import cloud_msg
from waymark_ros.tools.drill.drills import Settings, finish
from waymark_ros.tools.drill.driving import (
    HALL_M,
    SIM_BASE_HZ,
    START,
    Odometer,
    probe_short_goal,
    released_driver,
)
from waymark_ros.tools.drill.report import DrillResult
from waymark_ros.tools.drill.stack import Stack, wait_until

HUGE_POINTS = 50_000_000
CLOUD_TOPIC = '/cloud_map'
REFUSAL_WAIT_S = 300.0  # 600 MB through DDS on a loaded machine takes a while
STATUS = 'navigator_node: map'


def hall_cloud(stamp) -> PointCloud2:
    """The hall as a LIO map holds it: its floor, and its walls 0.2-0.6 m up."""
    # Two points a cell (the navigator's 0.05 m): no floor cell is left unseen (unknown).
    step = 0.025
    xs, ys = np.meshgrid(np.arange(0.0, HALL_M[0], step), np.arange(0.0, HALL_M[1], step))
    floor = np.column_stack([xs.ravel(), ys.ravel(), np.zeros(xs.size)])
    edge = (xs < 0.1) | (ys < 0.1) | (xs > HALL_M[0] - 0.1) | (ys > HALL_M[1] - 0.1)
    walls = np.column_stack([xs[edge], ys[edge], np.full(int(edge.sum()), 0.4)])
    return cloud_msg(np.vstack([floor, walls]), 'map', stamp)


def huge_cloud(stamp) -> PointCloud2:
    """50 million float32 points, all of them sent."""
    msg = PointCloud2()
    msg.header.frame_id, msg.header.stamp = 'map', stamp
    msg.height, msg.width = 1, HUGE_POINTS
    msg.fields = [
        PointField(name=name, offset=4 * i, datatype=PointField.FLOAT32, count=1)
        for i, name in enumerate('xyz')
    ]
    msg.point_step, msg.is_dense = 12, True
    msg.row_step = msg.point_step * HUGE_POINTS
    msg.data = np.zeros(HUGE_POINTS * 3, dtype=np.float32).tobytes()
    return msg


def map_values(arrays: list) -> dict[str, str]:
    for array in reversed(arrays):
        for status in array.status:
            if status.name == STATUS:
                return {kv.key: kv.value for kv in status.values}
    return {}


def huge_map_drill(stack: Stack, settings: Settings) -> DrillResult:
    result = DrillResult(f'map message of {HUGE_POINTS // 1_000_000}M points')
    diagnostics: list = []
    stack.node.create_subscription(DiagnosticArray, '/diagnostics', diagnostics.append, 100)
    maps = stack.node.create_publisher(PointCloud2, CLOUD_TOPIC, qos.latched())
    maps.publish(hall_cloud(stack.node.get_clock().now().to_msg()))
    odometer = Odometer(stack)
    driver = released_driver(settings)
    stack.start('sim_base_node', initial_pose=[*START, 0.0], rate_hz=SIM_BASE_HZ, **driver)
    stack.start('safety_node')
    navigator = stack.start('navigator_node', map_source='cloud', cloud_topic=CLOUD_TOPIC)
    wait_until(odometer.latest, 60.0, "sim_base's odometry")
    stack.wait_ready('navigator_node')
    # map_version is '0' until a map is installed: wait for the hall's own version.
    wait_until(
        lambda: map_values(diagnostics).get('map_version', '0') != '0', 60.0, 'the hall as a map'
    )
    version = map_values(diagnostics)['map_version']
    before_kb, _ = stack.memory_kb('navigator_node')

    result.injected += 1
    result.requests += 1
    sent = time.monotonic()
    maps.publish(huge_cloud(stack.node.get_clock().now().to_msg()))
    try:
        wait_until(
            lambda: map_values(diagnostics).get('clouds_refused') == '1',
            REFUSAL_WAIT_S,
            'the refusal in /diagnostics',
        )
    except TimeoutError as error:
        result.wrong += 1
        result.note(str(error))
    else:
        result.answered += 1
        result.note(f'refused {time.monotonic() - sent:.1f} s after it was sent')
    lines = [line for line in navigator.log_tail(200).splitlines() if 'max_cloud_points' in line]
    if len(lines) != 1:
        result.wrong += 1
    result.note(f'log lines naming max_cloud_points: {len(lines)}')
    if lines:
        result.note(lines[0].split(']: ', 1)[-1][:160])
    after_kb, peak_kb = stack.memory_kb('navigator_node')
    result.note(
        f'navigator RSS {before_kb / 1024:.0f} MB before, {after_kb / 1024:.0f} MB after '
        f'(peak {peak_kb / 1024:.0f} MB: the message as received)'
    )
    if map_values(diagnostics).get('map_version') != version:
        result.wrong += 1
        result.note('the map in use changed')
    probe_short_goal(result, stack, odometer, 'after the refusal')
    finish(stack, result)
    return result
