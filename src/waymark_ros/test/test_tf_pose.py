# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Poses from TF over real DDS (`pose_type: tf`), with tf2_msgs from the test-only stand-in
where tf2 is not installed: sim_base_node broadcasts its pose, navigator_node drives it by
the composed chain map -> odom -> base_link, and without tf2 a node says so and stops.
Where tf2_ros is installed its buffer answers the lookups: that path is tested with a
stand-in tf2_ros."""

from __future__ import annotations

import math
import sys
import types

import pytest
from geometry_msgs.msg import TransformStamped
from rclpy.action import ActionClient

from waymark.geometry import quaternion_from_yaw
from waymark.parameters.common import TfPoseParameters
from waymark_interfaces.action import GoTo
from waymark_ros.ros import qos
from waymark_ros.ros.conversions import NS_PER_S, ns_to_stamp, stamp_to_ns
from waymark_ros.ros.tf_pose import TfPoseInput
from waymark_testing.actions import connect, result_of, send
from waymark_testing.actions import go_to as target
from waymark_testing.navigation_worlds import START, grid_msg, latched_map, room
from waymark_testing.ros_harness import wait_until

pytestmark = pytest.mark.dds

ODOM_IN_MAP = (0.5, -0.25)  # a static map -> odom offset, so that the chain matters


def test_sim_base_broadcasts_its_pose_on_tf(ros, launch, tf2_env):
    from tf2_msgs.msg import TFMessage

    transforms = ros.collect(TFMessage, '/tf', qos.tf())
    launch('sim_base_node', initial_pose=[1.5, -2.0, 0.5], child_frame_id='body')
    wait_until(lambda: len(transforms) > 5, 30, 'nothing on /tf')
    [stamped] = transforms[-1].transforms
    assert (stamped.header.frame_id, stamped.child_frame_id) == ('map', 'body')
    t, r = stamped.transform.translation, stamped.transform.rotation
    assert (t.x, t.y, t.z) == pytest.approx((1.5, -2.0, 0.0))
    assert (r.x, r.y, r.z, r.w) == pytest.approx(quaternion_from_yaw(0.5))
    assert (stamped.header.stamp.sec, stamped.header.stamp.nanosec) != (0, 0)


@pytest.mark.parametrize('publish_tf', [True, False])
def test_sim_base_without_tf2_msgs_publishes_odometry_and_says_so_if_asked_for_tf(
    ros, launch, publish_tf
):
    from nav_msgs.msg import Odometry

    odometry = ros.collect(Odometry, '/odom')
    node = launch('sim_base_node', publish_tf=publish_tf)
    wait_until(lambda: odometry, 30, 'no odometry')
    wait_until(lambda: 'simulated base at' in node.log_tail(), 10, 'no start line')
    said = 'publish_tf: tf2_msgs is not installed' in node.log_tail()
    assert said is publish_tf and node.running()


def static_odom_frame(ros):
    """map -> odom on /tf_static, latched, as a localisation's static publisher does."""
    from tf2_msgs.msg import TFMessage

    stamped = TransformStamped(child_frame_id='odom')
    stamped.header.frame_id = 'map'
    stamped.header.stamp = ros.node.get_clock().now().to_msg()
    stamped.transform.translation.x, stamped.transform.translation.y = ODOM_IN_MAP
    stamped.transform.rotation.w = 1.0
    publisher = ros.node.create_publisher(TFMessage, '/tf_static', qos.tf_static())
    publisher.publish(TFMessage(transforms=[stamped]))
    return publisher


def test_the_navigator_drives_the_simulated_base_by_its_pose_from_tf(ros, launch, tf2_env):
    latched_map(ros, grid_msg(room()))
    static = static_odom_frame(ros)
    base = ros.latest_json('sim_base/stats')
    # The base's odometry goes where nobody listens: the pose can only come from TF.
    launch(
        'sim_base_node',
        frame_id='odom',
        odom_topic='/unread_odom',
        initial_pose=[START[0] - ODOM_IN_MAP[0], START[1] - ODOM_IN_MAP[1], 0.0],
    )
    launch(
        'navigator_node',
        pose_type='tf',
        odom_topic='/no_such_topic',
        goal_timeout_s=90.0,
        robot_radius_m=0.3,
        **{'tf_pose.child_frame': 'base_link', 'follower.max_linear': 0.8},
    )
    client = ActionClient(ros.node, GoTo, 'go_to')
    connect(client)
    wait_until(lambda: static.get_subscription_count() > 0, 30, 'no /tf_static listener')
    result = result_of(send(client, target(3.5, 3.0, math.pi / 2)), timeout=120)

    assert result.outcome == GoTo.Result.OUTCOME_REACHED, result.message
    final = result.final_pose
    assert final.header.frame_id == 'map'
    p = final.pose.position
    assert math.hypot(p.x - 3.5, p.y - 3.0) <= 0.25 + 0.05  # goal_tolerance_m, and a step
    # Where the base really is (in odom), moved into map by the static link: at the goal.
    wait_until(lambda: base.get('distance_m', 0) > 1.0, 10, 'no stats from sim_base_node')
    x, y = base['x'] + ODOM_IN_MAP[0], base['y'] + ODOM_IN_MAP[1]
    assert math.hypot(x - 3.5, y - 3.0) <= 0.25 + 0.05


def test_without_tf2_a_node_asked_for_tf_poses_stops_at_start_with_one_line(launch):
    node = launch('navigator_node', pose_type='tf')
    wait_until(lambda: not node.running(), 60, 'node did not exit')
    assert node.process.returncode == 2
    lines = [line for line in node.log_tail().splitlines() if 'cannot start' in line]
    assert len(lines) == 1
    assert 'needs the tf2_ros or the tf2_msgs Python package' in lines[0]


def test_a_tf_parent_frame_other_than_the_map_frame_is_refused(launch):
    node = launch('capture_node', pose_type='tf', map_frame='camera_init')
    wait_until(lambda: not node.running(), 60, 'node did not exit')
    assert node.process.returncode == 2
    assert "tf_pose.parent_frame 'map' is not map_frame 'camera_init'" in node.log_tail()


class FakeTf2Ros(types.ModuleType):
    """Test stand-in for tf2_ros (not installed here): a buffer that answers with the
    transform the test sets, or raises the error it sets."""

    class TransformException(Exception):  # noqa: N818 (tf2_ros's name)
        pass

    class TransformListener:
        def __init__(self, buffer, node, spin_thread=True) -> None:
            self.registered = True

        def unregister(self) -> None:
            self.registered = False

    def __init__(self) -> None:
        super().__init__('tf2_ros')
        fake = self
        self.answer: TransformStamped | Exception = FakeTf2Ros.TransformException('empty')
        self.lookups = 0

        class Buffer:
            def lookup_transform(self, target, source, when):
                assert (target, source) == ('map', 'base_link')
                fake.lookups += 1
                if isinstance(fake.answer, Exception):
                    raise fake.answer
                return fake.answer

            def clear(self) -> None:
                """Nothing is kept: the answer is the test's."""

        self.Buffer = Buffer


def test_with_tf2_ros_its_buffer_answers_and_old_or_missing_transforms_are_not_used(
    ros, monkeypatch
):
    fake = FakeTf2Ros()
    monkeypatch.setitem(sys.modules, 'tf2_ros', fake)
    poses = []
    settings = TfPoseParameters(rate_hz=50.0, max_age_s=0.5)
    with ros.paused() as node:
        source = TfPoseInput(node, settings, lambda *pose: poses.append(pose))
    try:
        fake.answer = FakeTf2Ros.TransformException(
            '"map" passed to lookupTransform does not exist'
        )
        wait_until(lambda: 'does not exist' in source.last_error, 5, 'lookup error not kept')
        assert not poses
        now = ros.node.get_clock().now().nanoseconds
        stamped = TransformStamped(child_frame_id='base_link')
        stamped.header.frame_id, stamped.header.stamp = 'map', ns_to_stamp(now - 2 * NS_PER_S)
        stamped.transform.translation.x, stamped.transform.rotation.w = 1.5, 1.0
        fake.answer = stamped
        wait_until(lambda: 's old (more than 0.5 s)' in source.last_error, 5, 'age not checked')
        assert not poses
        stamped.header.stamp = ns_to_stamp(now)
        wait_until(lambda: poses, 5, 'no pose from the buffer')
        wait_until(lambda: not source.last_error, 5, 'error not cleared')
        looked_up = fake.lookups
        wait_until(lambda: fake.lookups >= looked_up + 5, 5, 'the buffer not asked again')
        assert len(poses) == 1  # the same transform, looked up again, is handed on once
        header, pose, covariance = poses[0]
        assert header.frame_id == 'map' and stamp_to_ns(header.stamp) == now
        assert (pose.position.x, pose.orientation.w, covariance) == (1.5, 1.0, None)
    finally:
        with ros.paused():
            source.close()
