# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Action-client steps shared by the navigator's DDS tests."""

from __future__ import annotations

import time

from waymark.geometry import quaternion_from_yaw
from waymark_interfaces.action import GoTo
from waymark_testing.ros_harness import MATCH_SETTLE_S, wait_until


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


def send(client, goal, feedback=None):
    """Send `goal` and return its handle, which must have been accepted."""
    future = client.send_goal_async(goal, feedback_callback=feedback)
    wait_until(future.done, 10, 'goal not answered')
    handle = future.result()
    assert handle.accepted
    return handle


def result_of(handle, timeout: float = 30):
    future = handle.get_result_async()
    wait_until(future.done, timeout, 'no result')
    return future.result().result
