# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Action-client steps shared by the navigator's DDS tests."""

from __future__ import annotations

import time
import weakref

from waymark.geometry import quaternion_from_yaw
from waymark_interfaces.action import GoTo
from waymark_ros.ros.action_goal import send_goal
from waymark_testing.ros_harness import MATCH_SETTLE_S, wait_until

RESEND_S = 5.0  # an unanswered goal is sent again after this long


def go_to(x: float, y: float, yaw: float = 0.0, frame: str = 'map') -> GoTo.Goal:
    goal = GoTo.Goal()
    goal.target.header.frame_id = frame
    goal.target.pose.position.x, goal.target.pose.position.y = x, y
    o = goal.target.pose.orientation
    o.x, o.y, o.z, o.w = quaternion_from_yaw(yaw)
    return goal


def connect(client, timeout_s: float = 30.0) -> None:
    """Wait until `client` can send goals and get their responses back."""
    assert client.wait_for_server(timeout_sec=timeout_s), 'no action server'
    # The server must also have matched our response readers, or Fast DDS drops the goal
    # response ("failed to send response (timeout)"); on a loaded runner 1 s was too short.
    time.sleep(2 * MATCH_SETTLE_S)


def send(client, goal, feedback=None, timeout_s: float = 30.0):
    """Send `goal` and return its handle, which must have been accepted.

    Sent as the product sends (`waymark_ros.ros.action_goal.send_goal`: again under the
    same id while unanswered, a rejected resend adopted as the first one's acceptance); an
    adopted handle is registered with the client as its response handler would have been,
    so its status reaches it. Nothing is created on the node here: adding or removing a
    subscription while the harness's executor spins can stop it.
    """
    handle = send_goal(client, goal, timeout_s, RESEND_S, feedback)
    assert handle is not None, f'goal not answered within {timeout_s:.0f} s'
    assert handle.accepted, 'goal rejected'
    key = bytes(handle.goal_id.uuid)
    if key not in client._goal_handles:  # adopted
        client._goal_handles[key] = weakref.ref(handle)
    return handle


def result_of(handle, timeout: float = 30):
    future = handle.get_result_async()
    wait_until(future.done, timeout, 'no result')
    return future.result().result
