# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""navigator_node over real DDS: a point-cloud map whose frame starts at the sensor, half a
metre above the floor, as a LIO SLAM's does. A 0.3 m box on the floor between the robot and
its goal must be an obstacle: the band of obstacle heights is above the floor, placed by
cloud.map_origin_height_m or by the floor frame from TF."""

from __future__ import annotations

import importlib.util
import itertools

import numpy as np
import pytest
from nav_msgs.msg import Path

from waymark_interfaces.action import GoTo
from waymark_ros.ros import qos
from waymark_ros.ros.navigation_msgs import cloud_msg
from waymark_testing import fake_tf2_ros
from waymark_testing.actions import go_to as target
from waymark_testing.actions import result_of, send
from waymark_testing.navigation_worlds import START, SimulatedRobot, latched_map, start_navigator
from waymark_testing.ros_harness import wait_until

pytestmark = pytest.mark.dds

SENSOR_HEIGHT_M = 0.5
BOX = (3.6, 4.4, 1.4, 2.6)  # x0, x1, y0, y1: across the straight line from START to GOAL
GOAL = (5.5, 2.0)


@pytest.fixture
def robot(ros):
    simulated = SimulatedRobot(ros.node, *START)
    yield simulated
    simulated.stop()


def low_box_cloud(ros):
    """Floor (z = -0.5 in the sensor-origin frame) and a 0.3 m box standing on it."""
    xs, ys = np.meshgrid(np.arange(0.0, 6.0, 0.04), np.arange(0.0, 4.0, 0.04))
    floor = np.column_stack([xs.ravel(), ys.ravel(), np.full(xs.size, -SENSOR_HEIGHT_M)])
    x0, x1, y0, y1 = BOX
    bx, by, bz = np.meshgrid(
        np.arange(x0, x1, 0.03), np.arange(y0, y1, 0.03), np.arange(0.0, 0.31, 0.1)
    )
    box = np.column_stack([bx.ravel(), by.ravel(), bz.ravel() - SENSOR_HEIGHT_M])
    stamp = ros.node.get_clock().now().to_msg()
    return cloud_msg(np.concatenate([floor, box]), 'map', stamp)


def in_box(x: float, y: float) -> bool:
    x0, x1, y0, y1 = BOX
    return x0 <= x <= x1 and y0 <= y <= y1


def drive_past_the_box(ros, launch, robot, **parameters):
    cloud = low_box_cloud(ros)
    latched_map(ros, cloud, topic='/cloud_map', msg_type=type(cloud))
    plans = ros.collect(Path, 'plan', qos.latched())
    node, client = start_navigator(ros, launch, map_source='cloud', align_yaw=False, **parameters)
    wait_until(lambda: robot.odom.get_subscription_count() > 0, 30, 'no pose subscriber')
    result = result_of(send(client, target(*GOAL)), timeout=120)
    assert result.outcome == GoTo.Result.OUTCOME_REACHED, result.message
    waypoints = np.array([(p.pose.position.x, p.pose.position.y) for p in plans[-1].poses])
    along = [
        a + (b - a) * t for a, b in itertools.pairwise(waypoints) for t in np.linspace(0, 1, 50)
    ]
    assert not any(in_box(x, y) for x, y in along), 'planned through the box'
    assert not any(in_box(x, y) for x, y in robot.trail), 'walked into the box'
    return node


def test_a_low_box_under_a_sensor_origin_map_is_driven_around(ros, launch, robot):
    drive_past_the_box(ros, launch, robot, **{'cloud.map_origin_height_m': SENSOR_HEIGHT_M})


def test_the_floor_from_tf_places_the_band_as_the_parameter_does(
    ros, launch, robot, tmp_path, monkeypatch
):
    # base_footprint, on the floor under the robot, lies 0.5 m below the map origin.
    fake_tf2_ros.install(tmp_path, monkeypatch, 'map', 'base_footprint', (2.0, 2.0, -0.5))
    node = drive_past_the_box(
        ros, launch, robot, **{'cloud.floor_source': 'tf', 'cloud.map_origin_height_m': 0.0}
    )
    assert 'the map origin is 0.500 m above the floor' in node.log_tail()


def test_the_floor_from_tf_gives_up_after_its_timeout(launch, tmp_path, monkeypatch):
    fake_tf2_ros.install(tmp_path, monkeypatch, 'map', 'base_footprint', (0.0, 0.0, -0.5))
    node = launch(
        'navigator_node',
        map_source='cloud',
        **{'cloud.floor_source': 'tf', 'cloud.floor_frame': 'no_floor', 'cloud.tf_timeout_s': 1.0},
    )
    assert node.process.wait(timeout=30) == 2
    assert 'no transform map -> no_floor' in node.log_tail()


@pytest.mark.skipif(importlib.util.find_spec('tf2_ros') is not None, reason='tf2_ros installed')
def test_the_floor_from_tf_without_tf2_ros_stops_the_node_saying_so(launch):
    node = launch('navigator_node', map_source='cloud', **{'cloud.floor_source': 'tf'})
    assert node.process.wait(timeout=30) == 2
    assert "cloud.floor_source 'tf' needs the tf2_ros Python package" in node.log_tail()
