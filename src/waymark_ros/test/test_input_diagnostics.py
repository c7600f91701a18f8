# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Silent inputs over real DDS: capture_node and navigator_node say on the console and in
/diagnostics ("<node>: <input> input") which expected stream has been silent for
diagnostics.input_timeout_s, and say when it is back."""

from __future__ import annotations

import pytest
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from nav_msgs.msg import Odometry
from sensor_msgs.msg import CompressedImage

from waymark_ros.ros import qos
from waymark_testing.navigation_worlds import grid_msg, latched_map, room
from waymark_testing.ros_harness import wait_until

pytestmark = pytest.mark.dds

FAST = {'diagnostics.input_timeout_s': 1.0, 'diagnostics.repeat_s': 1.0}


def status_of(diagnostics: list, name: str) -> DiagnosticStatus | None:
    for array in reversed(diagnostics):
        for status in array.status:
            if status.name == name:
                return status
    return None


def wait_for_status(diagnostics: list, name: str, level, text: str) -> DiagnosticStatus:
    def seen() -> bool:
        status = status_of(diagnostics, name)
        return status is not None and status.level == level and text in status.message

    wait_until(seen, 30, f'no {name!r} status {level!r} saying {text!r}')
    return status_of(diagnostics, name)


def publish_every(ros, publisher, make, period_s: float = 0.1):
    def tick() -> None:
        publisher.publish(make(ros.node.get_clock().now().to_msg()))

    return ros.node.create_timer(period_s, tick)


def image(stamp) -> CompressedImage:
    msg = CompressedImage(format='jpeg', data=b'\xff\xd8 not decoded unless a keyframe')
    msg.header.stamp = stamp
    return msg


def odometry(stamp) -> Odometry:
    msg = Odometry(child_frame_id='base_link')
    msg.header.stamp, msg.header.frame_id = stamp, 'map'
    msg.pose.pose.position.x = msg.pose.pose.position.y = 2.0
    msg.pose.pose.orientation.w = 1.0
    return msg


def test_capture_reports_a_silent_camera_and_pose_and_their_recovery(ros, launch):
    diagnostics = ros.collect(DiagnosticArray, '/diagnostics', 100)
    node = launch('capture_node', image_topic='/cam/compressed', pose_topic='/slam/odom', **FAST)
    image_input, pose_input = 'capture_node: image input', 'capture_node: pose input'
    silent = wait_for_status(diagnostics, image_input, DiagnosticStatus.WARN, 'no image on')
    assert silent.message.startswith('no image on /cam/compressed for ')
    assert silent.message.endswith(' s (none yet)')
    assert silent.hardware_id == '/cam/compressed'
    wait_for_status(diagnostics, pose_input, DiagnosticStatus.WARN, 'no pose on /slam/odom for')
    assert status_of(diagnostics, 'capture_node: capture') is not None  # the overall one too
    wait_until(lambda: 'no image on /cam/compressed for' in node.log_tail(), 10, 'no warning')

    images = ros.node.create_publisher(
        CompressedImage, '/cam/compressed', qos.sensor_input(False, 10)
    )
    timer = publish_every(ros, images, image)
    wait_for_status(diagnostics, image_input, DiagnosticStatus.OK, 'receiving')
    wait_until(
        lambda: 'image on /cam/compressed again, after' in node.log_tail(), 10, 'no recovery line'
    )
    assert status_of(diagnostics, pose_input).level == DiagnosticStatus.WARN  # still silent
    ros.node.destroy_timer(timer)
    wait_for_status(diagnostics, image_input, DiagnosticStatus.WARN, 'no image on /cam/compressed')
    assert '(none yet)' not in status_of(diagnostics, image_input).message


def test_the_navigator_reports_no_map_and_a_silent_pose_until_they_come(ros, launch):
    diagnostics = ros.collect(DiagnosticArray, '/diagnostics', 100)
    node = launch('navigator_node', odom_topic='/slam/odom', **FAST)
    map_input, pose_input = 'navigator_node: map input', 'navigator_node: pose input'
    wait_for_status(diagnostics, map_input, DiagnosticStatus.WARN, 'no map on /map for')
    wait_for_status(diagnostics, pose_input, DiagnosticStatus.WARN, 'no pose on /slam/odom for')
    wait_until(lambda: 'no pose on /slam/odom for' in node.log_tail(), 10, 'no warning')

    latched_map(ros, grid_msg(room()))
    poses = ros.node.create_publisher(Odometry, '/slam/odom', qos.state_input(False, 10))
    publish_every(ros, poses, odometry)
    wait_for_status(diagnostics, pose_input, DiagnosticStatus.OK, 'receiving')
    wait_for_status(diagnostics, map_input, DiagnosticStatus.OK, 'receiving')
    wait_until(lambda: 'map on /map again, after' in node.log_tail(), 10, 'no recovery line')
    # A latched map comes once: its silence since is no fault.
    last = diagnostics[-1].header.stamp.sec
    wait_until(lambda: diagnostics[-1].header.stamp.sec >= last + 2, 10, 'diagnostics stopped')
    assert status_of(diagnostics, map_input).level == DiagnosticStatus.OK


def test_the_navigator_says_why_a_pose_from_tf_is_missing(ros, launch, tf2_env):
    diagnostics = ros.collect(DiagnosticArray, '/diagnostics', 100)
    launch('navigator_node', pose_type='tf', **FAST)
    status = wait_for_status(
        diagnostics,
        'navigator_node: pose input',
        DiagnosticStatus.WARN,
        'no pose on TF map -> base_link for',
    )
    assert 'no transforms received yet' in status.message
