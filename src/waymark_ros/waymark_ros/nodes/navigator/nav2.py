# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Backend `nav2`: the checked target goes to Nav2's NavigateToPose action.

Nav2's feedback (its path length left), result and error are passed on; a GoTo cancel,
preemption, new map epoch or timeout cancels the Nav2 goal, and nothing is left driving
that nobody asked for. Needs nav2_msgs, imported only when this backend is chosen.
"""

from __future__ import annotations

import os
import time

import rclpy
from action_msgs.msg import GoalStatus
from rclpy.action import ActionClient
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node

from waymark.parameters.navigator import NavigatorParameters
from waymark_interfaces.action import GoTo
from waymark_ros.nodes.navigator.backend import Backend, CheckedGoal, Host, Outcome, wait


class Nav2Backend(Backend):
    def __init__(self, node: Node, host: Host, settings: NavigatorParameters) -> None:
        super().__init__(node, host, settings)
        try:
            from nav2_msgs.action import NavigateToPose
        except ImportError:
            distro = os.environ.get('ROS_DISTRO') or '<distro>'
            raise RuntimeError(
                f'backend nav2 needs nav2_msgs (install ros-{distro}-nav2-msgs)'
            ) from None
        self._goal_type = NavigateToPose.Goal
        # Its own group: the client's responses must be handled while a goal's execute
        # callback blocks.
        self._client = ActionClient(
            node,
            NavigateToPose,
            settings.nav2.action_name,
            callback_group=MutuallyExclusiveCallbackGroup(),
        )

    def release(self) -> None:
        self._client.destroy()

    def drive(self, handle, goal: CheckedGoal) -> Outcome:
        name, wait_s = self._settings.nav2.action_name, self._settings.nav2.server_wait_s
        timeout_s = self._settings.goal_timeout_s
        self._host.show(goal, None)
        if not self._client.wait_for_server(timeout_sec=wait_s):
            return GoTo.Result.OUTCOME_FAILED, (
                f'Nav2 action server not available on {name!r} after {wait_s:g} s'
            )
        nav2_goal = self._goal_type()
        nav2_goal.pose = self.stamped(goal)
        latest = [(0, 0.0)]  # (feedback count, distance); written by the client's callbacks

        def on_feedback(msg) -> None:
            latest[0] = (latest[0][0] + 1, float(msg.feedback.distance_remaining))

        sent = self._client.send_goal_async(nav2_goal, feedback_callback=on_feedback)
        if not wait(sent.done, wait_s):
            sent.add_done_callback(_cancel_if_accepted)  # nothing may drive unasked
            return GoTo.Result.OUTCOME_FAILED, f'Nav2 did not answer the goal within {wait_s:g} s'
        nav = sent.result()
        if nav is None or not nav.accepted:
            return GoTo.Result.OUTCOME_FAILED, 'Nav2 rejected the goal'
        result = nav.get_result_async()
        deadline = time.monotonic() + timeout_s
        feedback, relayed = GoTo.Feedback(), 0
        while rclpy.ok():
            if result.done():
                return _outcome(result.result(), goal)
            ended = self.interrupted(handle)
            if ended is None and time.monotonic() > deadline:
                ended = GoTo.Result.OUTCOME_FAILED, f'Nav2 did not arrive within {timeout_s:.0f} s'
            if ended is not None:
                nav.cancel_goal_async()
                if wait(result.done, wait_s):
                    return ended
                if ended[0] == GoTo.Result.OUTCOME_CANCELED:
                    return GoTo.Result.OUTCOME_FAILED, (
                        f'canceled, but Nav2 did not confirm within {wait_s:g} s'
                    )
                return ended[0], f'{ended[1]}; Nav2 did not confirm the cancel within {wait_s:g} s'
            count, distance = latest[0]
            if count > relayed:
                relayed, feedback.distance_remaining = count, distance
                handle.publish_feedback(feedback)
            time.sleep(0.05)
        return GoTo.Result.OUTCOME_FAILED, 'shutting down'


def _outcome(response, goal: CheckedGoal) -> Outcome:
    """The GoTo outcome of a Nav2 goal that ended by itself."""
    status, result = response.status, response.result
    if status == GoalStatus.STATUS_SUCCEEDED:
        return GoTo.Result.OUTCOME_REACHED, goal.reached()
    if status == GoalStatus.STATUS_ABORTED:
        return GoTo.Result.OUTCOME_FAILED, (
            f'Nav2 aborted (error {result.error_code}): {result.error_msg or "no reason given"}'
        )
    if status == GoalStatus.STATUS_CANCELED:  # not by this node: it only cancels on request
        return GoTo.Result.OUTCOME_FAILED, 'Nav2 canceled the goal'
    return GoTo.Result.OUTCOME_FAILED, f'Nav2 ended the goal with status {status}'


def _cancel_if_accepted(sent) -> None:
    """Cancel a Nav2 goal whose acceptance came after the navigator had given up on it."""
    nav = sent.result()
    if nav is not None and nav.accepted:
        nav.cancel_goal_async()
