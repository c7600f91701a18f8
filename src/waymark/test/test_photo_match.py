# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The photo matcher: the same textured thing under a change of view matches, another
thing does not, and an image it cannot use is refused with one clear error."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from waymark.memory.storage.image_codec import ImageDecodeError, ImageLimits, ImageTooLargeError
from waymark.memory.views.photo_match import PhotoMatcher, PhotoMatchParams
from waymark_testing.textures import encode, moved, poster


@pytest.fixture(scope='module')
def matcher() -> PhotoMatcher:
    return PhotoMatcher()


def test_the_same_picture_matches_under_a_change_of_view(matcher):
    goal = encode(poster(1))
    match = matcher.match(goal, encode(moved(poster(1))))
    assert match.textured and matcher.is_match(match), match
    # A smaller photo (a goal photo at 320x240) still finds it: ORB works over scales.
    small = encode(cv2.resize(poster(1), (320, 240), interpolation=cv2.INTER_AREA), '.png')
    assert matcher.is_match(matcher.match(small, encode(moved(poster(1)))))


def test_another_picture_does_not_match(matcher):
    match = matcher.match(encode(poster(1)), encode(moved(poster(2))))
    assert match.textured and not matcher.is_match(match), match
    assert match.inliers < matcher.params.min_inliers


def test_a_blank_view_has_no_features_to_judge(matcher):
    match = matcher.match(encode(poster(1)), encode(np.full((480, 640, 3), 128, np.uint8)))
    assert match.inliers == 0 and match.view_keypoints == 0 and not match.textured


def test_a_large_image_is_matched_at_a_bounded_size(matcher):
    big = cv2.resize(poster(1), (2560, 1920), interpolation=cv2.INTER_CUBIC)
    features = matcher.features(encode(big))
    assert features.points.max() < matcher.params.max_side_px
    assert matcher.is_match(matcher.compare(features, matcher.features(encode(moved(poster(1))))))


def test_images_it_cannot_use_get_one_clear_error():
    matcher = PhotoMatcher(PhotoMatchParams(image_limits=ImageLimits(max_pixels=1_000_000)))
    good = encode(poster(1))
    with pytest.raises(ImageDecodeError, match='cannot'):
        matcher.match(b'not an image', good)
    with pytest.raises(ImageDecodeError, match='under the least side'):
        matcher.match(good, encode(np.zeros((16, 400, 3), np.uint8)))
    with pytest.raises(ImageTooLargeError, match='over the limit'):
        matcher.match(good, encode(np.zeros((1200, 1200, 3), np.uint8), '.png'))
    with pytest.raises(ValueError, match='ratio'):
        PhotoMatchParams(ratio=1.0)
    with pytest.raises(ValueError, match='min_inliers'):
        PhotoMatchParams(min_inliers=3)


@pytest.mark.parametrize('left', [0, 320])
def test_a_match_says_where_in_the_view_the_photographed_thing_is(matcher, left):
    """The poster pasted into the left or the right half of a blank wall: the region of
    the verified correspondences lies on that half, as fractions of the view."""
    wall = np.full((480, 960, 3), 128, np.uint8)
    wall[80:400, left + 80 : left + 507] = cv2.resize(poster(1), (427, 320))
    match = matcher.match(encode(poster(1)), encode(wall))
    assert matcher.is_match(match), match
    region = match.region
    assert region.text == '' and 0.0 <= region.left < region.right <= 1.0
    centre = region.centre[0] * 960
    assert left + 80 <= centre <= left + 507  # inside the pasted poster
    assert 80 / 480 - 0.05 <= region.top < region.bottom <= 400 / 480 + 0.05
    # In the photo, which is the whole poster, the same correspondences spread over it.
    shown = match.goal_region
    assert shown.left < 0.3 and shown.right > 0.7


def test_no_match_has_no_region(matcher):
    match = matcher.match(encode(poster(1)), encode(np.full((480, 640, 3), 128, np.uint8)))
    assert match.region is None and match.goal_region is None
