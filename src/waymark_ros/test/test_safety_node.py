# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""safety_node over real DDS, in front of sim_base_node: watchdog, e-stop, local stop,
limits; and navigator_node's e-stop and its watch on safety_node, driving the base through
safety_node.

sim_base_node plays the Go1's driver as released (`driver_model: unitree_ros`) with its
zeroing window missed, as on a busy executor: it walks on at the last command for as long
as no other comes, so whatever stops the base is safety_node.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import Twist
from nav_msgs.msg import Odometry
from rclpy.action import ActionClient
from sensor_msgs.msg import PointCloud2
from std_msgs.msg import Bool

from waymark.geometry import yaw_from_quaternion
from waymark.parameters.navigator import NavigatorParameters
from waymark_interfaces.action import GoTo
from waymark_ros.ros import qos
from waymark_ros.ros.navigation_msgs import cloud_msg
from waymark_ros.ros.spin import EXIT_START_FAILED
from waymark_ros.tools.processes import stop_node
from waymark_testing.actions import connect, result_of, send
from waymark_testing.actions import go_to as target
from waymark_testing.fake_tf2_ros import install as install_fake_tf2_ros
from waymark_testing.navigation_worlds import START, SimulatedRobot, grid_msg, latched_map, room
from waymark_testing.ros_harness import wait_for_subscriber, wait_until

pytestmark = pytest.mark.dds

DRIVER = {'driver_model': 'unitree_ros', 'miss_reset_window': True, 'command_timeout_s': 0.4}
PATCHED_DRIVER = {'driver_model': 'unitree_ros_patched', 'command_timeout_s': 0.4}
COMMAND_PERIOD_S = 0.05
CLOUD_PERIOD_S = 0.1
# A 0.3 m box 0.5 m ahead, seen from a body 0.3 m above the floor: its top is at z = 0.
BOX = np.array(
    [[0.5 + dx, dy, dz] for dx in (0.0, 0.1) for dy in (-0.1, 0.1) for dz in (-0.2, 0.0)]
)
FLOOR = np.array([[x, y, -0.3] for x in (0.4, 0.6, 0.8) for y in (-0.2, 0.0, 0.2)])


@dataclass
class Chain:
    """sim_base_node behind safety_node; the test plays the navigator on cmd_vel_nav."""

    odometry: list
    state: dict
    commands: object
    safety: object  # safety_node's NodeProcess
    command: tuple[float, float] | None = None  # sent every COMMAND_PERIOD_S while set
    timers: list = field(default_factory=list)

    def send(self, v: float, w: float) -> None:
        msg = Twist()
        msg.linear.x, msg.angular.z = v, w
        self.commands.publish(msg)

    def velocity(self) -> tuple[float, float]:
        return velocity_of(self.odometry[-1])

    def pose(self) -> tuple[float, float, float]:
        return pose_of(self.odometry[-1])

    def wait_velocity(self, condition, what: str, timeout_s: float = 10.0) -> None:
        """Until the base's last few odometry messages all meet `condition`."""

        def met() -> bool:
            last = self.odometry[-5:]
            return len(last) == 5 and all(condition(velocity_of(m)) for m in last)

        wait_until(met, timeout_s, what)

    def hold(self, seconds: float) -> None:
        """Until odometry stamped `seconds` after the last one now has come: time that has
        passed for the base (its own clock), however slowly a loaded machine runs it."""
        until = stamp_s(self.odometry[-1]) + seconds
        wait_until(lambda: stamp_s(self.odometry[-1]) >= until, 30 + seconds, 'no odometry')


def stamp_s(msg: Odometry) -> float:
    return msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9


def pose_of(msg: Odometry) -> tuple[float, float, float]:
    p, o = msg.pose.pose.position, msg.pose.pose.orientation
    return p.x, p.y, yaw_from_quaternion((o.x, o.y, o.z, o.w))


def velocity_of(msg: Odometry) -> tuple[float, float]:
    return msg.twist.twist.linear.x, msg.twist.twist.angular.z


def start_chain(ros, launch, base: dict | None = None, **safety) -> Chain:
    odometry = ros.collect(Odometry, '/odom')
    state = ros.latest_json('safety/state')
    launch('sim_base_node', **(DRIVER | (base or {})))
    process = launch('safety_node', **safety)
    commands = ros.node.create_publisher(Twist, 'cmd_vel_nav', qos.commands())
    wait_until(lambda: 'reasons' in state, 30, 'no state from safety_node')
    wait_until(lambda: len(odometry) > 2, 30, 'no odometry')
    wait_for_subscriber(commands, 'safety_node on cmd_vel_nav')
    chain = Chain(odometry, state, commands, process)

    def tick() -> None:
        if chain.command is not None:
            chain.send(*chain.command)

    chain.timers.append(ros.node.create_timer(COMMAND_PERIOD_S, tick))
    return chain


def latched_e_stop(ros):
    publisher = ros.node.create_publisher(Bool, 'e_stop', qos.latched())
    return lambda engaged: publisher.publish(Bool(data=engaged))


def test_a_loop_from_its_output_to_its_input_is_refused_at_start(launch):
    node = launch('safety_node', input_topic='cmd_vel', output_topic='cmd_vel')
    assert node.process.wait(timeout=60) == EXIT_START_FAILED
    log = node.log_tail(50)
    fatal = [line for line in log.splitlines() if 'FATAL' in line]
    assert len(fatal) == 1 and "are both 'cmd_vel'" in fatal[0], log
    assert 'Traceback' not in log


def test_the_watchdog_stops_the_base_when_the_sender_dies(ros, launch):
    chain = start_chain(ros, launch, command_timeout_s=0.5)
    chain.command = (0.4, 0.0)
    chain.wait_velocity(lambda v: v == (0.4, 0.0), 'not driving at 0.4 m/s')
    chain.command = None
    ros.node.destroy_publisher(chain.commands)  # as if the navigator died
    x_last = chain.pose()[0]
    chain.wait_velocity(lambda v: v == (0.0, 0.0), 'base did not stop', timeout_s=5.0)
    x_stop = chain.pose()[0]
    # At 0.4 m/s for the 0.5 s timeout, one 20 Hz step and delivery: well under 0.4 m.
    # Without safety_node the base would go on for 30 s (12 m).
    assert x_stop - x_last < 0.4
    assert chain.state['reasons'] == ['no command']
    chain.hold(1.0)  # the behaviour under test: a second of silence
    assert chain.pose()[0] == pytest.approx(x_stop, abs=1e-9)  # and stays stopped


def test_speed_and_acceleration_are_limited_and_non_finite_commands_stop(ros, launch):
    # Every step safety_node sends, in order: a deep queue so a slow test executor loses none.
    sent = ros.collect(Twist, 'cmd_vel', qos.commands(depth=1000))
    # A long watchdog: this test's own command stream stalls on a loaded machine, and a
    # watchdog stop in the middle is not what is checked here.
    limits = {'limits.max_linear': 0.5, 'limits.max_linear_accel': 1.0}
    chain = start_chain(ros, launch, command_timeout_s=5.0, **limits)
    chain.command = (3.0, -5.0)
    chain.wait_velocity(lambda v: v == (0.5, -1.0), 'not at the limits')
    samples = [velocity_of(m) for m in chain.odometry]
    assert all(abs(v) <= 0.5 + 1e-9 and abs(w) <= 1.0 + 1e-9 for v, w in samples)
    # Ramped at 1 m/s^2: one step spans at most two periods at the default 20 Hz, so no
    # step speeds up by more than 0.1 m/s, however late it comes. Checked on the sequence
    # sent rather than on stamps, which carry every process's scheduling jitter; a jump
    # straight to the limit fails it.
    wait_until(lambda: 0.5 in [msg.linear.x for msg in sent], 10, 'the limit never sent')
    speeds = [msg.linear.x for msg in sent]
    rises = [b - a for a, b in itertools.pairwise(speeds) if b > a]
    assert len(rises) >= 5 and max(rises) <= 1.0 * 2 / 20.0 + 1e-9, speeds
    chain.command = (math.nan, 0.3)
    chain.wait_velocity(lambda v: v == (0.0, 0.0), 'a non-finite command did not stop it')


def test_e_stop_halts_the_base_until_released_and_needs_a_new_command(ros, launch):
    chain = start_chain(ros, launch)
    e_stop = latched_e_stop(ros)
    chain.command = (0.3, 0.0)
    chain.wait_velocity(lambda v: v == (0.3, 0.0), 'not driving')
    e_stop(True)
    chain.wait_velocity(lambda v: v == (0.0, 0.0), 'e-stop did not stop the base')
    assert chain.state == {'e_stop': True, 'reasons': ['e-stop engaged'], 'local_stop': False}
    x = chain.pose()[0]
    chain.hold(1.5)  # the behaviour under test: commands keep coming, and are dropped
    assert chain.pose()[0] == pytest.approx(x, abs=1e-9)
    chain.command = None
    e_stop(False)
    wait_until(lambda: not chain.state['e_stop'], 10, 'e-stop not released')
    chain.hold(0.5)  # the behaviour under test: released, and no command since
    assert chain.pose()[0] == pytest.approx(x, abs=1e-9)  # nothing old is resumed
    chain.command = (0.3, 0.0)
    chain.wait_velocity(lambda v: v == (0.3, 0.0), 'no drive after the release')


def test_a_box_ahead_stops_forward_motion_until_it_clears_and_a_stale_cloud_stops_too(ros, launch):
    chain = start_chain(ros, launch, **{'local_stop.cloud_topic': '/body_cloud'})
    diagnostics = ros.collect(DiagnosticArray, '/diagnostics', 100)
    clouds = ros.node.create_publisher(PointCloud2, '/body_cloud', 10)
    scene = {'points': FLOOR, 'on': True}

    def publish_cloud() -> None:
        if scene['on']:
            stamp = ros.node.get_clock().now().to_msg()
            clouds.publish(cloud_msg(scene['points'], 'body', stamp))

    chain.timers.append(ros.node.create_timer(CLOUD_PERIOD_S, publish_cloud))
    chain.command = (0.3, 0.5)
    chain.wait_velocity(lambda v: v == (0.3, 0.5), 'not driving over a bare floor')
    scene['points'] = np.vstack([FLOOR, BOX])
    chain.wait_velocity(lambda v: v == (0.0, 0.5), 'forward motion not stopped by the box')
    assert chain.state['reasons'] == ['obstacle ahead']
    scene['points'] = FLOOR
    chain.wait_velocity(lambda v: v == (0.3, 0.5), 'did not resume once the box cleared')
    scene['on'] = False  # the sensor stops
    chain.wait_velocity(lambda v: v == (0.0, 0.5), 'a stale cloud did not stop forward motion')
    assert chain.state['reasons'] == ['no fresh cloud']

    def blind() -> bool:
        return any(
            s.name == 'safety_node: command gate'
            and s.level == DiagnosticStatus.ERROR
            and 'no fresh cloud on /body_cloud' in s.message
            for array in list(diagnostics)
            for s in array.status
        )

    wait_until(blind, 10, 'no diagnostic for the missing cloud')


def start_navigator(ros, launch, **parameters):
    """navigator_node in front of the chain, watching safety_node as it does by default."""
    launch(
        'navigator_node',
        cmd_vel_topic='cmd_vel_nav',
        reliable_input=True,
        robot_radius_m=0.3,
        safety_state_timeout_s=NavigatorParameters().safety_state_timeout_s,
        **parameters,
    )
    with ros.paused() as node:
        client = ActionClient(node, GoTo, 'go_to')
    connect(client)
    return client


def send_once_released(client, goal, timeout_s: float = 10.0):
    """Send `goal` until the navigator has heard the release too.

    The test sees the safety chain release before the navigator's own latched e-stop
    subscription does; a goal sent in between is rightly refused, so resend it."""
    deadline = time.monotonic() + timeout_s
    while True:
        handle = send(client, goal)
        result = handle.get_result_async()
        settle = time.monotonic() + 2.0  # a refusal ends the goal at once; a drive does not
        while not result.done() and time.monotonic() < settle:
            time.sleep(0.05)
        refused = result.done() and result.result().result.outcome == GoTo.Result.OUTCOME_REFUSED
        if not refused or time.monotonic() > deadline:
            return handle


def test_navigator_refuses_goals_while_e_stopped_and_aborts_the_running_one(ros, launch):
    latched_map(ros, grid_msg(room()))
    e_stop = latched_e_stop(ros)
    e_stop(True)
    chain = start_chain(ros, launch, base={'initial_pose': [*START, 0.0]})
    client = start_navigator(ros, launch)
    refused = result_of(send(client, target(3.5, 2.0)))
    assert refused.outcome == GoTo.Result.OUTCOME_REFUSED
    assert refused.message == 'e-stop engaged'
    chain.hold(0.5)  # the behaviour under test: a refused goal, and no drive after it
    assert chain.pose()[:2] == pytest.approx(START, abs=1e-9)  # the base never moved

    e_stop(False)
    wait_until(lambda: not chain.state['e_stop'], 10, 'e-stop not released')
    handle = send_once_released(client, target(8.0, 1.0))
    wait_until(lambda: chain.pose()[0] > START[0] + 0.3, 30, 'the goal did not drive the base')
    e_stop(True)
    aborted = result_of(handle, timeout=10)
    assert aborted.outcome == GoTo.Result.OUTCOME_CANCELED
    assert aborted.message == 'canceled: e-stop engaged'
    chain.wait_velocity(lambda v: v == (0.0, 0.0), 'base not stopped by the e-stop')

    e_stop(False)
    wait_until(lambda: not chain.state['e_stop'], 10, 'e-stop not released')
    reached = result_of(send_once_released(client, target(*START)), timeout=60)
    assert reached.outcome == GoTo.Result.OUTCOME_REACHED, reached.message


def test_navigator_stops_driving_while_safety_node_is_gone(ros, launch):
    """kill -9 of safety_node mid-drive: the navigator cancels the goal and refuses new ones
    until safety_node is back; the patched driver's own timeout stops the base."""
    latched_map(ros, grid_msg(room()))
    chain = start_chain(ros, launch, base={'initial_pose': [*START, 0.0], **PATCHED_DRIVER})
    client = start_navigator(ros, launch)
    handle = send(client, target(8.0, 1.0))
    wait_until(lambda: chain.pose()[0] > START[0] + 0.3, 30, 'the goal did not drive the base')
    chain.safety.process.kill()
    canceled = result_of(handle, timeout=10)
    assert canceled.outcome == GoTo.Result.OUTCOME_CANCELED
    assert canceled.message.startswith('canceled: no state from safety_node on safety/state')
    chain.wait_velocity(lambda v: v == (0.0, 0.0), 'the driver did not stop the base')
    refused = result_of(send(client, target(*START)), timeout=30)
    assert refused.outcome == GoTo.Result.OUTCOME_REFUSED
    assert 'no state from safety_node' in refused.message
    stopped_at = chain.pose()

    launch('safety_node')  # back: goals drive again
    wait_until(lambda: 'reasons' in chain.state, 30, 'no state from the restarted safety_node')
    reached = result_of(send_once_released(client, target(*START)), timeout=60)
    assert reached.outcome == GoTo.Result.OUTCOME_REACHED, reached.message
    assert chain.pose()[:2] != pytest.approx(stopped_at[:2], abs=0.05)


def test_navigator_sends_a_zero_twist_when_stopped_while_driving(ros, launch):
    """Ctrl-C while a goal drives: the navigator's last word on cmd_vel is a stop."""
    robot = SimulatedRobot(ros.node, *START)
    try:
        latched_map(ros, grid_msg(room()))
        navigator = launch('navigator_node', reliable_input=True, robot_radius_m=0.3)
        with ros.paused() as node:
            client = ActionClient(node, GoTo, 'go_to')
        connect(client)
        wait_until(lambda: robot.odom.get_subscription_count() > 0, 30, 'no pose subscriber')
        send(client, target(8.0, 1.0))
        wait_until(lambda: robot.command[0] > 0.2, 30, 'not driving')
        assert stop_node(navigator, timeout_s=30.0) == 0
        assert robot.commands[-1] == (0.0, 0.0)
    finally:
        robot.stop()


# The optical frame of a depth camera (z forward, x right, y down) in its level body frame.
OPTICAL_IN_BODY = (-0.5, 0.5, -0.5, 0.5)


def to_optical(points: np.ndarray) -> np.ndarray:
    """Body-frame points (x forward, y left, z up) as the camera's optical frame has them."""
    return np.column_stack([-points[:, 1], -points[:, 2], points[:, 0]])


def depth_chain(ros, launch, tmp_path, monkeypatch, scene: dict, **stop) -> Chain:
    """The chain with a depth camera's cloud of scene['points'] (body frame) published in
    its optical frame, stamped scene['frame'], and TF knowing body <- optical only."""
    install_fake_tf2_ros(tmp_path, monkeypatch, 'body', 'optical', (0.0, 0.0, 0.0), OPTICAL_IN_BODY)
    local_stop = {'cloud_topic': '/depth_cloud', 'frame_id': 'body', 'cloud_frame_id': 'optical'}
    parameters = {f'local_stop.{name}': value for name, value in (local_stop | stop).items()}
    chain = start_chain(ros, launch, **parameters)
    clouds = ros.node.create_publisher(PointCloud2, '/depth_cloud', 10)

    def publish_cloud() -> None:
        stamp = ros.node.get_clock().now().to_msg()
        clouds.publish(cloud_msg(to_optical(scene['points']), scene['frame'], stamp))

    chain.timers.append(ros.node.create_timer(CLOUD_PERIOD_S, publish_cloud))
    return chain


def test_a_depth_cameras_optical_cloud_is_moved_into_the_body_frame_by_tf(
    ros, launch, tmp_path, monkeypatch
):
    scene = {'points': FLOOR, 'frame': 'optical'}
    chain = depth_chain(ros, launch, tmp_path, monkeypatch, scene)
    chain.command = (0.3, 0.5)
    chain.wait_velocity(lambda v: v == (0.3, 0.5), 'a bare floor seen by the camera blocks')
    scene['points'] = np.vstack([FLOOR, BOX])
    chain.wait_velocity(lambda v: v == (0.0, 0.5), 'the box the camera sees did not stop it')
    assert chain.state['reasons'] == ['obstacle ahead']
    scene['points'] = FLOOR
    chain.wait_velocity(lambda v: v == (0.3, 0.5), 'not driving once the box is gone')
    scene['frame'] = 'somewhere_else'  # a cloud in a frame TF was not asked for: refused
    chain.wait_velocity(lambda v: v == (0.0, 0.5), 'a cloud in another frame did not stop it')
    assert chain.state['reasons'] == ['no fresh cloud']


def test_without_the_transform_the_cameras_cloud_keeps_forward_motion_stopped(
    ros, launch, tmp_path, monkeypatch
):
    scene = {'points': FLOOR, 'frame': 'no_such_frame'}
    chain = depth_chain(
        ros,
        launch,
        tmp_path,
        monkeypatch,
        scene,
        cloud_frame_id='no_such_frame',
        tf_timeout_s=1.0,
    )
    chain.command = (0.3, 0.5)
    chain.wait_velocity(lambda v: v == (0.0, 0.5), 'a cloud it cannot place let it drive')
    wait_until(
        lambda: 'no transform body -> no_such_frame' in chain.safety.log_tail(50),
        30,
        'the missing transform was not named',
    )
    assert chain.state['reasons'] == ['no fresh cloud']
