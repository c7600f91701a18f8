# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""capture_node over real DDS: interpolation, extrinsic, keyframe policy, bad input."""

from __future__ import annotations

import math
import time

import cv2
import numpy as np
import pytest
from nav_msgs.msg import Odometry
from sensor_msgs.msg import CompressedImage, Image
from support.ros_harness import wait_until

from waymark_interfaces.msg import Keyframe
from waymark_ros import qos
from waymark_ros.conversions import ns_to_stamp

pytestmark = pytest.mark.dds

T0 = 1_768_471_200_000_000_000  # 2026-01-15T10:00:00Z
MS = 1_000_000


def odometry(stamp_ns: int, x: float, y: float = 0.0, yaw: float = 0.0, frame='map') -> Odometry:
    msg = Odometry()
    msg.header.stamp = ns_to_stamp(stamp_ns)
    msg.header.frame_id = frame
    msg.child_frame_id = 'base_link'
    msg.pose.pose.position.x, msg.pose.pose.position.y = x, y
    msg.pose.pose.orientation.z, msg.pose.pose.orientation.w = math.sin(yaw / 2), math.cos(yaw / 2)
    return msg


def jpeg_image(stamp_ns: int, data: bytes | None = None) -> CompressedImage:
    msg = CompressedImage()
    msg.header.stamp = ns_to_stamp(stamp_ns)
    msg.header.frame_id = 'camera'
    msg.format = 'jpeg'
    if data is None:
        picture = np.full((48, 64, 3), (stamp_ns // MS) % 255, np.uint8)
        data = cv2.imencode('.jpg', picture)[1].tobytes()
    msg.data = data
    return msg


@pytest.fixture
def capture(ros, launch):
    node = launch(
        'capture_node',
        reliable_input=True,
        session='test',
        max_pose_gap_s=0.2,
        camera_extrinsic=[0.25, 0.0, 0.5, 0.0, 0.0, 0.0, 1.0],
        **{
            'keyframe.min_interval_s': 0.0,
            'keyframe.max_interval_s': 0.0,
            'keyframe.min_distance_m': 0.35,
            'keyframe.min_rotation_deg': 30.0,
        },
    )
    profile = qos.sensor_input(True, 100)
    odom = ros.node.create_publisher(Odometry, '/odom', profile)
    images = ros.node.create_publisher(CompressedImage, '/camera/image/compressed', profile)
    keyframes = ros.collect(Keyframe, 'keyframes', qos.keyframes(100))
    stats = ros.latest_json('capture/stats')
    wait_until(
        lambda: odom.get_subscription_count() and images.get_subscription_count(),
        60,
        'capture_node did not subscribe',
    )
    wait_until(lambda: ros.node.count_publishers('keyframes') > 0, 60, 'no keyframe publisher')
    return node, odom, images, keyframes, stats


def test_interpolates_pose_at_image_stamp_and_applies_extrinsic(capture):
    node, odom, images, keyframes, _ = capture
    # Base moves along x at 1 m/s, poses every 100 ms; images fall between poses.
    for i in range(21):
        odom.publish(odometry(T0 + i * 100 * MS, x=0.1 * i))
    for stamp in (T0 + 50 * MS, T0 + 1_030 * MS, T0 + 1_980 * MS):
        images.publish(jpeg_image(stamp))
    wait_until(lambda: len(keyframes) == 3, 10, 'expected 3 keyframes')
    xs = [k.pose.pose.position.x for k in keyframes]
    # Base x at the image stamp plus the 0.25 m forward extrinsic.
    assert xs == pytest.approx([0.05 + 0.25, 1.03 + 0.25, 1.98 + 0.25], abs=1e-6)
    assert all(k.pose.pose.position.z == pytest.approx(0.5) for k in keyframes)
    assert [k.index for k in keyframes] == [0, 1, 2]
    assert all(k.session == 'test' and k.pose_valid for k in keyframes)
    assert keyframes[1].header.stamp.nanosec == (1_030 * MS) % 1_000_000_000
    assert node.running()


def test_keyframe_policy_skips_frames_that_add_nothing(capture):
    _, odom, images, keyframes, stats = capture
    for i in range(31):  # 3 m along x, then a turn in place
        odom.publish(odometry(T0 + i * 100 * MS, x=0.1 * i))
    for i in range(31, 41):
        odom.publish(odometry(T0 + i * 100 * MS, x=3.0, yaw=(i - 30) * 0.1))
    for i in range(40):  # an image every 100 ms, offset 10 ms from the poses
        images.publish(jpeg_image(T0 + (i * 100 + 10) * MS))
    # Travel: images every 0.1 m, a keyframe every 4th (>= 0.35 m) over 2.9 m: 8.
    # Turning in place to 0.9 rad: one more at 30 degrees.
    wait_until(lambda: len(keyframes) >= 9, 10, 'expected at least 9 keyframes')
    wait_until(lambda: stats.get('images_received') == 40, 10, 'images not all received')
    time.sleep(1.0)
    positions = [k.pose.pose.position.x for k in keyframes]
    assert len(keyframes) == 9
    assert [k.index for k in keyframes] == list(range(9))
    assert positions[:8] == pytest.approx([0.26 + 0.4 * i for i in range(8)])
    assert keyframes[8].pose.pose.orientation.z > math.sin(math.radians(30) / 2)


def test_bad_input_is_counted_and_skipped(capture):
    node, odom, images, keyframes, stats = capture
    for i in range(11):
        odom.publish(odometry(T0 + i * 100 * MS, x=0.1 * i))
    nan_pose = odometry(T0 + 1_100 * MS, x=float('nan'))
    odom.publish(nan_pose)
    odom.publish(odometry(T0 + 1_200 * MS, x=1.2, frame='odom'))  # wrong frame
    images.publish(jpeg_image(T0 + 150 * MS, data=b'\xff\xd8not a jpeg at all'))
    images.publish(jpeg_image(T0 + 5_000 * MS))  # no pose anywhere near
    images.publish(jpeg_image(T0 + 250 * MS))  # fine
    expected = {
        'images_received': 3,
        'poses_received': 13,
        'pose_invalid': 1,
        'pose_wrong_frame': 1,
        'image_undecodable': 1,
        'image_without_pose': 1,
    }
    # Topics are delivered independently: wait for every count, not just the images.
    wait_until(
        lambda: all(stats.get(k) == v for k, v in expected.items()), 10, f'counts {expected}'
    )
    wait_until(lambda: len(keyframes) == 1, 5, 'the valid image made no keyframe')
    assert keyframes[0].pose.pose.position.x == pytest.approx(0.25 + 0.25)
    assert node.running()


def test_time_going_backwards_resets_instead_of_crashing(capture):
    node, odom, images, keyframes, stats = capture
    for i in range(11):
        odom.publish(odometry(T0 + i * 100 * MS, x=0.1 * i))
    images.publish(jpeg_image(T0 + 500 * MS))
    wait_until(lambda: len(keyframes) == 1, 10, 'first keyframe missing')
    # The bag loops: time jumps back to T0 and the robot is back at the start.
    for i in range(11):
        odom.publish(odometry(T0 + i * 100 * MS, x=5.0 + 0.1 * i))
    images.publish(jpeg_image(T0 + 400 * MS))
    wait_until(lambda: len(keyframes) == 2, 10, 'no keyframe after the time jump')
    assert keyframes[1].pose.pose.position.x == pytest.approx(5.4 + 0.25)
    wait_until(lambda: stats.get('pose_time_reset') == 1, 5, 'reset not counted')
    assert stats['image_time_reset'] == 1
    assert node.running()


def test_raw_images_are_encoded_and_unknown_encodings_rejected(ros, launch):
    launch('capture_node', reliable_input=True, image_type='raw', image_topic='/camera/image_raw')
    profile = qos.sensor_input(True, 100)
    odom = ros.node.create_publisher(Odometry, '/odom', profile)
    images = ros.node.create_publisher(Image, '/camera/image_raw', profile)
    keyframes = ros.collect(Keyframe, 'keyframes', qos.keyframes(100))
    stats = ros.latest_json('capture/stats')
    wait_until(
        lambda: images.get_subscription_count() and odom.get_subscription_count(), 60, 'no subs'
    )
    wait_until(lambda: ros.node.count_publishers('keyframes') > 0, 60, 'no keyframe publisher')
    for i in range(3):
        odom.publish(odometry(T0 + i * 100 * MS, x=0.0))

    def raw(encoding: str, channels: int) -> Image:
        msg = Image(height=4, width=6, encoding=encoding, step=6 * channels)
        msg.header.stamp = ns_to_stamp(T0 + 100 * MS)
        msg.data = bytes(range(4 * 6 * channels))
        return msg

    images.publish(raw('yuv422_yuy2', 2))
    images.publish(raw('rgb8', 3))
    wait_until(lambda: len(keyframes) == 1, 10, 'raw image made no keyframe')
    decoded = cv2.imdecode(
        np.frombuffer(bytes(keyframes[0].image.data), np.uint8), cv2.IMREAD_COLOR
    )
    assert decoded.shape == (4, 6, 3)
    wait_until(lambda: stats.get('image_undecodable') == 1, 5, 'unsupported encoding not counted')


def test_images_ahead_of_their_poses_wait_for_them(capture):
    _, odom, images, keyframes, stats = capture
    # A fast replay can deliver a whole run of images before the matching poses.
    for i in range(10):
        images.publish(jpeg_image(T0 + (i * 400 + 10) * MS))
    for i in range(41):
        odom.publish(odometry(T0 + i * 100 * MS, x=0.1 * i))
    wait_until(lambda: len(keyframes) == 10, 10, 'held images not placed')
    xs = [k.pose.pose.position.x for k in keyframes]
    assert xs == pytest.approx([0.4 * i + 0.01 + 0.25 for i in range(10)])
    assert 'image_without_pose' not in stats


@pytest.mark.parametrize(
    ('parameters', 'reason'),
    [
        ({'image_type': 'jpeg'}, 'must be one of compressed, raw'),
        ({'max_pose_gap_s': -1.0}, 'max_pose_gap_s out of range'),
        ({'session': '../etc'}, 'invalid session name'),
        ({'camera_extrinsic': [0.0, 0.0, 0.0]}, 'needs 7 numbers'),
    ],
)
def test_bad_parameters_stop_the_node_with_a_clear_reason(launch, parameters, reason):
    node = launch('capture_node', **parameters)
    assert node.process.wait(timeout=30) == 2
    assert reason in node.log_tail()
