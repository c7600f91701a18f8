# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
import math

import cv2
import numpy as np
import pytest

from waymark.geometry import Pose
from waymark.memory.ingest.keyframes import KeyframePolicy, KeyframeSelector, image_change
from waymark.memory.storage.image_codec import ImageDecodeError, compressed_thumbnail, raw_thumbnail

S = 1_000_000_000


def feed(selector: KeyframeSelector, samples) -> list[int]:
    kept = []
    for i, (stamp, pose) in enumerate(samples):
        if selector.wants(stamp, pose):
            selector.accept(stamp, pose)
            kept.append(i)
    return kept


def test_distance_threshold_spaces_keyframes():
    selector = KeyframeSelector(
        KeyframePolicy(min_interval_s=0, max_interval_s=0, min_distance_m=1.0)
    )
    samples = [(i * S // 10, Pose.from_xyz_yaw(0.25 * i, 0, 0, 0)) for i in range(13)]
    assert feed(selector, samples) == [0, 4, 8, 12]


def test_rotation_threshold_catches_turning_in_place():
    policy = KeyframePolicy(
        min_interval_s=0, max_interval_s=0, min_distance_m=10, min_rotation_deg=45
    )
    samples = [(i * S, Pose.from_xyz_yaw(0, 0, 0, math.radians(10 * i))) for i in range(10)]
    assert feed(KeyframeSelector(policy), samples) == [0, 5]


def test_standing_still_gives_one_keyframe_per_max_interval():
    policy = KeyframePolicy(min_interval_s=0.5, max_interval_s=3.0)
    samples = [(i * S // 2, Pose()) for i in range(13)]  # 6 s at 2 Hz, not moving
    assert feed(KeyframeSelector(policy), samples) == [0, 6, 12]


def test_min_interval_caps_the_rate_even_when_moving_fast():
    policy = KeyframePolicy(min_interval_s=1.0, max_interval_s=0, min_distance_m=0.1)
    samples = [(i * S // 10, Pose.from_xyz_yaw(i, 0, 0, 0)) for i in range(25)]
    assert feed(KeyframeSelector(policy), samples) == [0, 10, 20]


def test_rejected_candidate_does_not_move_the_reference():
    selector = KeyframeSelector(
        KeyframePolicy(min_interval_s=0, max_interval_s=0, min_distance_m=1)
    )
    assert selector.wants(0, Pose())
    selector.accept(0, Pose())
    assert selector.wants(S, Pose((1.5, 0, 0)))  # not accepted (say the image was corrupt)
    assert selector.wants(2 * S, Pose((1.2, 0, 0)))


def test_time_going_backwards_restarts_selection():
    selector = KeyframeSelector(KeyframePolicy(min_interval_s=5.0))
    selector.accept(100 * S, Pose())
    assert not selector.wants(101 * S, Pose())
    assert selector.wants(50 * S, Pose())


@pytest.mark.parametrize(
    'kwargs',
    [
        {'min_interval_s': -1},
        {'min_distance_m': math.nan},
        {'min_interval_s': 5, 'max_interval_s': 2},
        {'min_image_change': 1.5},
        {'min_image_change': -0.1},
    ],
)
def test_invalid_policies_are_rejected(kwargs):
    with pytest.raises(ValueError, match='keyframe policy'):
        KeyframePolicy(**kwargs)


def test_frames_without_a_pose_are_kept_by_time_only_and_relocation_at_once():
    policy = KeyframePolicy(min_interval_s=0.5, max_interval_s=2.0, min_distance_m=1.0)
    selector = KeyframeSelector(policy)
    samples = [(i * S // 2, None) for i in range(9)]  # 4 s lost, 2 Hz
    samples.append((9 * S // 2, Pose()))  # located again 0.5 s after the last lost keyframe
    assert feed(selector, samples) == [0, 4, 8, 9]
    assert selector.reason == 'relocated'


def test_image_change_is_asked_for_only_when_time_and_pose_did_not_decide():
    policy = KeyframePolicy(
        min_interval_s=1.0, max_interval_s=0, min_distance_m=1.0, min_image_change=0.1
    )
    selector = KeyframeSelector(policy)
    calls = []

    def view(value: float):
        def make():
            calls.append(value)
            return np.tile(np.array([[0.0, value]], np.float32), (24, 16))

        return make

    selector.accept(0, Pose(), view(0.0))
    assert not selector.wants(S // 2, Pose(), view(1.0))  # before min_interval_s: not asked
    assert selector.wants(2 * S, Pose((2.0, 0, 0)), view(1.0))  # travel decided: not asked
    assert calls == [0.0]
    assert not selector.wants(2 * S, Pose(), view(0.05))
    assert selector.wants(2 * S, None, view(0.8))  # no pose: the image still counts
    assert selector.reason == 'image_change'
    assert calls == [0.0, 0.05, 0.8]


def test_image_change_with_the_criterion_off_never_decodes():
    selector = KeyframeSelector(KeyframePolicy(min_interval_s=0, min_distance_m=1.0))

    def never():
        raise AssertionError('thumbnail made with the image criterion off')

    selector.accept(0, Pose(), never)
    assert not selector.wants(S, Pose(), never)


def test_image_change_ignores_global_brightness_but_not_a_new_view():
    rng = np.random.default_rng(0)
    view = rng.uniform(0.2, 0.6, (24, 32)).astype(np.float32)
    assert image_change(view, view + 0.3) == pytest.approx(0.0, abs=1e-6)
    assert image_change(view, np.flip(view, axis=1)) > 0.05


def test_thumbnails_agree_across_image_sources():
    rng = np.random.default_rng(1)
    bgr = cv2.resize(rng.integers(0, 255, (12, 16, 3), np.uint8), (640, 480))
    jpeg = cv2.imencode('.jpg', bgr, [cv2.IMWRITE_JPEG_QUALITY, 95])[1].tobytes()
    rgb = np.ascontiguousarray(bgr[..., ::-1])
    gray = cv2.cvtColor(bgr, cv2.COLOR_BGR2GRAY)
    thumbnails = [
        compressed_thumbnail(jpeg),
        raw_thumbnail('rgb8', 640, 480, 640 * 3, rgb.tobytes()),
        raw_thumbnail('bgr8', 640, 480, 640 * 3, bgr.tobytes()),
        raw_thumbnail('mono8', 640, 480, 640, gray.tobytes()),
    ]
    assert all(t.shape == (24, 32) and t.dtype == np.float32 for t in thumbnails)
    assert all(image_change(thumbnails[0], t) < 0.01 for t in thumbnails[1:])
    other = compressed_thumbnail(cv2.imencode('.jpg', 255 - bgr)[1].tobytes())
    assert image_change(thumbnails[0], other) > 0.1
    with pytest.raises(ImageDecodeError):
        compressed_thumbnail(b'\xff\xd8 not a jpeg')
