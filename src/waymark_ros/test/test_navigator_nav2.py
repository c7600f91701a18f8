# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""navigator_node's nav2 backend over real DDS, against a scripted NavigateToPose server.

The test process plays Nav2 and the robot: a NavigateToPose server (from the test-only
nav2_msgs stand-in, built once per session) that drives a simulated pose toward each goal
and publishes it as odometry, and that can be told to succeed, abort, hang or reject. The
navigator must send only checked targets, pass on Nav2's feedback and errors, and cancel the
Nav2 goal whenever its own goal is cancelled, preempted or timed out.
"""

from __future__ import annotations

import math
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import rclpy
from nav_msgs.msg import OccupancyGrid, Odometry
from rclpy.action import ActionClient, ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from support import nav2_standin
from support.actions import connect, result_of, send
from support.actions import go_to as target
from support.ros_harness import wait_until

from waymark.geometry import quaternion_from_yaw
from waymark_interfaces.action import GoTo
from waymark_ros.ros import qos

pytestmark = pytest.mark.dds

RESOLUTION = 0.05
START = (2.0, 2.0)
DETOUR_M = 2.0  # the stub's path is this much longer than the straight line
SPEED = 2.0  # m/s, the stub's robot
RATE_HZ = 20.0
SUCCEED, ABORT, HANG, REJECT = 'succeed', 'abort', 'hang', 'reject'
ERROR_MSG = 'Failed to transform the goal into the global frame'


def room() -> OccupancyGrid:
    """A 10 m x 6 m room, walled, with a wall across it at x = 5 m from y = 0 to 4 m."""
    cells = np.zeros((120, 200), dtype=np.int8)
    cells[:2, :] = cells[-2:, :] = cells[:, :2] = cells[:, -2:] = 100
    cells[:80, 99:101] = 100
    msg = OccupancyGrid()
    msg.header.frame_id = 'map'
    msg.info.resolution = RESOLUTION
    msg.info.height, msg.info.width = cells.shape
    msg.info.origin.orientation.w = 1.0
    msg.data = cells.ravel().tolist()
    return msg


class Nav2Stub:
    """NavigateToPose and the robot's odometry, on a node and executor of its own.

    `mode` is read as goals arrive and while they run, so a test can change it midway:
    succeed drives to the goal, abort gives up with TF_ERROR after a few steps, hang keeps
    the robot standing until cancelled, reject refuses goals.
    """

    def __init__(self, context, action_type, mode: str = SUCCEED) -> None:
        self.action_type = action_type
        self.mode = mode
        self.x, self.y = START
        self.goals: list = []  # every NavigateToPose goal received
        self.accepted: list[bytes] = []  # ids of the goals accepted
        self.cancels: list[bytes] = []  # goal ids whose cancel was asked for
        self.ended: list[str] = []  # 'succeeded', 'aborted' or 'canceled', in order
        self.sent: list[float] = []  # every distance_remaining published
        self._closing = threading.Event()
        self.node = rclpy.create_node('nav2_stub', context=context)
        self.odom = self.node.create_publisher(Odometry, '/odom', qos.sensor_input(True, 10))
        self.node.create_timer(1.0 / RATE_HZ, self._publish_odometry)
        self.server = ActionServer(
            self.node,
            action_type,
            'navigate_to_pose',
            execute_callback=self._execute,
            goal_callback=self._on_goal,
            handle_accepted_callback=self._on_accepted,
            cancel_callback=self._on_cancel,
            callback_group=ReentrantCallbackGroup(),
        )
        self.executor = MultiThreadedExecutor(num_threads=4, context=context)
        self.executor.add_node(self.node)
        self._thread = threading.Thread(target=self.executor.spin, daemon=True)
        self._thread.start()

    def _publish_odometry(self) -> None:
        msg = Odometry()
        msg.header.frame_id = 'map'
        msg.header.stamp = self.node.get_clock().now().to_msg()
        msg.pose.pose.position.x, msg.pose.pose.position.y = self.x, self.y
        msg.pose.pose.orientation.w = 1.0
        self.odom.publish(msg)

    def _on_goal(self, goal) -> GoalResponse:
        self.goals.append(goal)
        return GoalResponse.REJECT if self.mode == REJECT else GoalResponse.ACCEPT

    def _on_accepted(self, handle) -> None:
        self.accepted.append(bytes(handle.goal_id.uuid))
        handle.execute()

    def _on_cancel(self, handle) -> CancelResponse:
        self.cancels.append(bytes(handle.goal_id.uuid))
        return CancelResponse.ACCEPT

    def _execute(self, handle):
        result = self.action_type.Result()
        goal = handle.request.pose.pose.position
        feedback = self.action_type.Feedback()
        steps = 0
        while not self._closing.is_set():
            if handle.is_cancel_requested:
                handle.canceled()
                self.ended.append('canceled')
                return result
            distance = math.hypot(goal.x - self.x, goal.y - self.y)
            if self.mode == SUCCEED and distance < 1e-3:
                handle.succeed()
                self.ended.append('succeeded')
                return result
            if self.mode == ABORT and steps >= 3:
                result.error_code = self.action_type.Result.TF_ERROR
                result.error_msg = ERROR_MSG
                handle.abort()
                self.ended.append('aborted')
                return result
            if self.mode == SUCCEED:
                step = min(1.0, SPEED / RATE_HZ / distance)
                self.x += (goal.x - self.x) * step
                self.y += (goal.y - self.y) * step
            feedback.distance_remaining = distance + DETOUR_M
            self.sent.append(feedback.distance_remaining)
            handle.publish_feedback(feedback)
            steps += 1
            time.sleep(1.0 / RATE_HZ)
        return result

    def close(self) -> None:
        self._closing.set()
        self.executor.shutdown()
        self.node.destroy_node()
        self._thread.join(timeout=5.0)


@pytest.fixture(scope='session')
def standin():
    """The stand-in nav2_msgs, built (once) and loaded into this process."""
    prefix = nav2_standin.build()
    nav2_standin.load(prefix)
    return prefix


@pytest.fixture
def nav2_env(standin, monkeypatch):
    """Node processes started during the test find the stand-in."""
    for key, value in nav2_standin.child_environment(standin).items():
        monkeypatch.setenv(key, value)


@pytest.fixture
def nav2(ros, nav2_env):
    from nav2_msgs.action import NavigateToPose

    stub = Nav2Stub(ros.context, NavigateToPose)
    yield stub
    stub.close()


def start_navigator(ros, launch, nav2, **parameters) -> ActionClient:
    publisher = ros.node.create_publisher(OccupancyGrid, '/map', qos.latched())
    publisher.publish(room())
    settings = {
        'backend': 'nav2',
        'reliable_input': True,
        'robot_radius_m': 0.3,
        'snap_radius_m': 0.5,
        'goal_timeout_s': 60.0,
        **parameters,
    }
    launch('navigator_node', **settings)
    client = ActionClient(ros.node, GoTo, 'go_to')
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
    assert distances[0] > math.dist(START, goal_xy) + DETOUR_M / 2
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
    assert f'error {code}' in result.message and ERROR_MSG in result.message, result.message
    assert nav2.ended == ['aborted']


def test_cancelling_the_goal_cancels_the_nav2_goal(ros, launch, nav2):
    nav2.mode = HANG
    client = start_navigator(ros, launch, nav2)
    handle = send(client, target(3.5, 2.0))
    wait_until(lambda: nav2.sent, 10, 'Nav2 never got the goal')
    cancel = handle.cancel_goal_async()
    wait_until(cancel.done, 10, 'cancel not answered')
    assert result_of(handle).outcome == GoTo.Result.OUTCOME_CANCELED
    assert nav2.cancels == nav2.accepted and nav2.ended == ['canceled']


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


@pytest.mark.parametrize(
    ('x', 'y', 'reason'),
    [(5.0, 2.0, 'no traversable cell'), (25.0, 2.0, 'outside')],
)
def test_unsafe_targets_are_refused_and_nav2_gets_nothing(ros, launch, nav2, x, y, reason):
    client = start_navigator(ros, launch, nav2, snap_radius_m=0.2)
    result = result_of(send(client, target(x, y)))
    assert result.outcome == GoTo.Result.OUTCOME_REFUSED
    assert reason in result.message
    assert nav2.goals == []


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
