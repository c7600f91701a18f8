# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""navigator_node's point-cloud inputs over real DDS: a cloud too large is refused from its
header and the map in use stays; registered scans build the map a goal is driven on."""

from __future__ import annotations

import math

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import PoseStamped
from sensor_msgs.msg import PointCloud2, PointField
from std_msgs.msg import Header

from waymark_interfaces.action import GoTo
from waymark_ros.ros import qos
from waymark_ros.ros.navigation_msgs import cloud_msg
from waymark_testing.actions import go_to as target
from waymark_testing.actions import result_of, send
from waymark_testing.navigation_worlds import (
    BEHIND_WALL,
    START,
    SimulatedRobot,
    latched_map,
    start_navigator,
)
from waymark_testing.ros_harness import wait_until

pytestmark = pytest.mark.dds

HUGE_POINTS = 50_000_000


def map_status(diagnostics: list) -> DiagnosticStatus | None:
    for array in reversed(diagnostics):
        for status in array.status:
            if status.name.endswith(': map'):
                return status
    return None


def map_values(diagnostics: list) -> dict[str, str]:
    status = map_status(diagnostics)
    return {v.key: v.value for v in status.values} if status is not None else {}


def huge_cloud_header(stamp) -> PointCloud2:
    """A PointCloud2 that says it holds 50 million x, y, z points (600 MB of data) but
    carries none: only its header can be read, which is all the size check may read."""
    fields = [
        PointField(name=name, offset=4 * i, datatype=PointField.FLOAT32, count=1)
        for i, name in enumerate('xyz')
    ]
    return PointCloud2(
        header=Header(frame_id='map', stamp=stamp),
        height=1,
        width=HUGE_POINTS,
        fields=fields,
        point_step=12,
        row_step=12 * HUGE_POINTS,
    )


def test_a_cloud_of_50_million_points_is_refused_from_its_header_and_the_map_stays(ros, launch):
    robot = SimulatedRobot(ros.node, *START, takes_goal_pose=True)
    try:
        xs, ys = np.meshgrid(np.arange(0.0, 6.0, 0.04), np.arange(0.0, 4.0, 0.04))
        ground = np.column_stack([xs.ravel(), ys.ravel(), np.zeros(xs.size)])
        stamp = ros.node.get_clock().now().to_msg()
        cloud = cloud_msg(ground, 'map', stamp)
        publisher = latched_map(ros, cloud, topic='/cloud_map', msg_type=PointCloud2)
        diagnostics = ros.collect(DiagnosticArray, '/diagnostics', 100)
        goals = ros.collect(PoseStamped, 'goal_pose')
        node, client = start_navigator(ros, launch, map_source='cloud', backend='goal_topic')
        wait_until(lambda: map_values(diagnostics).get('map_version') == '1', 60, 'no map')

        publisher.publish(huge_cloud_header(stamp))
        wait_until(lambda: map_values(diagnostics).get('clouds_refused') == '1', 30, 'not refused')
        status = map_status(diagnostics)
        assert status.level == DiagnosticStatus.WARN
        assert f'1 x {HUGE_POINTS}' in status.message or f'{HUGE_POINTS} x 1' in status.message
        assert map_values(diagnostics)['map_version'] == '1'  # the map in use stays
        wait_until(lambda: 'max_cloud_points' in node.log_tail(40), 10, 'no log line')
        assert f'{HUGE_POINTS} points' in node.log_tail(40)

        # Alive, and still driving on the map it had.
        handle = send(client, target(4.0, 3.0))
        wait_until(lambda: goals, 30, 'goal not forwarded after the refusal')
        wait_until(handle.cancel_goal_async().done, 10, 'cancel not answered')
        result_of(handle)
        assert node.process.poll() is None
    finally:
        robot.stop()


def room_scan(x: float, y: float) -> np.ndarray:
    """What a registered scan of the test room holds, seen from (x, y): its floor within
    8 m, and its walls (the one across at x = 5 m from y = 0 to 4 m included) 0.2-0.6 m
    up; in the map frame, heights from the floor (the map frame is on it)."""
    xs, ys = np.meshgrid(np.arange(0.05, 10.0, 0.1), np.arange(0.05, 6.0, 0.1))
    floor = np.column_stack([xs.ravel(), ys.ravel(), np.zeros(xs.size)])
    floor = floor[np.hypot(floor[:, 0] - x, floor[:, 1] - y) < 8.0]
    t = np.arange(0.0, 1.0, 0.005)
    walls = [
        np.column_stack([10.0 * t, 0.02 + 0 * t]),
        np.column_stack([10.0 * t, 5.98 + 0 * t]),
        np.column_stack([0.02 + 0 * t, 6.0 * t]),
        np.column_stack([9.98 + 0 * t, 6.0 * t]),
        np.column_stack([5.0 + 0 * t, 4.0 * t]),
    ]
    wall = np.concatenate(walls)
    layers = [np.column_stack([wall, np.full(len(wall), z)]) for z in (0.2, 0.4, 0.6)]
    return np.concatenate([floor, *layers])


def test_registered_scans_build_the_map_a_goal_behind_a_wall_is_driven_on(ros, launch):
    robot = SimulatedRobot(ros.node, *START)
    scans = ros.node.create_publisher(PointCloud2, '/scans', qos.state_input(True, 2))

    def publish_scan() -> None:
        x, y = robot.body.x, robot.body.y
        stamp = ros.node.get_clock().now().to_msg()
        scans.publish(cloud_msg(room_scan(x, y), 'map', stamp))

    timer = ros.node.create_timer(0.1, publish_scan)
    try:
        diagnostics = ros.collect(DiagnosticArray, '/diagnostics', 100)
        _, client = start_navigator(
            ros, launch, map_source='scans', cloud_topic='/scans', align_yaw=False
        )
        # Three scans free a cell: the first maps have none to start from.
        wait_until(
            lambda: int(map_values(diagnostics).get('traversable_cells', '0')) > 1000,
            60,
            'no free floor mapped',
        )
        result = result_of(send(client, target(*BEHIND_WALL)), timeout=120)
        assert result.outcome == GoTo.Result.OUTCOME_REACHED, result.message
        for x, y in robot.trail:  # around the wall, never through it
            assert not (4.8 <= x <= 5.2 and y <= 4.0), f'drove through the wall at {(x, y)}'
        assert int(map_values(diagnostics)['scans_integrated']) > 10
        assert math.dist(robot.trail[-1], BEHIND_WALL) < 0.5
    finally:
        ros.node.destroy_timer(timer)
        robot.stop()
