# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Action-client steps shared by the navigator's DDS tests."""

from __future__ import annotations

import time
import uuid
import weakref

from rclpy.action.client import ClientGoalHandle
from unique_identifier_msgs.msg import UUID

from waymark.geometry import quaternion_from_yaw
from waymark_interfaces.action import GoTo
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

    A goal response is lost when the server has not yet matched this client back (Fast
    DDS drops it; the goal runs all the same), so an unanswered goal is sent again under
    the same id. The server never runs an id twice: rclpy's ActionServer rejects a goal
    whose id it already tracks (`_execute_goal_request`, "goal_exists"), so a rejected
    resend is the first one's acceptance, and the goal is adopted with the handle rclpy
    would have made. Had the first been rejected too, the result request of the adopted
    handle is answered STATUS_UNKNOWN (`_execute_get_result_request`: no such goal), which
    no test takes for a result. Nothing is created on the node here: adding or removing a
    subscription while the harness's executor spins can stop it.
    """
    goal_id = UUID(uuid=list(uuid.uuid4().bytes))
    deadline = time.monotonic() + timeout_s
    resent = False
    while True:
        future = client.send_goal_async(goal, feedback_callback=feedback, goal_uuid=goal_id)
        give_up = min(deadline, time.monotonic() + RESEND_S)
        while not future.done() and time.monotonic() < give_up:
            time.sleep(0.05)
        if future.done():
            handle = future.result()
            if handle.accepted:
                return handle
            assert resent, 'goal rejected'
            return _adopt(client, goal_id)
        assert time.monotonic() < deadline, f'goal not answered within {timeout_s:.0f} s'
        future.cancel()  # its request is forgotten: a late response to it is ignored
        resent = True


def _adopt(client, goal_id: UUID) -> ClientGoalHandle:
    """The handle of an accepted goal whose response was lost, registered with the client
    as its response handler would have (so its status and result reach it)."""
    response = client._action_type.Impl.SendGoalService.Response(accepted=True)
    handle = ClientGoalHandle(client, goal_id, response)
    client._goal_handles[bytes(goal_id.uuid)] = weakref.ref(handle)
    return handle


def result_of(handle, timeout: float = 30):
    future = handle.get_result_async()
    wait_until(future.done, timeout, 'no result')
    return future.result().result
