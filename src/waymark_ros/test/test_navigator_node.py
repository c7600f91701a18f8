# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""navigator_node over real DDS, closed loop: a simulated robot driven by its cmd_vel.

The test process plays the robot: a unicycle that integrates the latest `cmd_vel` at
50 Hz and publishes its pose as odometry (support.navigation_worlds). The map is a room
with a wall across it; goals behind the wall must be reached around it without the robot
ever entering an obstacle. What every backend must do alike (refusals, cancel, stale map
epochs) is tested against each in test_navigation_backends.py; here, the rest.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from geometry_msgs.msg import PoseStamped, PoseWithCovarianceStamped
from nav_msgs.msg import Path
from rclpy.action import ActionClient
from std_msgs.msg import String

from waymark.geometry import quaternion_from_yaw
from waymark_interfaces.action import GoTo
from waymark_ros.ros import qos
from waymark_ros.ros.navigation_client import NavigationClient
from waymark_ros.ros.navigation_msgs import cloud_msg
from waymark_testing.actions import connect, result_of, send
from waymark_testing.actions import go_to as target
from waymark_testing.navigation_worlds import (
    BEHIND_WALL,
    REFUSALS,
    RESOLUTION,
    START,
    SimulatedRobot,
    cell_of,
    grid_msg,
    latched_map,
    oriented,
    remembered,
    room,
)
from waymark_testing.ros_harness import wait_until

pytestmark = pytest.mark.dds


@pytest.fixture
def robot(ros):
    simulated = SimulatedRobot(ros.node, *START)
    yield simulated
    simulated.stop()


def start_navigator(ros, launch, **parameters):
    settings = {
        'reliable_input': True,
        'goal_timeout_s': 90.0,
        'follower.max_linear': 0.8,
        'follower.max_linear_accel': 1.0,
        'robot_radius_m': 0.3,
        'snap_radius_m': 0.5,
        **parameters,
    }
    launch('navigator_node', **settings)
    with ros.paused() as node:
        client = ActionClient(node, GoTo, 'go_to')
    connect(client)
    return client


def test_drives_around_the_wall_to_a_goal_behind_it_without_touching_anything(ros, launch, robot):
    cells = room()
    latched_map(ros, grid_msg(cells))
    plans = ros.collect(Path, 'plan', qos.latched())
    client = start_navigator(ros, launch)
    wait_until(lambda: robot.odom.get_subscription_count() > 0, 30, 'no pose subscriber')
    distances: list[float] = []
    handle = send(
        client,
        target(*BEHIND_WALL, yaw=math.pi / 2),
        lambda fb: distances.append(fb.feedback.distance_remaining),
    )
    result = result_of(handle, timeout=120)
    assert result.outcome == GoTo.Result.OUTCOME_REACHED, result.message
    final = result.final_pose.pose
    assert math.dist((final.position.x, final.position.y), BEHIND_WALL) <= 0.25
    assert plans and max(p.pose.position.y for p in plans[-1].poses) > 4.0  # around the end
    # The path length left shrank from about the length of the detour to nothing.
    assert distances[0] > math.dist(START, BEHIND_WALL) + 1.0 and distances[-1] < 0.5
    occupied = cells >= 65
    for x, y in robot.trail:
        assert not occupied[cell_of(x, y)], f'robot entered an obstacle at ({x:.2f}, {y:.2f})'
    walls = np.argwhere(occupied) * RESOLUTION + RESOLUTION / 2  # (row, col) -> (y, x)
    trail = np.array(robot.trail)[:, ::-1]
    nearest = np.min(np.linalg.norm(trail[:, None, :] - walls[None, :, :], axis=2))
    assert nearest > 0.15, f'came within {nearest:.2f} m of a wall'
    limit = 0.8 + 1e-6
    assert all(abs(v) <= limit and abs(w) <= 1.0 + 1e-6 for v, w in robot.commands)
    assert robot.commands[-1] == (0.0, 0.0)  # stopped at the end


def test_refuses_every_goal_until_a_map_arrives(ros, launch, robot):
    client = start_navigator(ros, launch, input_wait_s=1.0)
    result = result_of(send(client, target(3.0, 2.0)))
    assert result.outcome == GoTo.Result.OUTCOME_REFUSED
    assert 'no map' in result.message


def test_a_goal_in_a_walls_inflation_is_moved_out_and_forwarded(ros, launch, robot):
    latched_map(ros, grid_msg(room()))
    goals = ros.collect(PoseStamped, 'goal_pose')
    client = start_navigator(ros, launch, backend='goal_topic')
    wait_until(lambda: robot.odom.get_subscription_count() > 0, 30, 'no pose subscriber')
    wait_until(lambda: len(robot.trail) > 10, 10, 'simulation not running')
    handle = send(client, target(4.8, 2.0))  # 0.15 m from the wall's face
    wait_until(lambda: goals, 10, 'no goal forwarded')
    forwarded = goals[0].pose.position
    assert forwarded.x < 4.95 - 0.3 and abs(forwarded.y - 2.0) < 0.1
    cancel = handle.cancel_goal_async()
    wait_until(cancel.done, 10, 'cancel not answered')
    assert result_of(handle).outcome == GoTo.Result.OUTCOME_CANCELED


def test_takes_its_pose_from_the_pose_type_it_is_given(ros, launch):
    # A ZED's tracking publishes PoseWithCovarianceStamped: no Odometry anywhere here.
    latched_map(ros, grid_msg(room()))
    pose = PoseWithCovarianceStamped()
    pose.header.frame_id = 'map'
    pose.pose.pose.position.x, pose.pose.pose.position.y = 2.5, 1.5
    o = pose.pose.pose.orientation
    o.x, o.y, o.z, o.w = quaternion_from_yaw(math.pi / 2)
    publisher = ros.node.create_publisher(PoseWithCovarianceStamped, '/camera_pose', 10)

    def publish() -> None:
        pose.header.stamp = ros.node.get_clock().now().to_msg()
        publisher.publish(pose)

    ros.node.create_timer(0.05, publish)
    goals = ros.collect(PoseStamped, 'goal_pose')
    client = start_navigator(
        ros,
        launch,
        backend='goal_topic',
        odom_topic='/camera_pose',
        pose_type='pose_with_covariance',
        reliable_input=False,
    )
    wait_until(lambda: publisher.get_subscription_count() > 0, 30, 'no pose subscriber')

    handle = send(client, target(3.0, 2.0))
    wait_until(lambda: goals, 10, 'goal not forwarded: no pose taken')
    wait_until(handle.cancel_goal_async().done, 10, 'cancel not answered')
    result = result_of(handle)

    assert result.outcome == GoTo.Result.OUTCOME_CANCELED
    final = result.final_pose.pose
    assert (final.position.x, final.position.y) == pytest.approx((2.5, 1.5))
    assert final.orientation.z == pytest.approx(math.sin(math.pi / 4))


def test_a_point_cloud_map_is_projected_and_its_obstacles_respected(ros, launch, robot):
    # Ground points everywhere in a 6 m x 4 m area, and a pillar of points (in the height
    # band) at (4, 2) between the robot and the goal; points above the band are a ceiling.
    xs, ys = np.meshgrid(np.arange(0.0, 6.0, 0.04), np.arange(0.0, 4.0, 0.04))
    ground = np.column_stack([xs.ravel(), ys.ravel(), np.zeros(xs.size)])
    px, py, pz = np.meshgrid(np.arange(3.8, 4.2, 0.03), np.arange(1.6, 2.4, 0.03), [0.3, 0.5])
    pillar = np.column_stack([px.ravel(), py.ravel(), pz.ravel()])
    ceiling = ground + np.array([0.0, 0.0, 2.5])
    stamp = ros.node.get_clock().now().to_msg()
    cloud = cloud_msg(np.concatenate([ground, pillar, ceiling]), 'map', stamp)
    latched_map(ros, cloud, topic='/cloud_map', msg_type=type(cloud))
    plans = ros.collect(Path, 'plan', qos.latched())
    client = start_navigator(ros, launch, map_source='cloud', align_yaw=False)
    wait_until(lambda: robot.odom.get_subscription_count() > 0, 30, 'no pose subscriber')
    result = result_of(send(client, target(5.5, 2.0)), timeout=120)
    assert result.outcome == GoTo.Result.OUTCOME_REACHED, result.message
    waypoints = [(p.pose.position.x, p.pose.position.y) for p in plans[-1].poses]
    assert min(math.dist(w, (4.0, 2.0)) for w in waypoints) > 0.2 + 0.3  # around the pillar
    for x, y in robot.trail:
        assert not (3.8 <= x <= 4.2 and 1.6 <= y <= 2.4), 'drove through the pillar'


def test_a_robot_that_cannot_move_is_reported_stuck(ros, launch, robot):
    latched_map(ros, grid_msg(room()))
    robot.body.blocked = True
    client = start_navigator(ros, launch, **{'follower.progress_window_s': 2.0})
    wait_until(lambda: robot.odom.get_subscription_count() > 0, 30, 'no pose subscriber')
    result = result_of(send(client, target(3.5, 2.0)), timeout=30)
    assert result.outcome == GoTo.Result.OUTCOME_FAILED
    assert 'no progress' in result.message
    wait_until(lambda: robot.commands[-1] == (0.0, 0.0), 5, 'robot not stopped')


def outcome_records(ros) -> list:
    return ros.collect(String, 'navigation/outcome', qos.latched(10))


def test_refusals_before_and_after_a_reached_goal_are_refused_with_their_reason(ros, launch, robot):
    latched_map(ros, grid_msg(room()))
    records = outcome_records(ros)
    client = start_navigator(ros, launch, snap_radius_m=0.2)
    wait_until(lambda: robot.odom.get_subscription_count() > 0, 30, 'no pose subscriber')
    wait_until(lambda: len(robot.trail) > 10, 10, 'simulation not running')

    def refused_each() -> None:
        for goal, reason in REFUSALS:
            result = result_of(send(client, goal))
            assert (result.outcome, reason in result.message) == (
                GoTo.Result.OUTCOME_REFUSED,
                True,
            ), (goal.target.pose, result.outcome, result.message)

    refused_each()
    assert all(command == (0.0, 0.0) for command in robot.commands)
    reached = result_of(send(client, target(2.6, 2.0)), timeout=60)
    assert reached.outcome == GoTo.Result.OUTCOME_REACHED, reached.message
    assert reached.message.startswith('reached')
    refused_each()  # the log call after a reached goal once raised here

    # The reasoner's client publishes one outcome record per goal, with the reason.
    with ros.paused() as node:
        navigation = NavigationClient(node, 'go_to', 5.0, 10.0, 60.0)
        probe = ActionClient(node, GoTo, 'go_to')
    connect(probe)  # discovery done, responses will arrive
    for count, (goal, _) in enumerate(REFUSALS, start=1):
        navigation.send(goal.target, {'question': f'q{count}'})
        wait_until(lambda n=count: len(records) == n, 30, f'no outcome record for goal {count}')
    for (_, reason), msg in zip(REFUSALS, records, strict=True):
        record = json.loads(msg.data)
        assert (record['outcome'], reason in record['message']) == ('refused', True), record


def test_a_slightly_unnormalised_orientation_is_forwarded_normalised(ros, launch, robot):
    latched_map(ros, grid_msg(room()))
    goals = ros.collect(PoseStamped, 'goal_pose')
    client = start_navigator(ros, launch, backend='goal_topic')
    wait_until(lambda: robot.odom.get_subscription_count() > 0, 30, 'no pose subscriber')
    handle = send(client, oriented(target(3.0, 2.0), 0.0, 0.0, 0.6 * 1.004, 0.8 * 1.004))
    wait_until(lambda: goals, 10, 'no goal forwarded')
    o = goals[0].pose.orientation
    assert (o.x, o.y, o.z, o.w) == pytest.approx((0.0, 0.0, 0.6, 0.8))
    wait_until(handle.cancel_goal_async().done, 10, 'cancel not answered')
    assert result_of(handle).outcome == GoTo.Result.OUTCOME_CANCELED


def test_a_remembered_target_needs_a_known_map_epoch_and_is_driven_in_it(ros, launch, robot):
    latched_map(ros, grid_msg(room()))
    goals = ros.collect(PoseStamped, 'goal_pose')
    records = outcome_records(ros)
    client = start_navigator(ros, launch, backend='goal_topic', input_wait_s=1.0)
    wait_until(lambda: robot.odom.get_subscription_count() > 0, 30, 'no pose subscriber')

    # Nothing says which epoch the map is in yet: a remembered target cannot be trusted.
    unknown = result_of(send(client, remembered(target(3.0, 2.0), 'tour', 2)))
    assert unknown.outcome == GoTo.Result.OUTCOME_REFUSED
    assert 'no current map epoch' in unknown.message
    assert goals == []  # nothing was forwarded

    # The reasoner's client records a stale target's outcome with its evidence's epoch.
    stats = ros.node.create_publisher(String, 'capture/stats', qos.latched())
    stats.publish(String(data=json.dumps({'session': 'tour', 'map_epoch': 2, 'frames': 9})))
    with ros.paused() as node:
        navigation = NavigationClient(node, 'go_to', 5.0, 10.0, 60.0)
        probe = ActionClient(node, GoTo, 'go_to')
    connect(probe)  # discovery done, responses will arrive
    navigation.send(target(3.0, 2.0).target, {'question': 'where?'}, 'tour', 1)
    wait_until(lambda: records, 30, 'no outcome record')
    record = json.loads(records[0].data)
    assert (record['outcome'], record['session'], record['map_epoch']) == ('stale_epoch', 'tour', 1)
    assert goals == []

    # The current epoch's own memories, and goals that are not memories, are driven.
    memory_goal, plain_goal = remembered(target(3.0, 2.0), 'tour', 2), target(3.0, 2.5)
    for forwarded, goal in enumerate((memory_goal, plain_goal), start=1):
        handle = send(client, goal)
        wait_until(lambda n=forwarded: len(goals) == n, 10, 'goal not forwarded')
        wait_until(handle.cancel_goal_async().done, 10, 'cancel not answered')
        assert result_of(handle).outcome == GoTo.Result.OUTCOME_CANCELED
