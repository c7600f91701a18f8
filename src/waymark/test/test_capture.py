# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
import math

import pytest

from waymark.geometry import Pose
from waymark.memory.capture import CaptureConfig, KeyframeBuilder
from waymark.memory.keyframes import KeyframePolicy

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
    [held] = b.poll()
    assert held.pose.position == pytest.approx((0.0, 0.0, 0.0))
    assert b.counts['image_without_pose'] == 1


def test_waiting_images_are_bounded_by_bytes():
    b = builder(pending_bytes_max=10)
    b.add_pose(T0, 'map', (0.0, 0.0, 0.0), IDENTITY)
    for i in range(4):
        b.add_image(T0 + (i + 1) * 1000 * MS, 4, jpeg())
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
