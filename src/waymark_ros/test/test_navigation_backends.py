# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The contract every navigator backend keeps, run against each of them over real DDS.

Each backend drives its own stand-in robot in the same room (support.navigation_worlds):
`internal` a unicycle by `cmd_vel`, `goal_topic` a unicycle that takes `goal_pose` goals
as the external planner would, `nav2` the NavigateToPose stand-in. Whatever drives, a
reachable goal is reached; an unsafe goal is refused with its reason and never handed on;
a cancel ends the goal canceled and stops what was driving; a remembered target from
another map epoch ends stale, before it is driven or while it is. The navigator is a
lifecycle node: it drives only while active, and deactivating it ends the goal being
driven and stops the drive.
"""

from __future__ import annotations

import json
import math

import pytest
from lifecycle_msgs.msg import Transition
from lifecycle_msgs.srv import ChangeState
from rclpy.action import ActionClient
from std_msgs.msg import String

from waymark.parameters.navigator import BACKENDS as BACKEND_CHOICES
from waymark_interfaces.action import GoTo
from waymark_ros.nodes.navigator.registry import BACKENDS, GOAL_TOPIC, INTERNAL, NAV2
from waymark_ros.ros import qos
from waymark_testing.actions import connect, result_of, send
from waymark_testing.actions import go_to as target
from waymark_testing.navigation_worlds import (
    BEHIND_WALL,
    HANG,
    REFUSALS,
    START,
    SimulatedRobot,
    grid_msg,
    latched_map,
    remembered,
    room,
)
from waymark_testing.parameters import assert_refused, get_parameter, set_parameters
from waymark_testing.ros_harness import wait_until

pytestmark = pytest.mark.dds

SLOW_GOAL_TIMEOUT_S = 180.0


class InternalWorld:
    """The unicycle, driven by the navigator's own cmd_vel."""

    backend = INTERNAL

    def __init__(self, ros) -> None:
        self.robot = SimulatedRobot(ros.node, *START)

    def hold(self) -> None:
        """From now on the robot never arrives, so a goal runs until it is ended."""
        self.robot.body.blocked = True

    def driven(self) -> bool:
        """Whether anything was ever sent to move the robot."""
        return any(command != (0.0, 0.0) for command in self.robot.commands)

    def stopped(self) -> bool:
        """Whether what drove the robot has been told to stop."""
        return self.robot.commands[-1] == (0.0, 0.0)

    def forget(self) -> None:
        """From now on, driven and stopped are about the goals that follow."""
        self.robot.commands.clear()

    def close(self) -> None:
        self.robot.stop()


class GoalTopicWorld(InternalWorld):
    """The unicycle, driven by the planner that takes the navigator's goal_pose."""

    backend = GOAL_TOPIC

    def __init__(self, ros) -> None:
        self.robot = SimulatedRobot(ros.node, *START, takes_goal_pose=True)

    def driven(self) -> bool:
        return bool(self.robot.goals)

    def stopped(self) -> bool:
        return True  # goal_pose has no stop: the planner keeps its last goal

    def forget(self) -> None:
        self.robot.goals.clear()


class Nav2World:
    """Nav2 and its robot, played by the NavigateToPose stand-in."""

    backend = NAV2

    def __init__(self, nav2) -> None:
        self.robot = nav2

    def hold(self) -> None:
        self.robot.mode = HANG

    def driven(self) -> bool:
        return bool(self.robot.goals)

    def stopped(self) -> bool:
        return self.robot.cancels == self.robot.accepted and self.robot.ended == ['canceled']

    def forget(self) -> None:
        for record in (self.robot.goals, self.robot.accepted, self.robot.cancels, self.robot.ended):
            record.clear()

    def close(self) -> None:
        pass  # the nav2 fixture closes the stand-in


@pytest.fixture(params=list(BACKENDS))
def world(request, ros):
    if request.param == NAV2:
        played = Nav2World(request.getfixturevalue('nav2'))
    else:
        played = {INTERNAL: InternalWorld, GOAL_TOPIC: GoalTopicWorld}[request.param](ros)
    yield played
    played.close()


def start_navigator(ros, launch, world, **parameters) -> ActionClient:
    latched_map(ros, grid_msg(room()))
    settings = {
        'backend': world.backend,
        'reliable_input': True,
        'goal_timeout_s': 60.0,
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
    if settings.get('autostart', True):
        wait_until(subscribed(world), 30, 'no pose subscriber')
    return client


def subscribed(world):
    return lambda: world.robot.odom.get_subscription_count() > 0


def change_state(ros, transition: int) -> bool:
    """A lifecycle transition of navigator_node, as `ros2 lifecycle set` asks for it."""
    request = ChangeState.Request()
    request.transition.id = transition
    return ros.call(ChangeState, '/navigator_node/change_state', request).success


def test_the_backend_choices_are_the_registered_backends():
    assert tuple(BACKENDS) == BACKEND_CHOICES


def test_a_reachable_goal_is_reached(ros, launch, world):
    client = start_navigator(ros, launch, world)
    distances: list[float] = []
    handle = send(
        client, target(3.5, 2.5), lambda f: distances.append(f.feedback.distance_remaining)
    )
    result = result_of(handle, timeout=60)
    assert result.outcome == GoTo.Result.OUTCOME_REACHED, result.message
    assert result.message.startswith('reached')
    final = result.final_pose.pose.position
    assert math.dist((final.x, final.y), (3.5, 2.5)) <= 0.25 + 0.05
    assert distances and distances[-1] < distances[0]


def test_unsafe_goals_are_refused_with_their_reason_and_never_driven(ros, launch, world):
    client = start_navigator(ros, launch, world, snap_radius_m=0.2)
    for goal, reason in REFUSALS:
        result = result_of(send(client, goal))
        assert (result.outcome, reason in result.message) == (
            GoTo.Result.OUTCOME_REFUSED,
            True,
        ), (goal.target.pose, result.outcome, result.message)
    assert not world.driven()


def test_a_cancel_ends_the_goal_canceled_and_stops_the_drive(ros, launch, world):
    world.hold()
    client = start_navigator(ros, launch, world)
    handle = send(client, target(*BEHIND_WALL))
    wait_until(world.driven, 30, 'the goal was never driven')
    cancel = handle.cancel_goal_async()
    wait_until(cancel.done, 10, 'cancel not answered')
    assert result_of(handle).outcome == GoTo.Result.OUTCOME_CANCELED
    wait_until(world.stopped, 10, 'the drive was not stopped')


def test_a_target_from_another_map_epoch_ends_stale(ros, launch, world):
    client = start_navigator(ros, launch, world)
    stats = ros.node.create_publisher(String, 'capture/stats', qos.latched())
    stats.publish(String(data=json.dumps({'session': 'tour', 'map_epoch': 2, 'frames': 9})))
    for session, epoch in (('tour', 1), ('tour', 3), ('yesterday', 2)):
        result = result_of(send(client, remembered(target(3.0, 2.0), session, epoch)))
        assert result.outcome == GoTo.Result.OUTCOME_STALE_EPOCH, result.message
        assert f'session {session} map epoch {epoch}' in result.message
        assert 'session tour epoch 2' in result.message
    assert not world.driven()

    # The map moves to a new epoch while a remembered target is being driven to.
    world.hold()
    handle = send(client, remembered(target(*BEHIND_WALL), 'tour', 2))
    wait_until(world.driven, 30, 'the goal was never driven')
    stats.publish(String(data=json.dumps({'session': 'tour', 'map_epoch': 3})))
    result = result_of(handle)
    assert result.outcome == GoTo.Result.OUTCOME_STALE_EPOCH, result.message
    assert 'the map is now session tour epoch 3' in result.message
    wait_until(world.stopped, 10, 'the drive was not stopped')


def test_goals_are_driven_only_while_the_navigator_is_active(ros, launch, world):
    client = start_navigator(ros, launch, world, autostart=False)
    for transition in (None, Transition.TRANSITION_CONFIGURE):  # unconfigured, then inactive
        if transition is not None:
            assert change_state(ros, transition)
        result = result_of(send(client, target(3.5, 2.5)))
        assert (result.outcome, result.message) == (
            GoTo.Result.OUTCOME_REFUSED,
            'navigator_node is not active',
        )
    assert not world.driven()

    assert change_state(ros, Transition.TRANSITION_ACTIVATE)
    wait_until(subscribed(world), 30, 'no pose subscriber')
    result = result_of(send(client, target(3.5, 2.5)), timeout=60)
    assert result.outcome == GoTo.Result.OUTCOME_REACHED, result.message

    # Deactivated mid-drive: the goal ends canceled, with a result, and the drive stops.
    world.hold()
    world.forget()
    handle = send(client, target(*BEHIND_WALL))
    wait_until(world.driven, 30, 'the goal was never driven')
    assert change_state(ros, Transition.TRANSITION_DEACTIVATE)
    result = result_of(handle)
    assert result.outcome == GoTo.Result.OUTCOME_CANCELED, result.message
    assert 'navigator_node is not active' in result.message
    wait_until(world.stopped, 10, 'the drive was not stopped')
    assert result_of(send(client, target(3.5, 2.5))).outcome == GoTo.Result.OUTCOME_REFUSED
    assert change_state(ros, Transition.TRANSITION_CLEANUP)


def test_speed_limit_and_goal_tolerance_change_on_a_running_navigator(ros, launch):
    world = InternalWorld(ros)
    try:
        # The stand-in robot steps once per timer tick, so on a loaded machine it moves
        # slower than the wall clock; the slow second leg (0.2 m/s and a turn to face the
        # goal's yaw) gets a goal timeout to match.
        client = start_navigator(ros, launch, world, goal_timeout_s=SLOW_GOAL_TIMEOUT_S)
        result = result_of(send(client, target(3.5, 2.5)), timeout=SLOW_GOAL_TIMEOUT_S + 30)
        assert result.outcome == GoTo.Result.OUTCOME_REACHED, result.message
        assert max(linear for linear, _ in world.robot.commands) > 0.4

        refused = set_parameters(
            ros,
            'navigator_node',
            {'follower.max_linear': 50.0, 'backend': 'nav2', 'goal_tolerance_m': 0.5},
        )
        assert_refused(refused['follower.max_linear'], 'out of range')
        assert_refused(refused['backend'], 'read-only')
        assert_refused(refused['goal_tolerance_m'], 'goal_tolerance_m must be <= lookahead_m')
        changed = set_parameters(
            ros, 'navigator_node', {'follower.max_linear': 0.2, 'goal_tolerance_m': 0.4}
        )
        assert all(change.successful for change in changed.values()), changed
        assert get_parameter(ros, 'navigator_node', 'follower.max_linear') == 0.2

        world.forget()
        result = result_of(send(client, target(*START)), timeout=SLOW_GOAL_TIMEOUT_S + 30)
        assert result.outcome == GoTo.Result.OUTCOME_REACHED, result.message
        assert max(linear for linear, _ in world.robot.commands) <= 0.2 + 1e-9
        final = result.final_pose.pose.position
        # Arrived at the new tolerance: farther out than the old one (0.25) allows.
        assert 0.3 < math.dist((final.x, final.y), START) <= 0.4 + 0.05
    finally:
        world.close()
