# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""What task_node drives, played by a test process: the reasoner's Ask (an LLM agent)
answers with the first remembered sighting the goal does not exclude, the navigator's GoTo
(Nav2) reaches, refuses or holds a goal until it is canceled, and the robot's odometry
(moved to each reached goal) and a camera that shows the printed sign nearest the robot.
Shared by the task node's tests and the client's task tests.

The Ask stand-in is no kinder than reasoner_node: like the agent, it never answers with an
excluded entry or a place within the exclusion radius of a ruled-out position (it reads
the goal's fields with the reasoner's own reader), and when nothing is left it answers
STATUS_NO_ANSWER, as the reasoner does when memory holds nothing that fits. Its goal names
the session and map epoch of the sighting it was located from, as the reasoner's does
(waymark_ros.nodes.reasoner.answers), so task_node checks it against the current epoch."""

from __future__ import annotations

import json
import math
import threading
import time
from dataclasses import dataclass

from nav_msgs.msg import Odometry
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from sensor_msgs.msg import CompressedImage
from std_msgs.msg import String

from waymark_interfaces.action import Ask, GoTo
from waymark_interfaces.msg import MemoryHit
from waymark_ros.ros import qos
from waymark_ros.ros.exclusion_msgs import exclusions_from_goal
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


# The map epoch the stand-ins' capture stats report as current.
CURRENT_EPOCH = ('tour', 2)


@dataclass(frozen=True)
class Sighting:
    """A printed sign memory holds: its entry, where it stands, the word printed on it,
    and the map epoch its pose is in."""

    entry_id: str
    xy: tuple[float, float]
    word: str
    epoch: tuple[str, int] = CURRENT_EPOCH


class StandIns:
    """Ask, GoTo, odometry and camera of the robot the task node drives."""

    def __init__(self, ros) -> None:
        self.go_to_mode = 'reach'  # reach | refuse | hold
        self.go_to_goals = 0
        self.go_to_targets: list[tuple[float, float]] = []
        # A goal within 0.5 m of this point is held as in 'hold' (None: none is).
        self.hold_near: tuple[float, float] | None = None
        self.holding = threading.Event()  # set while a goal is held
        self.release = threading.Event()  # ends every hold (a test's cleanup)
        self.sightings = [Sighting('tour:7', GOAL_XY, SIGN)]  # in the order Ask offers them
        self.asked: list[Ask.Goal] = []
        self._images: dict[str, bytes] = {}
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
        self.stats = node.create_publisher(String, 'capture/stats', qos.latched())
        session, epoch = CURRENT_EPOCH
        self.stats.publish(String(data=json.dumps({'session': session, 'map_epoch': epoch})))
        node.create_timer(0.05, self._publish_pose)
        node.create_timer(0.2, self._publish_image)

    def _ask(self, handle) -> Ask.Result:
        goal = handle.request
        with self._lock:
            self.asked.append(goal)
        handle.publish_feedback(Ask.Feedback(step=1, tool='search'))
        excluded = exclusions_from_goal(goal)
        sighting = next(
            (s for s in self.sightings if not excluded.excludes(s.entry_id, *s.xy)), None
        )
        if sighting is None:
            handle.abort()
            return Ask.Result(success=False, status=Ask.Result.STATUS_NO_ANSWER)
        result = Ask.Result(success=True, status=Ask.Result.STATUS_ANSWERED)
        answer = result.answer
        answer.kind = answer.KIND_POSITION
        answer.text = f'the {sighting.word.lower()} sign'
        answer.has_goal = True
        answer.goal.header.frame_id = 'map'
        answer.goal.pose.position.x, answer.goal.pose.position.y = sighting.xy
        answer.goal.pose.orientation.w = 1.0
        answer.goal_session, answer.goal_map_epoch = sighting.epoch
        session, epoch = sighting.epoch
        answer.evidence = [MemoryHit(id=sighting.entry_id, session=session, map_epoch=epoch)]
        handle.succeed()
        return result

    def _go_to(self, handle) -> GoTo.Result:
        self.go_to_goals += 1
        aim = handle.request.target.pose.position
        self.go_to_targets.append((aim.x, aim.y))
        result = GoTo.Result()
        if self.go_to_mode == 'refuse':
            handle.abort()
            result.outcome, result.message = GoTo.Result.OUTCOME_REFUSED, 'no path'
            return result
        target = handle.request.target.pose
        near = self.hold_near is not None and (
            math.dist((target.position.x, target.position.y), self.hold_near) < 0.5
        )
        if self.go_to_mode == 'hold' or near:
            self.holding.set()
            deadline = time.monotonic() + 60.0
            while (
                not handle.is_cancel_requested
                and not self.release.is_set()
                and time.monotonic() < deadline
            ):
                time.sleep(0.05)
            self.holding.clear()
            if handle.is_cancel_requested:
                handle.canceled()
            else:  # released by the test, not canceled: an aborted goal
                handle.abort()
            result.outcome = GoTo.Result.OUTCOME_CANCELED
            return result
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
        with self._lock:
            here = self.pose[:2]
        word = min(self.sightings, key=lambda s: math.dist(s.xy, here)).word
        if word not in self._images:
            self._images[word] = sign_jpeg(word)
        self.camera.publish(CompressedImage(format='jpeg', data=self._images[word]))
        with self._lock:
            self.sent['frame'] += 1
