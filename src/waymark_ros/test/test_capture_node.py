# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""capture_node over real DDS: interpolation, extrinsic, keyframe policy, bad input."""

from __future__ import annotations

import importlib.util
import math
import re
import time

import cv2
import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import PoseWithCovarianceStamped
from nav_msgs.msg import Odometry
from sensor_msgs.msg import CameraInfo, CompressedImage, Image
from std_msgs.msg import Bool, Empty

from waymark_interfaces.msg import Keyframe
from waymark_ros.ros import qos
from waymark_ros.ros.conversions import ns_to_stamp, stamp_to_ns
from waymark_testing.fake_tf2_ros import install as install_fake_tf2_ros
from waymark_testing.parameters import assert_refused, get_parameter, set_parameters
from waymark_testing.ros_harness import wait_until

pytestmark = pytest.mark.dds

T0 = 1_768_471_200_000_000_000  # 2026-01-15T10:00:00Z
MS = 1_000_000
# No memory_node acknowledges keyframes here: capture would send its outbox again after
# 2 s, and the tests would count the resends.
NO_RESENDS = {'outbox.resend_initial_s': 600.0, 'outbox.resend_max_s': 600.0}


def odometry(stamp_ns: int, x: float, y: float = 0.0, yaw: float = 0.0, frame='map') -> Odometry:
    msg = Odometry()
    msg.header.stamp = ns_to_stamp(stamp_ns)
    msg.header.frame_id = frame
    msg.child_frame_id = 'base_link'
    msg.pose.pose.position.x, msg.pose.pose.position.y = x, y
    msg.pose.pose.orientation.z, msg.pose.pose.orientation.w = math.sin(yaw / 2), math.cos(yaw / 2)
    return msg


def wait_all_placed(stats: dict, keyframes: list, images: int) -> None:
    """Until capture_node's stats show all `images` received and none pending, and every
    keyframe they count has arrived: no later keyframe can come from these images."""
    wait_until(
        lambda: (
            stats.get('images_received') == images
            and stats.get('images_pending') == 0
            and stats.get('keyframes_published') == len(keyframes)
        ),
        20,
        f'{images} images not all placed, or their keyframes not all received',
    )


def assert_identity(pose) -> None:
    p, q = pose.position, pose.orientation
    assert (p.x, p.y, p.z, q.x, q.y, q.z, q.w) == (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)


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
        **NO_RESENDS,
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
    wait_all_placed(stats, keyframes, 40)
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
    # The image far from any pose is kept, but without a position: never a guessed one.
    wait_until(lambda: len(keyframes) == 2, 5, 'expected a located and an unlocated keyframe')
    by_validity = {k.pose_valid: k for k in keyframes}
    assert by_validity[True].pose.pose.position.x == pytest.approx(0.25 + 0.25)
    lost = by_validity[False]
    assert lost.header.stamp.sec == (T0 + 5_000 * MS) // 1_000_000_000
    assert_identity(lost.pose.pose)
    wait_until(lambda: stats.get('keyframes_pose_invalid') == 1, 5, 'invalid keyframe not counted')
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
    # Two topics: the image must not overtake the poses it is to be placed by.
    wait_until(
        lambda: 'pose time went backwards' in node.log_tail(), 10, 'the pose jump was not seen'
    )
    images.publish(jpeg_image(T0 + 400 * MS))
    wait_until(lambda: len(keyframes) == 2, 10, 'no keyframe after the time jump')
    assert keyframes[1].pose.pose.position.x == pytest.approx(5.4 + 0.25)
    assert [k.map_epoch for k in keyframes] == [0, 1]  # another timeline: another epoch
    # Stats come on a timer: one may show the pose reset and not yet the image's.
    wait_until(
        lambda: stats.get('pose_time_reset') == stats.get('image_time_reset') == 1,
        10,
        'resets not counted',
    )
    assert stats['map_epoch'] == 1
    assert node.running()


def test_raw_images_are_encoded_and_unknown_encodings_rejected(ros, launch):
    launch(
        'capture_node',
        reliable_input=True,
        image_type='raw',
        image_topic='/camera/image_raw',
        **NO_RESENDS,
    )
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


# Tracking quality, map epochs, diagnostics ----------------------------------------------
def pose_with_covariance(stamp_ns: int, x: float, variance: float = 0.0):
    msg = PoseWithCovarianceStamped()
    msg.header.stamp = ns_to_stamp(stamp_ns)
    msg.header.frame_id = 'map'
    msg.pose.pose.position.x = x
    msg.pose.pose.orientation.w = 1.0
    covariance = [0.0] * 36
    covariance[0] = covariance[7] = covariance[14] = variance
    msg.pose.covariance = covariance
    return msg


def since_t0_ms(keyframe) -> int:
    return (stamp_to_ns(keyframe.header.stamp) - T0) // MS


@pytest.fixture
def tracked(ros, launch):
    """capture_node with PoseWithCovarianceStamped poses, a tracking status and an epoch
    topic, keeping one keyframe per second while tracking is lost."""
    node = launch(
        'capture_node',
        **NO_RESENDS,
        reliable_input=True,
        session='tracked',
        pose_type='pose_with_covariance',
        pose_topic='/slam/pose',
        **{
            'keyframe.min_interval_s': 0.5,
            'keyframe.max_interval_s': 1.0,
            'keyframe.min_distance_m': 0.35,
            'tracking.max_position_variance': 1.0,
            'tracking.status_topic': '/slam/tracking_ok',
            'tracking.epoch_topic': '/slam/new_map',
            'diagnostics.input_timeout_s': 2.0,
        },
    )
    profile = qos.sensor_input(True, 100)
    topics = {
        'poses': ros.node.create_publisher(PoseWithCovarianceStamped, '/slam/pose', profile),
        'images': ros.node.create_publisher(CompressedImage, '/camera/image/compressed', profile),
        'status': ros.node.create_publisher(Bool, '/slam/tracking_ok', profile),
        'epoch': ros.node.create_publisher(Empty, '/slam/new_map', profile),
    }
    keyframes = ros.collect(Keyframe, 'keyframes', qos.keyframes(100))
    stats = ros.latest_json('capture/stats')
    diagnostics = ros.collect(DiagnosticArray, '/diagnostics', 100)
    wait_until(
        lambda: all(p.get_subscription_count() for p in topics.values()),
        60,
        'capture_node did not subscribe',
    )
    wait_until(lambda: ros.node.count_publishers('keyframes') > 0, 60, 'no keyframe publisher')
    return node, topics, keyframes, stats, diagnostics


def capture_status(diagnostics: list) -> DiagnosticStatus | None:
    for array in reversed(diagnostics):
        for status in array.status:
            if status.name == 'capture_node: capture':
                return status
    return None


def wait_for_diagnostic(diagnostics: list, level, text: str, timeout_s: float = 10):
    def seen() -> bool:
        status = capture_status(diagnostics)
        return status is not None and status.level == level and text in status.message

    wait_until(seen, timeout_s, f'no diagnostic {level!r} saying {text!r}')
    return capture_status(diagnostics)


def test_frames_seen_with_a_bad_covariance_are_kept_without_a_position(tracked):
    node, topics, keyframes, stats, _ = tracked
    # 1 m/s along x; SLAM reports 4 m^2 of position variance from 1.0 s to 2.9 s.
    for i in range(41):
        variance = 4.0 if 10 <= i <= 29 else 0.01
        topics['poses'].publish(pose_with_covariance(T0 + i * 100 * MS, 0.1 * i, variance))
        topics['images'].publish(jpeg_image(T0 + (i * 100 - 40) * MS))
    wait_until(lambda: stats.get('images_received') == 41, 10, 'images not all received')
    wait_until(lambda: len(keyframes) == 7, 10, 'expected 7 keyframes')
    lost = [k for k in keyframes if not k.pose_valid]
    # While lost, one keyframe per max_interval_s after the last one (0.46 s), with the
    # identity pose; the first located frame after the loss (2.96 s) is kept at once.
    assert [since_t0_ms(k) for k in lost] == [1460, 2460]
    for keyframe in lost:
        assert_identity(keyframe.pose.pose)
    located = [k for k in keyframes if k.pose_valid]
    assert [since_t0_ms(k) for k in located] == [-40, 460, 2960, 3460, 3960]
    # The pose before it (2.9 s) is not trusted: 2.96 s takes the nearest good one, 3.0 s.
    assert located[2].pose.pose.position.x == pytest.approx(3.0)
    assert [k.index for k in keyframes] == list(range(7))
    wait_until(lambda: stats.get('keyframes_pose_invalid') == 2, 5, 'invalid keyframes count')
    assert stats['pose_tracking_lost'] == 20 and stats['tracking_lost'] == ''
    assert node.running()


def test_tracking_status_topic_marks_frames_and_diagnostics_warn(tracked):
    _, topics, keyframes, stats, diagnostics = tracked
    topics['status'].publish(Bool(data=False))
    wait_until(
        lambda: stats.get('tracking_lost') == 'tracking status says lost', 10, 'status not read'
    )
    wait_for_diagnostic(diagnostics, DiagnosticStatus.WARN, 'tracking lost')
    for i in range(11):
        topics['poses'].publish(pose_with_covariance(T0 + i * 100 * MS, 0.1 * i))
    for i in range(10):
        topics['images'].publish(jpeg_image(T0 + (i * 100 + 50) * MS))
    wait_until(lambda: len(keyframes) == 1, 10, 'no keyframe while lost')
    wait_until(lambda: stats.get('images_pose_lost') == 10, 10, 'lost images not counted')
    assert not keyframes[0].pose_valid and len(keyframes) == 1  # one per max_interval_s
    assert_identity(keyframes[0].pose.pose)

    topics['status'].publish(Bool(data=True))
    wait_until(lambda: stats.get('tracking_lost') == '', 10, 'recovery not read')
    for i in range(11, 21):
        topics['poses'].publish(pose_with_covariance(T0 + i * 100 * MS, 0.1 * i))
    topics['images'].publish(jpeg_image(T0 + 1_550 * MS))
    wait_until(lambda: len(keyframes) == 2, 10, 'no keyframe after recovery')
    assert keyframes[1].pose_valid
    assert keyframes[1].pose.pose.position.x == pytest.approx(1.55)


def test_epoch_topic_and_pose_jumps_start_new_map_epochs(tracked):
    _, topics, keyframes, stats, _ = tracked

    def stretch(first: int, last: int, offset_m: float = 0.0) -> None:
        for i in range(first, last + 1):
            topics['poses'].publish(pose_with_covariance(T0 + i * 100 * MS, offset_m + 0.1 * i))

    stretch(0, 10)
    topics['images'].publish(jpeg_image(T0 + 550 * MS))
    wait_until(lambda: len(keyframes) == 1, 10, 'first keyframe missing')
    topics['epoch'].publish(Empty())
    wait_until(lambda: stats.get('map_epoch') == 1, 10, 'epoch request not applied')
    stretch(11, 20)
    topics['images'].publish(jpeg_image(T0 + 1_550 * MS))
    wait_until(lambda: len(keyframes) == 2, 10, 'no keyframe in the requested epoch')
    stretch(21, 30, offset_m=50.0)  # SLAM reset: 50 m in 100 ms
    topics['images'].publish(jpeg_image(T0 + 2_550 * MS))
    wait_until(lambda: len(keyframes) == 3, 10, 'no keyframe after the jump')
    assert [k.map_epoch for k in keyframes] == [0, 1, 2]
    assert [k.pose.pose.position.x for k in keyframes] == pytest.approx([0.55, 1.55, 52.55])
    assert all(k.pose_valid for k in keyframes)
    wait_until(lambda: stats.get('pose_jump') == 1, 5, 'jump not counted')
    assert stats['map_epoch_requests'] == 1 and stats['map_epoch'] == 2


def test_diagnostics_carry_the_counters_and_turn_error_when_images_stop(tracked):
    _, topics, keyframes, _, diagnostics = tracked
    wait_for_diagnostic(diagnostics, DiagnosticStatus.WARN, 'no images yet')
    for i in range(11):
        topics['poses'].publish(pose_with_covariance(T0 + i * 100 * MS, 0.1 * i))
    topics['images'].publish(jpeg_image(T0 + 500 * MS))
    wait_until(lambda: len(keyframes) == 1, 10, 'no keyframe')
    status = wait_for_diagnostic(diagnostics, DiagnosticStatus.OK, 'capturing', 5)
    values = {kv.key: kv.value for kv in status.values}
    assert values['images_received'] == '1' and values['keyframes_published'] == '1'
    assert values['map_epoch'] == '0' and values['session'] == 'tracked'
    # No more images: after diagnostics.input_timeout_s (2 s) the camera counts as gone.
    wait_for_diagnostic(diagnostics, DiagnosticStatus.ERROR, 'no images for', 10)


def test_image_change_keeps_a_new_view_while_standing_still(ros, launch):
    launch(
        'capture_node',
        **NO_RESENDS,
        reliable_input=True,
        **{
            'keyframe.min_interval_s': 0.0,
            'keyframe.max_interval_s': 0.0,
            'keyframe.min_distance_m': 100.0,
            'keyframe.min_rotation_deg': 360.0,
            'keyframe.min_image_change': 0.05,
        },
    )
    profile = qos.sensor_input(True, 100)
    odom = ros.node.create_publisher(Odometry, '/odom', profile)
    images = ros.node.create_publisher(CompressedImage, '/camera/image/compressed', profile)
    keyframes = ros.collect(Keyframe, 'keyframes', qos.keyframes(100))
    stats = ros.latest_json('capture/stats')
    wait_until(
        lambda: odom.get_subscription_count() and images.get_subscription_count(), 60, 'no subs'
    )
    wait_until(lambda: ros.node.count_publishers('keyframes') > 0, 60, 'no keyframe publisher')
    picture = np.zeros((48, 64, 3), np.uint8)
    picture[:, :32] = 200
    left = cv2.imencode('.jpg', picture)[1].tobytes()
    right = cv2.imencode('.jpg', np.ascontiguousarray(picture[:, ::-1]))[1].tobytes()
    for i in range(11):
        odom.publish(odometry(T0 + i * 100 * MS, x=0.0))
    for i, data in enumerate([left, left, left, right, right]):
        images.publish(jpeg_image(T0 + (i * 200 + 10) * MS, data))
    wait_all_placed(stats, keyframes, 5)
    assert [since_t0_ms(k) for k in keyframes] == [10, 610]
    wait_until(lambda: stats.get('keyframes_by_image_change') == 1, 5, 'criterion not counted')


# Camera extrinsic from TF ------------------------------------------------------------------
@pytest.fixture
def fake_tf2_ros(tmp_path, monkeypatch):
    yaw = math.pi / 2
    install_fake_tf2_ros(
        tmp_path,
        monkeypatch,
        'base_link',
        'zed_left_camera_frame',
        (0.1, 0.2, 0.3),
        (0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2)),
    )


def test_extrinsic_from_tf_is_looked_up_at_start_and_applied(ros, launch, fake_tf2_ros):
    node = launch(
        'capture_node',
        **NO_RESENDS,
        reliable_input=True,
        extrinsic_source='tf',
        base_frame='base_link',
        camera_frame='zed_left_camera_frame',
        camera_extrinsic=[5.0, 5.0, 5.0, 0.0, 0.0, 0.0, 1.0],  # ignored with 'tf'
    )
    profile = qos.sensor_input(True, 100)
    odom = ros.node.create_publisher(Odometry, '/odom', profile)
    images = ros.node.create_publisher(CompressedImage, '/camera/image/compressed', profile)
    keyframes = ros.collect(Keyframe, 'keyframes', qos.keyframes(100))
    wait_until(
        lambda: odom.get_subscription_count() and images.get_subscription_count(), 60, 'no subs'
    )
    for i in range(3):
        odom.publish(odometry(T0 + i * 100 * MS, x=1.0))
    images.publish(jpeg_image(T0 + 100 * MS))
    wait_until(lambda: len(keyframes) == 1, 10, 'no keyframe')
    pose = keyframes[0].pose.pose
    assert (pose.position.x, pose.position.y, pose.position.z) == pytest.approx((1.1, 0.2, 0.3))
    assert pose.orientation.z == pytest.approx(math.sin(math.pi / 4))
    assert 'camera extrinsic from TF base_link -> zed_left_camera_frame' in node.log_tail()


def test_extrinsic_from_tf_gives_up_after_tf_timeout_s(launch, fake_tf2_ros):
    node = launch(
        'capture_node', extrinsic_source='tf', camera_frame='no_such_camera', tf_timeout_s=1.0
    )
    assert node.process.wait(timeout=30) == 2
    assert 'no transform base_link -> no_such_camera' in node.log_tail()


@pytest.mark.skipif(importlib.util.find_spec('tf2_ros') is not None, reason='tf2_ros installed')
def test_extrinsic_from_tf_without_tf2_ros_stops_the_node_saying_so(launch):
    node = launch('capture_node', extrinsic_source='tf')
    assert node.process.wait(timeout=30) == 2
    assert "extrinsic_source 'tf' needs the tf2_ros Python package" in node.log_tail()


def test_the_keyframe_policy_changes_while_running_and_bad_changes_are_refused(ros, capture):
    _, odom, images, keyframes, stats = capture
    changed = set_parameters(ros, 'capture_node', {'keyframe.min_distance_m': 0.95})
    assert changed['keyframe.min_distance_m'].successful, changed
    for i in range(31):
        odom.publish(odometry(T0 + i * 100 * MS, x=0.1 * i))
    for i in range(30):  # an image every 0.1 m: with 0.35 m, 8 keyframes; with 0.95 m, 3
        images.publish(jpeg_image(T0 + (i * 100 + 10) * MS))
    wait_all_placed(stats, keyframes, 30)
    positions = [k.pose.pose.position.x for k in keyframes]
    assert positions == pytest.approx([0.01 + 0.25 + i for i in range(3)])

    refused = set_parameters(
        ros,
        'capture_node',
        {'keyframe.min_distance_m': -1.0, 'jpeg_quality': 5, 'image_topic': '/other'},
    )
    assert_refused(refused['keyframe.min_distance_m'], 'out of range')
    assert_refused(refused['jpeg_quality'], 'out of range')
    assert_refused(refused['image_topic'], 'read-only')
    assert get_parameter(ros, 'capture_node', 'keyframe.min_distance_m') == 0.95


def depth_mm(stamp_ns: int, millimetres: int, width: int = 64, height: int = 48) -> Image:
    """A RealSense-style aligned depth image: uint16 millimetres, 0 where unmeasured."""
    pixels = np.full((height, width), millimetres, np.uint16)
    pixels[:, : width // 4] = 0  # a strip the camera could not measure
    msg = Image(height=height, width=width, encoding='16UC1', step=2 * width)
    msg.header.stamp = ns_to_stamp(stamp_ns)
    msg.header.frame_id = 'camera'
    msg.data = pixels.tobytes()
    return msg


def camera_info(fx: float) -> CameraInfo:
    msg = CameraInfo(width=64, height=48)
    msg.k = [fx, 0.0, 31.5, 0.0, fx, 23.5, 0.0, 0.0, 1.0]
    return msg


def test_keyframes_carry_the_camera_info_and_the_depth_grid_of_their_image(ros, launch):
    node = launch(
        'capture_node',
        reliable_input=True,
        depth_topic='/camera/depth/image_raw',
        **NO_RESENDS,
        **{
            'keyframe.min_interval_s': 0.0,
            'keyframe.max_interval_s': 0.0,
            'keyframe.min_distance_m': 0.0,
        },
    )
    profile = qos.sensor_input(True, 100)
    odom = ros.node.create_publisher(Odometry, '/odom', profile)
    images = ros.node.create_publisher(CompressedImage, '/camera/image/compressed', profile)
    # camera_info_topic 'auto': the image topic's sibling.
    infos = ros.node.create_publisher(CameraInfo, '/camera/camera_info', profile)
    depths = ros.node.create_publisher(Image, '/camera/depth/image_raw', profile)
    keyframes = ros.collect(Keyframe, 'keyframes', qos.keyframes(100))
    stats = ros.latest_json('capture/stats')
    publishers = (odom, images, infos, depths)
    wait_until(lambda: all(p.get_subscription_count() for p in publishers), 60, 'no subs')
    wait_until(lambda: ros.node.count_publishers('keyframes') > 0, 60, 'no keyframe publisher')
    infos.publish(camera_info(0.0))  # an uncalibrated driver's: ignored
    wait_until(lambda: stats.get('camera_info_invalid') == 1, 10, 'zero K not counted')
    infos.publish(camera_info(40.0))
    wait_until(lambda: 'camera intrinsics 64x48 fx 40.0' in node.log_tail(200), 10, 'K not taken')
    for i in range(11):
        odom.publish(odometry(T0 + i * 100 * MS, x=0.1 * i))
    depths.publish(depth_mm(T0 + 200 * MS, 2500))
    depths.publish(depth_mm(T0 + 600 * MS, 1200, width=32, height=24))  # not registered
    depths.publish(Image(height=48, width=64, encoding='rgb8', step=192))  # not depth
    # Before the depth stream has begun, images do not wait for it.
    wait_until(lambda: stats.get('depth_received') == 3, 5, 'depth images not received')
    images.publish(jpeg_image(T0 + 210 * MS))
    images.publish(jpeg_image(T0 + 600 * MS))
    wait_until(lambda: len(keyframes) == 2, 10, 'expected 2 keyframes')
    first, second = keyframes
    assert first.has_camera_info and (first.camera_info.width, first.camera_info.height) == (64, 48)
    assert list(first.camera_info.k) == [40.0, 0.0, 31.5, 0.0, 40.0, 23.5, 0.0, 0.0, 1.0]
    assert (first.depth_columns, first.depth_rows) == (16, 12)
    grid = np.asarray(first.depth_m).reshape(12, 16)
    assert np.all(np.isnan(grid[:, :4]))  # the unmeasured strip
    assert np.allclose(grid[:, 4:], 2.5)  # millimetres read as metres
    # The depth image near the second keyframe is of another size: it gets none.
    assert second.has_camera_info and len(second.depth_m) == 0 and second.depth_columns == 0
    wait_until(
        lambda: stats.get('depth_size_mismatch') == 1 and stats.get('depth_undecodable') == 1,
        5,
        'bad depth images not counted',
    )
    assert stats['keyframes_with_depth'] == 1


class LiveStreams:
    """Images (15 Hz) and odometry (50 Hz) published as they are stamped, the robot going
    along x at SPEED m/s; the odometry is stamped `pose_offset_ns` off the image clock."""

    SPEED = 0.5

    def __init__(self, ros, profile) -> None:
        self.pose_offset_ns = 0
        self.start_ns = time.time_ns()
        topic = '/camera/image/compressed'
        self.images = ros.node.create_publisher(CompressedImage, topic, profile)
        self.odom = ros.node.create_publisher(Odometry, '/odom', profile)
        self._timers = [
            ros.node.create_timer(1 / 15, lambda: self.images.publish(jpeg_image(time.time_ns()))),
            ros.node.create_timer(1 / 50, self._pose),
        ]

    def x_at(self, stamp_ns: int) -> float:
        return self.SPEED * (stamp_ns - self.start_ns) / 1e9

    def _pose(self) -> None:
        now = time.time_ns()
        self.odom.publish(odometry(now + self.pose_offset_ns, x=self.x_at(now)))


def clock_status(diagnostics: list) -> DiagnosticStatus | None:
    for array in reversed(diagnostics):
        for status in array.status:
            if status.name == 'capture_node: clocks':
                return status
    return None


def clock_warnings(node) -> list[str]:
    lines = node.log_path.read_text().splitlines()
    return [line for line in lines if line.startswith('[WARN]') and 'the clocks of' in line]


def test_a_clock_offset_is_reported_once_and_no_keyframe_gets_a_pose_of_the_other_clock(
    ros, launch
):
    node = launch(
        'capture_node',
        **NO_RESENDS,
        session='clocks',
        **{'keyframe.min_interval_s': 0.0, 'keyframe.max_interval_s': 0.5},
    )
    keyframes = ros.collect(Keyframe, 'keyframes', qos.keyframes(100))
    diagnostics = ros.collect(DiagnosticArray, '/diagnostics', 100)
    streams = LiveStreams(ros, qos.sensor_input(False, 50))
    streams.pose_offset_ns = -30 * 1_000_000_000  # a lidar 30 s behind, as without PTP
    wait_until(
        lambda: streams.odom.get_subscription_count() and streams.images.get_subscription_count(),
        60,
        'capture_node did not subscribe',
    )
    wait_until(
        lambda: (s := clock_status(diagnostics)) and s.level == DiagnosticStatus.ERROR,
        5,
        'no clock diagnostic within 5 s',
    )
    status = clock_status(diagnostics)
    values = {kv.key: float(kv.value) for kv in status.values if kv.value}
    assert values['offset_s (image minus pose)'] == pytest.approx(30.0, abs=0.2)
    assert '/camera/image/compressed' in status.hardware_id and '/odom' in status.hardware_id
    assert 'PTP' in status.message and 'chrony' in status.message
    wait_until(lambda: clock_warnings(node), 5, 'no console warning')
    [warning] = clock_warnings(node)
    assert '/camera/image/compressed' in warning and '/odom' in warning
    assert 'docs/clocks.md' in warning
    # The two streams are stamped a few ms apart, so the offset is 30 s to within that.
    offset = re.search(r'differ by ([+-][0-9.]+) s', warning)
    assert offset and float(offset.group(1)) == pytest.approx(30.0, abs=0.2), warning
    # Frames are still kept (one per max_interval_s), none with a position.
    wait_until(lambda: len(keyframes) >= 3, 10, 'no keyframes while the clocks disagree')
    assert not any(k.pose_valid for k in keyframes)

    streams.pose_offset_ns = 0  # the clocks agree again
    during = len(keyframes)
    wait_until(
        lambda: (s := clock_status(diagnostics)) and s.level == DiagnosticStatus.OK,
        10,
        'the clock diagnostic did not clear',
    )
    assert 'agree' in clock_status(diagnostics).message
    wait_until(lambda: sum(k.pose_valid for k in keyframes) >= 3, 10, 'no located keyframes')
    assert not any(k.pose_valid for k in keyframes[:during])
    for keyframe in keyframes:
        if keyframe.pose_valid:  # where the robot was when the image was taken
            x = streams.x_at(stamp_to_ns(keyframe.header.stamp))
            assert keyframe.pose.pose.position.x == pytest.approx(x, abs=0.02)
    assert len(clock_warnings(node)) == 1
    assert 'agree again' in node.log_path.read_text()
