# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""What task_node drives, played by a test process: the reasoner's Ask (an LLM agent)
answers with one place, the navigator's GoTo (Nav2) reaches, refuses or holds a goal until
it is canceled, and the robot's odometry (moved to each reached goal) and a camera that
shows a printed sign. Shared by the task node's tests and the client's task tests."""

from __future__ import annotations

import json
import threading
import time

from nav_msgs.msg import Odometry
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from sensor_msgs.msg import CompressedImage
from std_msgs.msg import String

from waymark_interfaces.action import Ask, GoTo
from waymark_interfaces.msg import MemoryHit
from waymark_ros.ros import qos
from waymark_testing.signs import sign_jpeg

SIGN = 'PHARMACY'
GOAL_XY = (1.5, 0.5)
# task_node's parameters for these tests: every camera frame kept, two stop views, one
# attempt (data_dir is each test's own).
TASK_NODE_SETTINGS = {
    'inputs.frame_period_s': 0.0,
    'runner.stop_view_count': 2,
    'runner.judge_frames': 4,
    'runner.max_attempts': 1,
}


class StandIns:
    """Ask, GoTo, odometry and camera of the robot the task node drives."""

    def __init__(self, ros) -> None:
        self.go_to_mode = 'reach'  # reach | refuse | hold
        self.go_to_goals = 0
        self.pose = (0.0, 0.0, 0.0, 1.0, 0.0)  # x, y, qz, qw, unused
        self.sent = {'pose': 0, 'frame': 0}  # how many of each were published
        self._lock = threading.Lock()
        node = ros.node
        group = ReentrantCallbackGroup()
        with ros.paused():
            self.ask = ActionServer(
                node, Ask, 'ask', execute_callback=self._ask, callback_group=group
            )
            self.go_to = ActionServer(
                node,
                GoTo,
                'go_to',
                execute_callback=self._go_to,
                goal_callback=lambda _goal: GoalResponse.ACCEPT,
                cancel_callback=lambda _goal: CancelResponse.ACCEPT,
                callback_group=group,
            )
        self.odom = node.create_publisher(Odometry, 'odom', qos.state_input(True, 5))
        self.camera = node.create_publisher(
            CompressedImage, 'camera/image/compressed', qos.sensor_input(True, 2)
        )
        self.image = sign_jpeg(SIGN)
        self.stats = node.create_publisher(String, 'capture/stats', qos.latched())
        self.stats.publish(String(data=json.dumps({'session': 'tour', 'map_epoch': 2})))
        node.create_timer(0.05, self._publish_pose)
        node.create_timer(0.2, self._publish_image)

    def _ask(self, handle) -> Ask.Result:
        feedback = Ask.Feedback(step=1, tool='search')
        handle.publish_feedback(feedback)
        result = Ask.Result(success=True, status=Ask.Result.STATUS_ANSWERED)
        answer = result.answer
        answer.kind = answer.KIND_POSITION
        answer.text = 'the pharmacy sign'
        answer.has_goal = True
        answer.goal.header.frame_id = 'map'
        answer.goal.pose.position.x, answer.goal.pose.position.y = GOAL_XY
        answer.goal.pose.orientation.w = 1.0
        answer.evidence = [MemoryHit(id='tour:7')]
        handle.succeed()
        return result

    def _go_to(self, handle) -> GoTo.Result:
        self.go_to_goals += 1
        result = GoTo.Result()
        if self.go_to_mode == 'refuse':
            handle.abort()
            result.outcome, result.message = GoTo.Result.OUTCOME_REFUSED, 'no path'
            return result
        if self.go_to_mode == 'hold':
            deadline = time.monotonic() + 60.0
            while not handle.is_cancel_requested and time.monotonic() < deadline:
                time.sleep(0.05)
            handle.canceled()
            result.outcome = GoTo.Result.OUTCOME_CANCELED
            return result
        target = handle.request.target.pose
        with self._lock:
            q = target.orientation
            self.pose = (target.position.x, target.position.y, q.z, q.w, 0.0)
            turned = dict(self.sent)
        # Reached once a pose and a frame were sent after the turn.
        deadline = time.monotonic() + 30.0
        while time.monotonic() < deadline and any(
            self.sent[kind] <= turned[kind] for kind in turned
        ):
            time.sleep(0.05)
        handle.succeed()
        result.outcome = GoTo.Result.OUTCOME_REACHED
        return result

    def _publish_pose(self) -> None:
        msg = Odometry()
        msg.header.frame_id = 'map'
        with self._lock:
            x, y, qz, qw, _ = self.pose
        msg.pose.pose.position.x, msg.pose.pose.position.y = x, y
        msg.pose.pose.orientation.z, msg.pose.pose.orientation.w = qz, qw
        self.odom.publish(msg)
        with self._lock:
            self.sent['pose'] += 1

    def _publish_image(self) -> None:
        self.camera.publish(CompressedImage(format='jpeg', data=self.image))
        with self._lock:
            self.sent['frame'] += 1
