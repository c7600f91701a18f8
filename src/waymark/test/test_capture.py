# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
import math

import cv2
import numpy as np
import pytest

from waymark.geometry import Pose
from waymark.memory.ingest.capture import CaptureConfig, KeyframeBuilder
from waymark.memory.ingest.keyframes import KeyframePolicy

T0 = 1_768_471_200_000_000_000
MS = 1_000_000
IDENTITY = (0.0, 0.0, 0.0, 1.0)
EVERY_FRAME = KeyframePolicy(min_interval_s=0, max_interval_s=0, min_distance_m=0)


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def builder(clock=None, **config) -> KeyframeBuilder:
    config.setdefault('policy', EVERY_FRAME)
    config.setdefault('max_speed_mps', 0.0)  # several tests move 1 m per 100 ms
    return KeyframeBuilder(CaptureConfig(**config), clock=clock or FakeClock())


def jpeg(tag: int = 0):
    return lambda: bytes([0xFF, 0xD8, tag])


def test_pose_is_interpolated_at_the_image_stamp_and_the_extrinsic_applied():
    b = builder(session='s', camera_extrinsic=Pose((0.25, 0.0, 0.5)))
    b.add_pose(T0, 'map', (0.0, 0.0, 0.0), IDENTITY)
    assert b.add_image(T0 + 30 * MS, 3, jpeg()) == []  # waits for a later pose
    [keyframe] = b.add_pose(T0 + 100 * MS, 'map', (1.0, 0.0, 0.0), IDENTITY)
    assert keyframe.pose.position == pytest.approx((0.3 + 0.25, 0.0, 0.5))
    assert (keyframe.session, keyframe.index, keyframe.stamp_ns) == ('s', 0, T0 + 30 * MS)


def test_images_wait_for_poses_while_poses_keep_coming():
    clock = FakeClock()
    b = builder(clock)
    for i in range(5):
        b.add_image(T0 + i * 100 * MS + 5 * MS, 3, jpeg(i))
    assert b.pending_images == 5
    released = []
    for i in range(6):
        clock.now += 0.4  # poses trickle in, never stalling for max_pose_wait_s
        released += b.add_pose(T0 + i * 100 * MS, 'map', (i, 0.0, 0.0), IDENTITY)
    assert [k.pose.position[0] for k in released] == pytest.approx([0.05, 1.05, 2.05, 3.05, 4.05])
    assert b.counts['image_without_pose'] == 0


def test_a_stalled_pose_stream_releases_waiting_images_without_guessing():
    clock = FakeClock()
    b = builder(clock)
    b.add_pose(T0, 'map', (0.0, 0.0, 0.0), IDENTITY)
    b.add_image(T0 + 50 * MS, 3, jpeg())  # within the gap of the last pose: placed by it
    b.add_image(T0 + 900 * MS, 3, jpeg())  # far beyond any pose
    assert b.poll() == []
    clock.now += 0.6
    assert b.poll() == []  # quiet once: maybe only this process was held up
    [held] = b.poll()  # quiet at the next poll too: the stream has stalled
    assert held.pose.position == pytest.approx((0.0, 0.0, 0.0))
    assert b.counts['image_without_pose'] == 1


def test_a_process_that_was_held_up_reads_the_waiting_poses_before_judging_a_stall():
    clock = FakeClock()
    b = builder(clock)
    b.add_pose(T0, 'map', (0.0, 0.0, 0.0), IDENTITY)
    b.add_image(T0 + 150 * MS, 3, jpeg())
    clock.now += 2.0  # not scheduled for 2 s; its timer is the first to run after
    assert b.poll() == []
    assert b.add_image(T0 + 200 * MS, 3, jpeg()) == []  # the queued input follows
    released = b.add_pose(T0 + 200 * MS, 'map', (2.0, 0.0, 0.0), IDENTITY)
    assert [k.pose.position[0] for k in released] == pytest.approx([1.5, 2.0])
    assert b.poll() == [] and b.counts['image_without_pose'] == 0


def test_waiting_images_are_bounded_by_bytes():
    b = builder(pending_bytes_max=10_000)
    b.add_pose(T0, 'map', (0.0, 0.0, 0.0), IDENTITY)
    for i in range(4):
        b.add_image(T0 + (i + 1) * 1000 * MS, 4096, jpeg())
    assert b.pending_images == 2
    assert b.counts['image_pending_overflow'] == 2


def test_flush_places_everything_at_the_end_of_a_recording():
    b = builder()
    b.add_pose(T0, 'map', (0.0, 0.0, 0.0), IDENTITY)
    b.add_image(T0 + 10 * MS, 3, jpeg())
    assert b.poll() == []
    assert len(b.poll(flush=True)) == 1


@pytest.mark.parametrize(
    ('frame', 'position', 'orientation', 'reason'),
    [
        ('odom', (0, 0, 0), IDENTITY, 'pose_wrong_frame'),
        ('map', (math.nan, 0, 0), IDENTITY, 'pose_invalid'),
        ('map', (0, 0, 0), (0, 0, 0, 0), 'pose_invalid'),
    ],
)
def test_bad_poses_are_counted_and_ignored(frame, position, orientation, reason):
    warnings = []
    b = KeyframeBuilder(CaptureConfig(policy=EVERY_FRAME), warn=warnings.append, clock=FakeClock())
    b.add_pose(T0, frame, position, orientation)
    assert b.counts[reason] == 1 and b.buffered_poses == 0
    assert len(warnings) == 1


def test_undecodable_images_are_counted_and_do_not_become_keyframes():
    def broken():
        raise ValueError('not a JPEG')

    b = builder()
    b.add_pose(T0, 'map', (0.0, 0.0, 0.0), IDENTITY)
    assert b.add_image(T0, 3, broken) == []
    assert b.counts['image_undecodable'] == 1
    [keyframe] = b.add_image(T0, 3, jpeg())
    assert keyframe.index == 0  # numbering counts only the keyframes made


def test_time_going_backwards_restarts_instead_of_mixing_timelines():
    b = builder(policy=KeyframePolicy(min_interval_s=10.0))
    b.add_pose(T0, 'map', (0.0, 0.0, 0.0), IDENTITY)
    assert len(b.add_image(T0, 3, jpeg())) == 1
    b.add_pose(T0 - 1000 * MS, 'map', (7.0, 0.0, 0.0), IDENTITY)
    [again] = b.add_image(T0 - 1000 * MS, 3, jpeg())
    assert again.pose.position[0] == pytest.approx(7.0)
    assert b.counts['pose_time_reset'] == 1 and b.counts['image_time_reset'] == 1


def test_session_is_named_after_the_first_keyframe_time():
    b = builder()
    b.add_pose(T0, 'map', (0.0, 0.0, 0.0), IDENTITY)
    [keyframe] = b.add_image(T0, 3, jpeg())
    assert keyframe.session == 'run-20260115T100000Z'
    with pytest.raises(ValueError, match='invalid session name'):
        CaptureConfig(session='a/b')


def test_a_robot_id_starts_the_derived_session_name_and_leaves_a_given_one_alone():
    b = builder(robot_id='go1-a')
    b.add_pose(T0, 'map', (0.0, 0.0, 0.0), IDENTITY)
    [keyframe] = b.add_image(T0, 3, jpeg())
    assert keyframe.session == 'go1-a-run-20260115T100000Z'
    named = builder(robot_id='go1-a', session='lab')
    named.add_pose(T0, 'map', (0.0, 0.0, 0.0), IDENTITY)
    assert named.add_image(T0, 3, jpeg())[0].session == 'lab'
    with pytest.raises(ValueError, match='invalid robot id'):
        CaptureConfig(robot_id='go1/a')


def covariance(variance: float) -> list[float]:
    values = [0.0] * 36
    values[0] = values[7] = values[14] = variance
    return values


def lost_policy() -> KeyframePolicy:
    return KeyframePolicy(min_interval_s=0.5, max_interval_s=1.0, min_distance_m=0.35)


def test_frames_while_tracking_is_lost_are_kept_without_a_position():
    # 1 m/s along x; SLAM reports a position variance of 4 m^2 from 1.0 s to 2.9 s.
    b = builder(policy=lost_policy(), max_position_variance=1.0)
    keyframes = []
    for i in range(41):
        variance = 4.0 if 10 <= i <= 29 else 0.01
        keyframes += b.add_pose(
            T0 + i * 100 * MS, 'map', (0.1 * i, 0.0, 0.0), IDENTITY, covariance(variance)
        )
        keyframes += b.add_image(T0 + (i * 100 - 40) * MS, 3, jpeg())
    keyframes += b.poll(flush=True)
    lost = [k for k in keyframes if not k.pose_valid]
    # Images take the verdict of the nearest pose: 0.96 s to 2.86 s is lost. Time alone
    # selects there: one per max_interval_s after the last keyframe (0.46 s).
    assert [k.stamp_ns for k in lost] == [T0 + 1_460 * MS, T0 + 2_460 * MS]
    assert all(k.pose == Pose() for k in lost)
    located = [(k.stamp_ns - T0) // MS for k in keyframes if k.pose_valid]
    # Relocated: the first located frame after the loss is kept at once (2.96 s).
    assert located == [-40, 460, 2960, 3460, 3960]
    assert b.counts['pose_tracking_lost'] == 20
    assert b.counts['keyframes_pose_invalid'] == 2
    assert b.counts['images_pose_lost'] == 20
    assert not b.tracking_lost


@pytest.mark.parametrize(
    ('values', 'valid'),
    [
        ([0.0] * 36, True),  # all zeros: the source gives no covariance, not a loss
        (covariance(0.5), True),
        (covariance(2.0), False),
        ([math.nan] + [0.0] * 35, False),
        (covariance(-1.0), False),
        ([0.0] * 6, False),  # malformed
    ],
)
def test_covariance_decides_whether_a_pose_is_trusted(values, valid):
    warnings = []
    b = KeyframeBuilder(
        CaptureConfig(policy=EVERY_FRAME, max_position_variance=1.0),
        warn=warnings.append,
        clock=FakeClock(),
    )
    b.add_pose(T0, 'map', (1.0, 0.0, 0.0), IDENTITY, values)
    [keyframe] = b.add_image(T0, 3, jpeg())
    assert keyframe.pose_valid is valid
    assert bool(b.tracking_lost) is not valid
    assert any('tracking lost' in w for w in warnings) is not valid


def test_nan_covariance_is_lost_even_with_the_variance_gate_off():
    b = builder(max_position_variance=0.0)
    b.add_pose(T0, 'map', (1.0, 0.0, 0.0), IDENTITY, covariance(1e6))
    b.add_pose(T0 + 100 * MS, 'map', (1.0, 0.0, 0.0), IDENTITY, [math.nan] * 36)
    [first] = b.add_image(T0, 3, jpeg())
    assert first.pose_valid  # a huge variance is fine with the gate off
    b.add_image(T0 + 100 * MS, 3, jpeg())
    assert b.counts['images_pose_lost'] == 1
    assert b.tracking_lost == 'NaN or infinite pose covariance'


def test_images_without_any_pose_become_unlocated_keyframes_on_the_time_criterion():
    clock = FakeClock()
    b = builder(clock, policy=lost_policy())
    b.add_pose(T0, 'map', (0.0, 0.0, 0.0), IDENTITY)
    keyframes = []
    for i in range(1, 31):  # 3 s of images, the pose stream silent after the first pose
        keyframes += b.add_image(T0 + i * 100 * MS, 3, jpeg())
    clock.now += 1.0
    keyframes += b.poll() + b.poll()
    assert [(k.stamp_ns - T0) // MS for k in keyframes] == [100, 1100, 2100]
    assert [k.pose_valid for k in keyframes] == [True, False, False]
    assert b.counts['image_without_pose'] == 28  # 100 and 200 ms hold the first pose
    assert b.tracking_lost == 'no pose near the image'


def test_tracking_status_marks_the_images_that_arrive_while_it_says_lost():
    b = builder(policy=lost_policy())
    keyframes = []
    for i in range(31):
        if i == 10:
            b.set_tracking_status(False)
        if i == 20:
            b.set_tracking_status(True)
        keyframes += b.add_image(T0 + i * 100 * MS, 3, jpeg())
        keyframes += b.add_pose(T0 + i * 100 * MS, 'map', (0.1 * i, 0.0, 0.0), IDENTITY)
    validity = [(k.stamp_ns - T0) // MS for k in keyframes if not k.pose_valid]
    assert validity == [1500]  # one max_interval_s after the last keyframe (0.5 s)
    assert all(k.pose_valid for k in keyframes if k.stamp_ns >= T0 + 2_000 * MS)
    assert b.counts['images_pose_lost'] == 10


def test_a_pose_jump_starts_a_map_epoch_without_interpolating_across_it():
    warnings = []
    b = KeyframeBuilder(
        CaptureConfig(policy=EVERY_FRAME, max_speed_mps=5.0),
        warn=warnings.append,
        clock=FakeClock(),
    )
    for i in range(11):  # 1 m/s: no jump
        b.add_pose(T0 + i * 100 * MS, 'map', (0.1 * i, 0.0, 0.0), IDENTITY)
    assert b.map_epoch == 0
    b.add_image(T0 + 1_050 * MS, 3, jpeg())  # waits for the next pose...
    # ... which is 20 m away 100 ms later: SLAM re-localised into another frame.
    [before] = b.add_pose(T0 + 1_100 * MS, 'map', (20.0, 0.0, 0.0), IDENTITY)
    assert (before.map_epoch, before.pose.position[0]) == (0, pytest.approx(1.0))
    b.add_pose(T0 + 1_200 * MS, 'map', (20.1, 0.0, 0.0), IDENTITY)
    [after] = b.add_image(T0 + 1_150 * MS, 3, jpeg())
    assert (after.map_epoch, after.pose.position[0]) == (1, pytest.approx(20.05))
    assert b.counts['pose_jump'] == 1
    assert any('map epoch 1 begins' in w for w in warnings)


def test_pose_jitter_at_a_high_rate_is_not_a_jump():
    b = builder(max_speed_mps=2.0)
    for i in range(200):  # 500 Hz, 0.5 m/s, with +-5 mm of jitter (5 m/s between samples)
        x = 0.001 * i + (0.005 if i % 2 else -0.005)
        b.add_pose(T0 + i * 2 * MS, 'map', (x, 0.0, 0.0), IDENTITY)
    assert b.map_epoch == 0 and 'pose_jump' not in b.counts


def test_a_looping_bag_places_old_images_in_the_old_epoch_first():
    b = builder()
    for i in range(11):
        b.add_pose(T0 + i * 100 * MS, 'map', (0.1 * i, 0.0, 0.0), IDENTITY)
    assert b.add_image(T0 + 1_050 * MS, 3, jpeg()) == []  # waits for a pose after it
    # The bag loops: the image stream restarts first, then the poses.
    assert b.add_image(T0 + 20 * MS, 3, jpeg()) == []
    [old] = b.add_pose(T0, 'map', (5.0, 0.0, 0.0), IDENTITY)
    [new] = b.add_pose(T0 + 100 * MS, 'map', (5.1, 0.0, 0.0), IDENTITY)
    assert (old.map_epoch, old.pose.position[0]) == (0, pytest.approx(1.0))
    assert (new.map_epoch, new.pose.position[0]) == (1, pytest.approx(5.02))


def test_epochs_start_from_the_configured_one_and_restart_on_request():
    b = builder(map_epoch_start=7)
    b.add_pose(T0, 'map', (0.0, 0.0, 0.0), IDENTITY)
    b.add_image(T0 + 50 * MS, 3, jpeg())
    [owed] = b.new_map_epoch('SLAM map reset')  # the waiting image belongs to epoch 7
    assert owed.map_epoch == 7 and b.map_epoch == 8 and b.buffered_poses == 0
    b.add_pose(T0 + 100 * MS, 'map', (3.0, 0.0, 0.0), IDENTITY)
    [keyframe] = b.add_image(T0 + 100 * MS, 3, jpeg())
    assert (keyframe.map_epoch, keyframe.pose.position[0]) == (8, 3.0)
    with pytest.raises(ValueError, match='map_epoch_start'):
        CaptureConfig(map_epoch_start=-1)


def test_empty_images_cannot_pile_up_under_the_byte_bound():
    b = builder(pending_bytes_max=4096)
    b.add_pose(T0, 'map', (0.0, 0.0, 0.0), IDENTITY)
    for i in range(100):
        b.add_image(T0 + (i + 1) * 1000 * MS, 0, jpeg())
    assert b.pending_images <= 4


def test_image_change_uses_the_cheap_thumbnail_only_when_nothing_else_decided():
    policy = KeyframePolicy(
        min_interval_s=0.5, max_interval_s=0, min_distance_m=1.0, min_image_change=0.05
    )
    b = builder(policy=policy)
    made = []

    def thumbnail(side: str):
        def make():
            made.append(side)
            view = np.zeros((24, 32), np.float32)
            (view[:, :16] if side == 'left' else view[:, 16:])[:] = 0.8
            return view

        return make

    keyframes = []
    for i, side in enumerate(['left', 'left', 'left', 'right', 'right']):
        stamp = T0 + i * 300 * MS
        b.add_pose(stamp, 'map', (0.0, 0.0, 0.0), IDENTITY)
        keyframes += b.add_image(stamp, 3, jpeg(i), thumbnail(side))
    # Standing still: the view changes at the 4th frame, a keyframe.
    assert [k.image[2] for k in keyframes] == [0, 3]
    assert b.counts['keyframes_by_image_change'] == 1
    # Frames within min_interval_s of a keyframe (the 2nd, the 5th) need no thumbnail,
    # and a keyframe's thumbnail is made once, for the decision and as the reference.
    assert made == ['left', 'left', 'right']


def test_without_a_thumbnail_source_the_jpeg_is_used():
    picture = np.zeros((48, 64, 3), np.uint8)
    dark = cv2.imencode('.jpg', picture)[1].tobytes()
    picture[:, 32:] = 255
    half = cv2.imencode('.jpg', picture)[1].tobytes()
    policy = KeyframePolicy(
        min_interval_s=0, max_interval_s=0, min_distance_m=1.0, min_image_change=0.1
    )
    b = builder(policy=policy)
    b.add_pose(T0, 'map', (0.0, 0.0, 0.0), IDENTITY)
    kept = [b.add_image(T0, 3, lambda: dark), b.add_image(T0, 3, lambda: dark)]
    kept.append(b.add_image(T0, 3, lambda: half))
    assert [len(k) for k in kept] == [1, 0, 1]


def real_jpeg(width: int = 64, height: int = 48):
    image = np.zeros((height, width, 3), dtype=np.uint8)
    ok, buffer = cv2.imencode('.jpg', image)
    assert ok
    return lambda: buffer.tobytes()


def flat_depth(metres: float, width: int = 64, height: int = 48):
    return lambda: (np.full((height, width), metres, dtype=np.float32), 1.0)


def test_keyframes_take_the_depth_grid_nearest_their_stamp():
    clock = FakeClock()
    b = builder(clock, session='s', pair_depth=True, depth_max_gap_s=0.02)
    b.add_pose(T0, 'map', (0.0, 0.0, 0.0), IDENTITY)
    b.add_depth(T0 + 25 * MS, flat_depth(9.0))
    b.add_pose(T0 + 100 * MS, 'map', (1.0, 0.0, 0.0), IDENTITY)
    # The pose is known, but the image waits for a depth image stamped at or after it.
    assert b.add_image(T0 + 40 * MS, 3, real_jpeg()) == []
    [keyframe] = b.add_depth(T0 + 41 * MS, flat_depth(2.5))
    assert keyframe.depth is not None
    assert (keyframe.depth.columns, keyframe.depth.rows) == (16, 12)
    assert set(keyframe.depth.metres) == {2.5}
    assert b.counts['keyframes_with_depth'] == 1


def test_without_a_depth_image_near_it_a_keyframe_has_none_after_a_bounded_wait():
    clock = FakeClock()
    b = builder(clock, session='s', pair_depth=True, max_pose_wait_s=0.5)
    b.add_pose(T0, 'map', (0.0, 0.0, 0.0), IDENTITY)
    b.add_depth(T0 - 500 * MS, flat_depth(3.0))  # the stream has begun, but too long ago
    b.add_image(T0 + 10 * MS, 3, real_jpeg())
    assert b.add_pose(T0 + 100 * MS, 'map', (1.0, 0.0, 0.0), IDENTITY) == []
    clock.now += 0.6
    [keyframe] = b.add_pose(T0 + 200 * MS, 'map', (2.0, 0.0, 0.0), IDENTITY)
    assert keyframe.depth is None
    assert b.counts['keyframes_without_depth'] == 1


def test_bad_depth_images_are_counted_and_skipped():
    b = builder(session='s', pair_depth=True)

    def broken():
        raise ValueError('short data')

    assert b.add_depth(T0, broken) == []
    assert b.add_depth(T0, flat_depth(2.0, width=4, height=4)) == []  # smaller than the grid
    assert b.counts['depth_undecodable'] == 2
    # A depth image of another size than the colour image is not its registered depth.
    b.add_depth(T0 + 10 * MS, flat_depth(2.0, width=32, height=24))
    b.set_camera_info(64, 48, [50.0, 0, 32.0, 0, 50.0, 24.0, 0, 0, 1])
    b.add_pose(T0, 'map', (0.0, 0.0, 0.0), IDENTITY)
    b.add_image(T0 + 10 * MS, 3, real_jpeg())
    [keyframe] = b.add_pose(T0 + 100 * MS, 'map', (0.0, 0.0, 0.0), IDENTITY)
    assert keyframe.depth is None and b.counts['depth_size_mismatch'] == 1


def test_camera_info_gives_the_intrinsics_and_a_zero_one_is_ignored_with_one_warning():
    warnings = []
    b = KeyframeBuilder(
        CaptureConfig(session='s', policy=EVERY_FRAME, camera_hfov_deg=90.0),
        warn=warnings.append,
        clock=FakeClock(),
    )
    b.add_pose(T0, 'map', (0.0, 0.0, 0.0), IDENTITY)
    b.add_image(T0 + 10 * MS, 3, real_jpeg())
    [derived] = b.add_pose(T0 + 100 * MS, 'map', (0.0, 0.0, 0.0), IDENTITY)
    # Without CameraInfo, from the field of view: 90 deg over 64 px is a 32 px focal length.
    assert derived.camera is not None
    assert (derived.camera.fx, derived.camera.cx) == pytest.approx((32.0, 32.0))
    b.set_camera_info(64, 48, [0.0] * 9)
    b.set_camera_info(64, 48, [0.0] * 9)
    assert b.counts['camera_info_invalid'] == 2 and len(warnings) == 1
    b.set_camera_info(64, 48, [40.0, 0, 30.0, 0, 41.0, 20.0, 0, 0, 1])
    b.add_image(T0 + 150 * MS, 3, real_jpeg())
    [calibrated] = b.add_pose(T0 + 200 * MS, 'map', (0.0, 0.0, 0.0), IDENTITY)
    assert calibrated.camera is not None
    assert (calibrated.camera.fx, calibrated.camera.fy, calibrated.camera.cy) == (40.0, 41.0, 20.0)


def test_without_camera_info_or_field_of_view_keyframes_have_no_intrinsics():
    b = builder(session='s')
    b.add_pose(T0, 'map', (0.0, 0.0, 0.0), IDENTITY)
    b.add_image(T0 + 10 * MS, 3, real_jpeg())
    [keyframe] = b.add_pose(T0 + 100 * MS, 'map', (0.0, 0.0, 0.0), IDENTITY)
    assert keyframe.camera is None and keyframe.depth is None


def test_a_depth_stream_that_never_began_holds_no_image_up():
    b = builder(session='s', pair_depth=True)
    b.add_pose(T0, 'map', (0.0, 0.0, 0.0), IDENTITY)
    b.add_image(T0 + 10 * MS, 3, real_jpeg())
    [keyframe] = b.add_pose(T0 + 100 * MS, 'map', (1.0, 0.0, 0.0), IDENTITY)
    assert keyframe.depth is None
