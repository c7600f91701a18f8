# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""navigator_node over real DDS: refuses bad targets, forwards good ones, tracks arrival."""

from __future__ import annotations

import math

import pytest
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import Odometry
from rclpy.action import ActionClient
from support.ros_harness import wait_until

from waymark_interfaces.action import GoTo
from waymark_ros import qos

pytestmark = pytest.mark.dds


def target(x: float, y: float, frame='map') -> GoTo.Goal:
    goal = GoTo.Goal()
    goal.target.header.frame_id = frame
    goal.target.pose.position.x, goal.target.pose.position.y = x, y
    goal.target.pose.orientation.w = 1.0
    return goal


@pytest.fixture
def navigator(ros, launch):
    launch('navigator_node', reliable_input=True, goal_tolerance_m=0.3, goal_timeout_s=20.0)
    client = ActionClient(ros.node, GoTo, 'go_to')
    assert client.wait_for_server(timeout_sec=30)
    odom = ros.node.create_publisher(Odometry, '/odom', qos.sensor_input(True, 10))
    wait_until(lambda: odom.get_subscription_count() > 0, 60, 'navigator not subscribed to /odom')
    return client, odom


def send(client, goal, feedback=None):
    future = client.send_goal_async(goal, feedback_callback=feedback)
    wait_until(future.done, 10, 'goal not answered')
    return future.result()


def result_of(handle, timeout=30):
    future = handle.get_result_async()
    wait_until(future.done, timeout, 'no result')
    return future.result().result


@pytest.mark.parametrize(
    ('goal', 'reason'),
    [(target(1, 1, frame='odom'), 'not the map frame'), (target(math.nan, 1), 'non-finite')],
)
def test_refuses_targets_it_must_not_send(ros, navigator, goal, reason):
    client, _ = navigator
    goals = ros.collect(PoseStamped, 'goal_pose')
    result = result_of(send(client, goal))
    assert result.outcome == GoTo.Result.OUTCOME_REFUSED
    assert reason in result.message
    assert goals == []


def test_forwards_the_goal_and_reports_arrival_from_odometry(ros, navigator):
    client, odom = navigator
    goals = ros.collect(PoseStamped, 'goal_pose')
    distances = []
    handle = send(
        client, target(2.0, 0.0), lambda fb: distances.append(fb.feedback.distance_remaining)
    )
    assert handle.accepted
    wait_until(lambda: len(goals) == 1, 10, 'goal not forwarded on goal_pose')
    for x in (0.0, 0.5, 1.0, 1.5, 1.9):
        msg = Odometry()
        msg.header.frame_id = 'map'
        msg.pose.pose.position.x = x
        msg.pose.pose.orientation.w = 1.0
        odom.publish(msg)
        wait_until(lambda x=x: distances and distances[-1] <= 2.0 - x + 1e-6, 10, 'no feedback')
    result = result_of(handle)
    assert result.outcome == GoTo.Result.OUTCOME_REACHED
    assert result.final_pose.pose.position.x == pytest.approx(1.9)
    assert distances[0] == pytest.approx(2.0)


def test_a_goal_can_be_cancelled(ros, navigator):
    client, _ = navigator
    handle = send(client, target(5.0, 5.0))
    cancel = handle.cancel_goal_async()
    wait_until(cancel.done, 10, 'cancel not answered')
    assert result_of(handle).outcome == GoTo.Result.OUTCOME_CANCELED
