# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""What the navigator's DDS tests drive: a room, a simulated robot, and Nav2 played in-process.

The room is 10 m x 6 m, walled, with a wall across it at x = 5 m from y = 0 to 4 m and a
closed box (a pocket of free space nothing can reach) around (8, 5). The robot is a
unicycle that integrates the latest `cmd_vel` and publishes its pose as odometry; it can
instead take `goal_pose` goals itself, standing in for the planner that backend goal_topic
hands its goals to. Nav2Stub plays NavigateToPose and the robot for backend nav2.
"""

from __future__ import annotations

import math
import threading
import time

import numpy as np
import rclpy
from geometry_msgs.msg import PoseStamped, Twist
from nav_msgs.msg import OccupancyGrid, Odometry
from rclpy.action import ActionClient, ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor

from waymark.geometry import quaternion_from_yaw
from waymark_interfaces.action import GoTo
from waymark_ros.ros import qos
from waymark_testing.actions import connect
from waymark_testing.actions import go_to as target
from waymark_testing.unicycle import Unicycle

RESOLUTION = 0.05
WIDTH, HEIGHT = 200, 120  # a 10 m x 6 m room
START = (2.0, 2.0)
BEHIND_WALL = (8.0, 2.0)
SIM_RATE_HZ = 50.0
GOAL_POSE_SPEED = 1.5  # m/s, the stand-in goal_pose planner's straight-line speed


def room() -> np.ndarray:
    """Occupancy of the room (0 free, 100 wall)."""
    cells = np.zeros((HEIGHT, WIDTH), dtype=np.int8)
    cells[:2, :] = cells[-2:, :] = cells[:, :2] = cells[:, -2:] = 100
    cells[:80, 99:101] = 100  # x 4.95..5.05, y 0..4
    cells[90:111, 150:171] = 100
    cells[93:108, 153:168] = 0  # free inside the box
    return cells


def grid_msg(cells: np.ndarray, frame: str = 'map') -> OccupancyGrid:
    msg = OccupancyGrid()
    msg.header.frame_id = frame
    msg.info.resolution = RESOLUTION
    msg.info.height, msg.info.width = cells.shape
    msg.info.origin.orientation.w = 1.0
    msg.data = cells.ravel().tolist()
    return msg


def cell_of(x: float, y: float) -> tuple[int, int]:
    return math.floor(y / RESOLUTION), math.floor(x / RESOLUTION)


def latched_map(ros, msg, topic='/map', msg_type=OccupancyGrid):
    publisher = ros.node.create_publisher(msg_type, topic, qos.latched())
    publisher.publish(msg)
    return publisher


def oriented(goal: GoTo.Goal, *q: float) -> GoTo.Goal:
    o = goal.target.pose.orientation
    o.x, o.y, o.z, o.w = q
    return goal


def remembered(goal: GoTo.Goal, session: str, epoch: int) -> GoTo.Goal:
    goal.evidence_session, goal.evidence_map_epoch = session, epoch
    return goal


# Goals that must be refused (with snap_radius_m 0.2), and what the reason must say. Huge
# finite coordinates once overflowed the cell arithmetic; the exception became a default
# result: "reached".
REFUSALS = [
    (target(1.0, 1.0, frame='odom'), "frame 'odom'"),
    (target(25.0, 2.0), 'outside'),
    (target(8.0, 5.0), 'not connected'),  # inside the closed box
    (target(5.0, 2.0), 'no traversable cell'),  # in the middle of the wall
    (target(-1e308, 2.0), 'max_abs_coordinate_m'),
    (target(2.0, 1e300), 'max_abs_coordinate_m'),
    (target(math.nan, 2.0), 'non-finite'),
    (oriented(target(3.0, 2.0), 0.0, 0.0, 0.0, 0.0), 'norm 0,'),
    (oriented(target(3.0, 2.0), 0.0, 0.0, 0.0, 2.0), 'norm 2,'),
]


class SimulatedRobot:
    """A unicycle on DDS: cmd_vel in, odometry out, its path recorded.

    With `takes_goal_pose`, goals on `goal_pose` are driven too, in a straight line at
    GOAL_POSE_SPEED: the planner a goal_topic navigator hands its goals to.
    """

    def __init__(self, node, x: float, y: float, yaw: float = 0.0, takes_goal_pose=False) -> None:
        self.node = node
        self.body = Unicycle(x, y, yaw)
        self.command = (0.0, 0.0)
        self.commands: list[tuple[float, float]] = []
        self.goals: list[PoseStamped] = []
        self.trail: list[tuple[float, float]] = []
        self._lock = threading.Lock()
        node.create_subscription(Twist, 'cmd_vel', self._on_command, 10)
        if takes_goal_pose:
            node.create_subscription(PoseStamped, 'goal_pose', self._on_goal, 10)
        self.odom = node.create_publisher(Odometry, '/odom', qos.sensor_input(True, 10))
        self.timer = node.create_timer(1.0 / SIM_RATE_HZ, self._tick)

    def _on_command(self, msg: Twist) -> None:
        with self._lock:
            self.command = (msg.linear.x, msg.angular.z)
            self.commands.append(self.command)

    def _on_goal(self, msg: PoseStamped) -> None:
        with self._lock:
            self.goals.append(msg)

    def _tick(self) -> None:
        with self._lock:
            self.body.step(*self.command, 1.0 / SIM_RATE_HZ)
            if self.goals and not self.body.blocked:
                self._toward(self.goals[-1].pose.position)
            x, y, yaw = self.body.pose
            self.trail.append((x, y))
        msg = Odometry()
        msg.header.frame_id = 'map'
        msg.header.stamp = self.node.get_clock().now().to_msg()
        msg.pose.pose.position.x, msg.pose.pose.position.y = x, y
        q = quaternion_from_yaw(yaw)
        o = msg.pose.pose.orientation
        o.x, o.y, o.z, o.w = q
        self.odom.publish(msg)

    def _toward(self, goal) -> None:
        distance = math.hypot(goal.x - self.body.x, goal.y - self.body.y)
        step = min(1.0, GOAL_POSE_SPEED / SIM_RATE_HZ / max(distance, 1e-9))
        self.body.x += (goal.x - self.body.x) * step
        self.body.y += (goal.y - self.body.y) * step

    def stop(self) -> None:
        self.timer.cancel()


SUCCEED, ABORT, HANG, REJECT = 'succeed', 'abort', 'hang', 'reject'
NAV2_DETOUR_M = 2.0  # the stub's path is this much longer than the straight line
NAV2_SPEED = 2.0  # m/s, the stub's robot
NAV2_RATE_HZ = 20.0
NAV2_ERROR_MSG = 'Failed to transform the goal into the global frame'


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
        self.node.create_timer(1.0 / NAV2_RATE_HZ, self._publish_odometry)
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
                result.error_msg = NAV2_ERROR_MSG
                handle.abort()
                self.ended.append('aborted')
                return result
            if self.mode == SUCCEED:
                step = min(1.0, NAV2_SPEED / NAV2_RATE_HZ / distance)
                self.x += (goal.x - self.x) * step
                self.y += (goal.y - self.y) * step
            feedback.distance_remaining = distance + NAV2_DETOUR_M
            self.sent.append(feedback.distance_remaining)
            handle.publish_feedback(feedback)
            steps += 1
            time.sleep(1.0 / NAV2_RATE_HZ)
        return result

    def close(self) -> None:
        self._closing.set()
        self.executor.shutdown()
        self.node.destroy_node()
        self._thread.join(timeout=5.0)


def start_navigator(ros, launch, **parameters):
    """navigator_node as the navigation tests run it (a slow, tolerant follower over a
    0.3 m robot), and a connected GoTo client: (its NodeProcess, the client)."""
    node = launch(
        'navigator_node',
        reliable_input=True,
        goal_timeout_s=90.0,
        robot_radius_m=0.3,
        snap_radius_m=0.5,
        **{'follower.max_linear': 0.8, 'follower.max_linear_accel': 1.0},
        **parameters,
    )
    with ros.paused() as ros_node:
        client = ActionClient(ros_node, GoTo, 'go_to')
    connect(client)
    return node, client
