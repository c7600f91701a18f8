# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""sim_base_node over real DDS: odometry out, cmd_vel in, limits, timeout, walls, reset.

Where the robot ends up depends on when commands arrive, so distances are checked with a
tolerance for timing; the shape of its path does not, and is checked exactly (an arc stays
on its circle, a clamped command reports exactly the limit).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import pytest
from geometry_msgs.msg import Twist
from nav_msgs.msg import OccupancyGrid, Odometry
from std_msgs.msg import String
from std_srvs.srv import Trigger

from waymark.geometry import yaw_from_quaternion
from waymark_ros.ros import qos
from waymark_ros.tools.processes import stop_node
from waymark_testing.parameters import assert_refused, get_parameter, set_parameters
from waymark_testing.ros_harness import wait_for_subscriber, wait_until

pytestmark = pytest.mark.dds

COMMAND_RATE_HZ = 20.0


@dataclass
class Base:
    odometry: list
    stats: dict
    commands: object  # the test's cmd_vel publisher
    process: object = None  # sim_base_node's NodeProcess
    reports: list = field(default_factory=list)  # sim_base/stats, every 0.5 s of its timer

    def pose(self) -> tuple[float, float, float]:
        return pose_of(self.odometry[-1])

    def hold(self, v: float, w: float, seconds: float) -> float:
        """Send (v, w) as a controller does, repeatedly; returns how long it was sent."""
        start = time.monotonic()
        while time.monotonic() - start < seconds:
            self.send(v, w)
            time.sleep(1.0 / COMMAND_RATE_HZ)
        return time.monotonic() - start

    def send(self, v: float, w: float) -> None:
        msg = Twist()
        msg.linear.x, msg.angular.z = v, w
        self.commands.publish(msg)

    def wait_stopped(self, timeout_s: float = 10.0) -> None:
        """Until odometry shows zero velocity for a few messages in a row."""

        def stopped() -> bool:
            last = self.odometry[-5:]
            return len(last) == 5 and all(velocity_of(m) == (0.0, 0.0) for m in last)

        wait_until(stopped, timeout_s, 'base did not stop')

    def after(self, seconds: float) -> None:
        """Until odometry stamped `seconds` after the last one now has come: time that has
        passed for the node (its own clock), however slowly a loaded machine runs it."""
        until = stamp_s(self.odometry[-1]) + seconds
        wait_until(lambda: stamp_s(self.odometry[-1]) >= until, 30 + seconds, 'no odometry')

    def after_reports(self, count: int) -> None:
        """Until `count` more stats reports have come: for a base that publishes no
        odometry while idle, at least (count - 1) x 0.5 s of its timers have run."""
        until = len(self.reports) + count
        wait_until(lambda: len(self.reports) >= until, 30, 'no stats from sim_base_node')


def pose_of(msg: Odometry) -> tuple[float, float, float]:
    p, o = msg.pose.pose.position, msg.pose.pose.orientation
    return p.x, p.y, yaw_from_quaternion((o.x, o.y, o.z, o.w))


def stamp_s(msg: Odometry) -> float:
    return msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9


def velocity_of(msg: Odometry) -> tuple[float, float]:
    return msg.twist.twist.linear.x, msg.twist.twist.angular.z


def start_base(ros, launch, **parameters) -> Base:
    odometry = ros.collect(Odometry, '/odom')
    stats = ros.latest_json('sim_base/stats')
    reports = ros.collect(String, 'sim_base/stats', qos.latched())
    process = launch('sim_base_node', **parameters)
    commands = ros.node.create_publisher(Twist, 'cmd_vel', 10)
    wait_until(lambda: 'collisions' in stats, 30, 'no stats from sim_base_node')
    wait_for_subscriber(commands, 'cmd_vel subscriber')  # a single command must not be lost
    base = Base(odometry, stats, commands, process, reports)
    if parameters.get('publish_while_idle', True):
        wait_until(lambda: len(odometry) > 2, 10, 'no odometry')
    return base


def test_publishes_odometry_at_the_start_pose_while_idle(ros, launch):
    base = start_base(ros, launch, initial_pose=[1.5, -2.0, 0.5], child_frame_id='body')
    count = len(base.odometry)
    # It keeps publishing while standing still (50 Hz; a loaded machine may stall it).
    wait_until(lambda: len(base.odometry) >= count + 10, 30, 'no odometry while idle')
    msg = base.odometry[-1]
    assert msg.header.frame_id == 'map' and msg.child_frame_id == 'body'
    assert base.pose() == pytest.approx((1.5, -2.0, 0.5), abs=1e-9)
    assert velocity_of(msg) == (0.0, 0.0)
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec) != (0, 0)
    assert base.stats['distance_m'] == 0.0 and base.stats['collisions'] == 0


def test_a_constant_command_drives_an_exact_arc_for_as_long_as_it_is_sent(ros, launch):
    base = start_base(ros, launch, initial_pose=[1.0, 2.0, 0.0])
    sent_s = base.hold(0.5, 0.5, 2.0)  # radius 1 m around (1, 3)
    base.send(0.0, 0.0)
    base.wait_stopped()
    moving = [velocity_of(m) for m in base.odometry if velocity_of(m) != (0.0, 0.0)]
    assert moving and set(moving) == {(0.5, 0.5)}
    x, y, yaw = base.pose()
    assert math.hypot(x - 1.0, y - 3.0) == pytest.approx(1.0, abs=1e-6)  # on the circle
    assert (x, y) == pytest.approx((1.0 + math.sin(yaw), 3.0 - math.cos(yaw)), abs=1e-6)
    # Turned while told, and not on after: the command times out 0.5 s after the last one
    # arrived (0.5 s more for that one's delay). A loaded machine may stall the sender or
    # the node for part of the time, which shortens the turn.
    assert 0.5 * sent_s / 2 < yaw <= 0.5 * (sent_s + 1.0)
    # The arc's length.
    wait_until(lambda: abs(base.stats['distance_m'] - yaw) < 1e-6, 5, 'distance not the arc')


def test_stops_when_commands_stop_coming(ros, launch):
    base = start_base(ros, launch, command_timeout_s=0.5)
    base.send(1.0, 0.0)  # once, then nothing: as if the controller died
    wait_until(lambda: velocity_of(base.odometry[-1]) == (1.0, 0.0), 5, 'not moving')
    base.wait_stopped()
    x, y, _ = base.pose()
    # Driven at 1 m/s for the timeout; less only when the test machine stalls the node.
    assert 0.4 < x <= 0.5 + 1e-6 and y == pytest.approx(0.0, abs=1e-9)
    base.after(1.0)  # the behaviour under test: a second of silence on the node's clock
    assert base.pose()[0] == x  # and it stays stopped


def test_commands_beyond_the_limits_are_clamped(ros, launch):
    base = start_base(ros, launch, max_linear=0.5, max_angular=1.0)
    base.hold(5.0, -10.0, 0.5)
    base.hold(-5.0, 10.0, 0.5)
    base.send(0.0, 0.0)
    base.wait_stopped()
    moving = {velocity_of(m) for m in base.odometry} - {(0.0, 0.0)}
    assert moving == {(0.5, -1.0), (-0.5, 1.0)}
    assert base.stats['ignored_commands'] == 0


def test_non_finite_commands_are_ignored_and_do_not_keep_it_moving(ros, launch):
    base = start_base(ros, launch, command_timeout_s=0.5)
    base.send(0.5, 0.0)
    start = time.monotonic()
    bad = [(math.nan, 0.0), (0.0, math.inf), (-math.inf, math.nan)]
    sent = 0
    # Well past the command timeout, and enough of them however slowly this loop runs.
    while time.monotonic() - start < 1.5 or sent < 30:
        base.send(*bad[sent % len(bad)])
        sent += 1
        time.sleep(1.0 / COMMAND_RATE_HZ)
    base.wait_stopped()
    wait_until(lambda: base.stats['ignored_commands'] >= 20, 30, 'bad commands not seen')
    assert all(math.isfinite(v) for m in base.odometry for v in (*pose_of(m), *velocity_of(m)))
    x, y, yaw = base.pose()
    assert 0.2 < x <= 0.25 + 1e-6 and (y, yaw) == pytest.approx((0.0, 0.0), abs=1e-9)
    base.hold(0.5, 0.0, 0.3)  # still drives
    wait_until(lambda: base.pose()[0] > x + 0.05, 5, 'no longer drives after bad commands')


def test_publishes_only_while_moving_when_asked(ros, launch):
    base = start_base(ros, launch, publish_while_idle=False)
    base.after_reports(3)  # a second of its timers standing still
    assert len(base.odometry) <= 1  # at most the start pose, published once
    base.hold(0.5, 0.0, 0.4)
    base.send(0.0, 0.0)
    wait_until(lambda: base.odometry and velocity_of(base.odometry[-1]) == (0.0, 0.0), 5, 'no stop')
    count = len(base.odometry)
    base.after_reports(3)  # a second of its timers standing still
    assert len(base.odometry) == count and count > 5


def room_with_a_wall() -> OccupancyGrid:
    """10 m x 6 m at 5 cm; a wall across it from x = 4.95 m to 5.05 m."""
    cells = np.zeros((120, 200), dtype=np.int8)
    cells[:, 99:101] = 100
    msg = OccupancyGrid()
    msg.header.frame_id = 'map'
    msg.info.resolution = 0.05
    msg.info.height, msg.info.width = cells.shape
    msg.info.origin.orientation.w = 1.0
    msg.data = cells.ravel().tolist()
    return msg


def test_driving_into_a_wall_stops_at_it_and_counts_a_collision(ros, launch):
    publisher = ros.node.create_publisher(OccupancyGrid, '/map', qos.latched())
    publisher.publish(room_with_a_wall())
    base = start_base(ros, launch, collision_map=True, initial_pose=[3.0, 2.0, 0.0])
    wait_until(lambda: base.stats.get('map_loaded'), 30, 'map not received')
    base.hold(1.0, 0.0, 3.5)  # would reach x = 6.5 m without the wall
    base.wait_stopped()
    x, y, yaw = base.pose()
    face = 99 * float(np.float32(0.05))  # the wall's near face, at the float32 resolution
    assert face - 0.01 < x < face and (y, yaw) == pytest.approx((2.0, 0.0), abs=1e-9)
    assert max(pose_of(m)[0] for m in base.odometry) < face
    wait_until(lambda: base.stats['collisions'] >= 1, 5, 'no collision counted')
    assert base.stats['collisions'] == 1  # pushing on counts once
    assert base.stats['in_contact'] and base.stats['distance_m'] == pytest.approx(x - 3.0)
    base.hold(-0.5, 0.0, 0.4)  # back off, then run into it again
    base.hold(0.5, 0.0, 1.0)
    base.send(0.0, 0.0)
    wait_until(lambda: base.stats['collisions'] == 2, 5, 'second collision not counted')


def test_reset_puts_it_back_at_the_initial_pose(ros, launch):
    base = start_base(ros, launch, initial_pose=[-1.0, 0.5, 1.0])
    base.hold(1.0, 0.5, 0.5)
    base.send(0.0, 0.0)
    base.wait_stopped()
    assert math.dist(base.pose()[:2], (-1.0, 0.5)) > 0.3
    response = ros.call(Trigger, 'sim_base/reset', Trigger.Request())
    assert response.success and response.message == 'reset to the initial pose'
    wait_until(
        lambda: base.pose() == pytest.approx((-1.0, 0.5, 1.0), abs=1e-9), 5, 'not back at start'
    )
    wait_until(lambda: base.stats['distance_m'] == 0.0, 5, 'stats not cleared')


def test_a_bad_initial_pose_stops_the_node_at_start(launch):
    node = launch('sim_base_node', initial_pose=[1.0, 2.0])
    wait_until(lambda: not node.running(), 30, 'node did not exit')
    assert node.process.returncode == 2
    assert 'initial_pose must be 3 finite numbers' in node.log_tail()


def test_speed_limits_change_while_running_and_bad_changes_are_refused(ros, launch):
    base = start_base(ros, launch)
    results = set_parameters(ros, 'sim_base_node', {'max_linear': 0.3, 'max_angular': 0.5})
    assert all(result.successful for result in results.values()), results
    base.hold(1.0, 2.0, 1.0)
    assert velocity_of(base.odometry[-1]) == pytest.approx((0.3, 0.5))  # the new limits, at once

    refused = set_parameters(
        ros, 'sim_base_node', {'max_linear': 25.0, 'rate_hz': 10.0, 'publish_while_idle': 'no'}
    )
    assert_refused(refused['max_linear'], 'Parameter max_linear out of range')  # [0, 20]
    assert_refused(refused['rate_hz'], 'read-only')
    assert_refused(refused['publish_while_idle'], 'Wrong parameter type')
    assert get_parameter(ros, 'sim_base_node', 'max_linear') == 0.3
    base.hold(1.0, 0.0, 0.5)
    assert velocity_of(base.odometry[-1])[0] == pytest.approx(0.3)


# -- the Go1 driver's behaviour (driver_model) -----------------------------------------------


def moving_for(base: Base, seconds: float) -> bool:
    """True when every odometry message of the next `seconds` of the node's clock (its
    stamps) shows the base moving."""
    count = len(base.odometry)
    base.after(seconds)
    later = base.odometry[count:]
    return bool(later) and all(velocity_of(m) != (0.0, 0.0) for m in later)


def test_unitree_ros_keeps_the_last_command_when_its_zeroing_window_is_missed(ros, launch):
    base = start_base(
        ros, launch, driver_model='unitree_ros', miss_reset_window=True, command_timeout_s=0.4
    )
    base.send(0.5, 0.0)  # once, then silence: the publisher died
    wait_until(lambda: velocity_of(base.odometry[-1]) == (0.5, 0.0), 5, 'not moving')
    # Five times the driver's 0.4 s and still walking: nothing in the driver stops it.
    assert moving_for(base, 2.0)
    base.send(0.0, 0.0)  # only a command stops it
    base.wait_stopped()


def test_the_patched_driver_stops_after_its_timeout_however_late_its_check_runs(ros, launch):
    # A check every 50 ms can never land in a 2 ms window twice in a row; the patch does not
    # need it to.
    base = start_base(
        ros,
        launch,
        driver_model='unitree_ros_patched',
        reset_check_period_s=0.05,
        command_timeout_s=0.4,
    )
    base.send(0.5, 0.0)
    wait_until(lambda: velocity_of(base.odometry[-1]) == (0.5, 0.0), 5, 'not moving')
    base.wait_stopped()
    x = base.pose()[0]
    assert x >= 0.5 * 0.4 - 1e-6  # it walked on for the whole timeout first
    base.hold(0.5, 0.0, 0.3)  # and a new command drives it again
    wait_until(lambda: base.pose()[0] > x + 0.05, 5, 'no longer drives after the timeout')


def test_the_driver_lies_down_on_shutdown(ros, launch):
    base = start_base(
        ros, launch, driver_model='unitree_ros', miss_reset_window=True, command_timeout_s=0.4
    )
    base.send(0.5, 0.0)
    wait_until(lambda: velocity_of(base.odometry[-1]) == (0.5, 0.0), 5, 'not moving')
    count = len(base.odometry)
    assert stop_node(base.process, timeout_s=10.0) == 0
    wait_until(lambda: len(base.odometry) > count, 5, 'no odometry after the shutdown')
    assert velocity_of(base.odometry[-1]) == (0.0, 0.0)
