# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""navigator_node's nav2 backend over real DDS, against a scripted NavigateToPose server.

The test process plays Nav2 and the robot: a NavigateToPose server (the `nav2` fixture,
from the test-only nav2_msgs stand-in, built once per session) that drives a simulated pose
toward each goal and publishes it as odometry, and that can be told to succeed, abort, hang
or reject. The navigator must send only checked targets, pass on Nav2's feedback and
errors, and cancel the Nav2 goal whenever its own goal is preempted or timed out.
Refusals, cancel and stale map epochs, alike for every backend, are tested in
test_navigation_backends.py.
"""

from __future__ import annotations

import math
import subprocess
import sys
import time

import numpy as np
import pytest
from rclpy.action import ActionClient

from waymark.geometry import quaternion_from_yaw
from waymark_interfaces.action import GoTo
from waymark_testing.actions import connect, result_of, send
from waymark_testing.actions import go_to as target
from waymark_testing.navigation_worlds import (
    ABORT,
    HANG,
    NAV2_DETOUR_M,
    NAV2_ERROR_MSG,
    REJECT,
    START,
    SUCCEED,
    grid_msg,
    latched_map,
    room,
)
from waymark_testing.ros_harness import wait_until

pytestmark = pytest.mark.dds


def start_navigator(ros, launch, nav2, **parameters) -> ActionClient:
    latched_map(ros, grid_msg(room()))
    settings = {
        'backend': 'nav2',
        'reliable_input': True,
        'robot_radius_m': 0.3,
        'snap_radius_m': 0.5,
        'goal_timeout_s': 60.0,
        **parameters,
    }
    launch('navigator_node', **settings)
    with ros.paused() as node:
        client = ActionClient(node, GoTo, 'go_to')
    connect(client)
    wait_until(lambda: nav2.odom.get_subscription_count() > 0, 30, 'no pose subscriber')
    return client


def test_nav2_gets_the_checked_target_and_its_feedback_and_success_are_passed_on(ros, launch, nav2):
    client = start_navigator(ros, launch, nav2)
    distances: list[float] = []
    handle = send(
        client,
        target(4.8, 2.0, yaw=math.pi / 2),  # 0.15 m from the wall's face: moved out
        lambda fb: distances.append(fb.feedback.distance_remaining),
    )
    result = result_of(handle)
    assert result.outcome == GoTo.Result.OUTCOME_REACHED, result.message
    assert 'moved' in result.message
    [goal] = nav2.goals
    sent = goal.pose
    assert sent.header.frame_id == 'map'
    assert sent.header.stamp.sec > 0
    assert sent.pose.position.x < 4.95 - 0.3 and abs(sent.pose.position.y - 2.0) < 0.1
    q = sent.pose.orientation
    assert np.allclose((q.x, q.y, q.z, q.w), quaternion_from_yaw(math.pi / 2))
    # GoTo's feedback is Nav2's path length left, not the straight line to the target.
    goal_xy = (sent.pose.position.x, sent.pose.position.y)
    assert len(distances) >= 3
    assert distances[0] > math.dist(START, goal_xy) + NAV2_DETOUR_M / 2
    assert all(any(abs(d - s) < 1e-3 for s in nav2.sent) for d in distances)
    final = result.final_pose.pose.position
    assert math.dist((final.x, final.y), goal_xy) < 0.05
    assert nav2.ended == ['succeeded']


def test_a_nav2_abort_fails_the_goal_with_nav2s_error(ros, launch, nav2):
    nav2.mode = ABORT
    client = start_navigator(ros, launch, nav2)
    result = result_of(send(client, target(3.5, 2.0)))
    assert result.outcome == GoTo.Result.OUTCOME_FAILED
    code = nav2.action_type.Result.TF_ERROR
    assert f'error {code}' in result.message and NAV2_ERROR_MSG in result.message, result.message
    assert nav2.ended == ['aborted']


def test_a_newer_goal_preempts_and_cancels_the_nav2_goal_before_it(ros, launch, nav2):
    nav2.mode = HANG
    client = start_navigator(ros, launch, nav2)
    first = send(client, target(3.5, 2.0))
    wait_until(lambda: nav2.sent, 10, 'Nav2 never got the first goal')
    second = send(client, target(3.0, 3.0))
    old = result_of(first)
    assert old.outcome == GoTo.Result.OUTCOME_FAILED and 'preempted' in old.message
    wait_until(lambda: len(nav2.goals) == 2, 10, 'Nav2 never got the second goal')
    assert nav2.cancels == nav2.accepted[:1]
    nav2.mode = SUCCEED
    new = result_of(second)
    assert new.outcome == GoTo.Result.OUTCOME_REACHED, new.message
    assert nav2.ended == ['canceled', 'succeeded']


def test_a_goal_nav2_does_not_finish_in_time_is_cancelled_and_fails(ros, launch, nav2):
    nav2.mode = HANG
    client = start_navigator(ros, launch, nav2, goal_timeout_s=2.0)
    result = result_of(send(client, target(3.5, 2.0)))
    assert result.outcome == GoTo.Result.OUTCOME_FAILED
    assert 'did not arrive within 2 s' in result.message
    assert nav2.cancels == nav2.accepted and nav2.ended == ['canceled']


def test_no_nav2_server_fails_clearly_within_the_wait(ros, launch, nav2):
    client = start_navigator(
        ros,
        launch,
        nav2,
        **{'nav2.action_name': 'absent/navigate_to_pose', 'nav2.server_wait_s': 1.0},
    )
    started = time.monotonic()
    result = result_of(send(client, target(3.5, 2.0)))
    took = time.monotonic() - started
    assert result.outcome == GoTo.Result.OUTCOME_FAILED
    assert 'Nav2 action server not available' in result.message
    assert 'absent/navigate_to_pose' in result.message
    assert 0.9 < took < 6.0


def test_a_goal_nav2_rejects_fails_with_the_reason(ros, launch, nav2):
    nav2.mode = REJECT
    client = start_navigator(ros, launch, nav2)
    result = result_of(send(client, target(3.5, 2.0)))
    assert result.outcome == GoTo.Result.OUTCOME_FAILED
    assert 'Nav2 rejected the goal' in result.message
    assert len(nav2.goals) == 1


def test_backend_nav2_without_nav2_msgs_refuses_to_start(launch):
    found = subprocess.run([sys.executable, '-c', 'import nav2_msgs'], capture_output=True)
    if found.returncode == 0:
        pytest.skip('a nav2_msgs is installed here')
    node = launch('navigator_node', backend='nav2')
    node.process.wait(timeout=30)
    assert node.process.returncode == 2, node.log_tail()
    assert 'backend nav2 needs nav2_msgs (install ros-' in node.log_tail()
