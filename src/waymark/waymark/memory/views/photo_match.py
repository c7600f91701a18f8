# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Is this the same thing as in that photo? Local features with geometric verification.

No learned weights: ORB keypoints on a bounded grayscale copy of each image, Lowe's ratio
test on their Hamming distances, then a RANSAC homography; the matches it keeps (inliers)
agree on one geometry, which chance matches between two different scenes rarely do. A
homography is exact for a flat thing (a sign, a poster, a box face) and close enough for
a small viewpoint change of a solid one; a wide change of view loses inliers, so a low
count means "not shown", never "shown elsewhere". Whether a view has enough keypoints to
be judged at all (`textured`) is kept apart from whether it matches: a blank wall matches
nothing and says nothing.

The defaults were calibrated with `python -m waymark.benchmarks.photo_match` on the
generated worlds of seeds 100-104 (size small), which no scored evaluation uses (the task
evaluation scores worlds 0 and 1, the standard suite seeds 0 and 1): photos taken at the
landmark viewpoints a task photo is drawn from, paired with other viewpoints of the same
landmark and with viewpoints of other landmarks. See docs/tasks.md (Judges) for the
figures.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import cv2
import numpy as np

from waymark.memory.entries import TextBox
from waymark.memory.storage.image_codec import ImageDecodeError, ImageLimits, decode_image

DETECTORS = ('orb', 'sift')
# RANSAC needs four correspondences for a homography.
_MIN_HOMOGRAPHY_MATCHES = 4


@dataclass(frozen=True)
class PhotoMatchParams:
    """How images are compared, and what counts as a match.

    `min_inliers` 12 is the least count that matched none of 204 pairs of different
    landmarks on the calibration worlds (seeds 100-104, small; the most such a pair had
    was 10) and matches 38.7 % of the 204 views of the photographed landmark: a match
    is rare but sure. `textured_keypoints` 500 is the least count at which at most 5 % of
    the views that do show the landmark (4.4 %) have it and no match, and so rule a right
    stop out; it rules out 13.7 % of the views of other landmarks."""

    max_side_px: int = 640  # a larger image is shrunk to this longer side before matching
    min_side_px: int = 32  # a smaller image is refused: it holds no features worth matching
    detector: str = 'orb'  # orb (binary, fast) or sift (slower, steadier under a turn of view)
    features: int = 1000  # keypoints kept per image
    ratio: float = 0.75  # Lowe's ratio: best match distance below this share of the second
    ransac_px: float = 5.0  # RANSAC reprojection threshold, pixels at max_side_px
    min_inliers: int = 12  # verified inliers for "the same thing"
    textured_keypoints: int = 500  # keypoints for a lack of match to mean anything
    image_limits: ImageLimits = field(default_factory=ImageLimits)

    def __post_init__(self) -> None:
        if not 0 < self.min_side_px <= self.max_side_px:
            raise ValueError(f'need 0 < min_side_px <= max_side_px: {self}')
        if self.detector not in DETECTORS:
            raise ValueError(f'detector must be one of {DETECTORS}, got {self.detector!r}')
        if not 0.0 < self.ratio < 1.0:
            raise ValueError(f'ratio must be in (0, 1), got {self.ratio}')
        if self.ransac_px <= 0.0:
            raise ValueError(f'ransac_px must be > 0, got {self.ransac_px}')
        if self.min_inliers < _MIN_HOMOGRAPHY_MATCHES:
            raise ValueError(f'min_inliers must be >= {_MIN_HOMOGRAPHY_MATCHES}: {self}')
        if min(self.features, self.textured_keypoints) < 1:
            raise ValueError(f'features and textured_keypoints must be >= 1: {self}')


@dataclass(frozen=True)
class Features:
    """One image's keypoints (pixel positions, N x 2, in the analysed copy of `size`:
    width, height) and descriptors (N x 32 bytes for ORB, N x 128 floats for SIFT)."""

    points: np.ndarray
    descriptors: np.ndarray
    size: tuple[int, int]

    @property
    def count(self) -> int:
        return len(self.points)


@dataclass(frozen=True)
class Match:
    """A comparison: `inliers` verified correspondences, each image's keypoint count, and
    whether both images have enough keypoints for a lack of inliers to mean anything."""

    inliers: int
    goal_keypoints: int
    view_keypoints: int
    textured: bool
    # Where the verified correspondences lie in the view: the bounding box of its inlier
    # keypoints, as fractions of its width and height (text ''); None with no inliers.
    region: TextBox | None = None
    # The same for the goal photo's inlier keypoints: where the shared thing lies in it.
    goal_region: TextBox | None = None


class PhotoMatcher:
    """Compares a goal photo with views; thread-safe (each call makes its own detector)."""

    def __init__(self, params: PhotoMatchParams | None = None) -> None:
        self.params = params or PhotoMatchParams()

    def features(self, data: bytes) -> Features:
        """The features of JPEG or PNG bytes. Raises ValueError (ImageDecodeError) for
        bytes that do not decode, an image over `image_limits` (refused before decoding)
        or one with a side under `min_side_px`."""
        return self.image_features(decode_image(data, self.params.image_limits))

    def image_features(self, image: np.ndarray) -> Features:
        """The features of a decoded RGB uint8 picture; ImageDecodeError for one with a
        side under `min_side_px`."""
        height, width = image.shape[:2]
        if min(height, width) < self.params.min_side_px:
            raise ImageDecodeError(
                f'image of {width}x{height} pixels is under the least side of '
                f'{self.params.min_side_px} pixels'
            )
        gray = cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)
        scale = self.params.max_side_px / max(height, width)
        if scale < 1.0:
            size = (max(1, round(width * scale)), max(1, round(height * scale)))
            gray = cv2.resize(gray, size, interpolation=cv2.INTER_AREA)
        if self.params.detector == 'sift':
            detector = cv2.SIFT_create(nfeatures=self.params.features)
        else:
            detector = cv2.ORB_create(nfeatures=self.params.features)
        keypoints, descriptors = detector.detectAndCompute(gray, None)
        size = (gray.shape[1], gray.shape[0])
        if descriptors is None:
            return Features(np.empty((0, 2), np.float32), np.empty((0, 32), np.uint8), size)
        points = np.array([point.pt for point in keypoints], dtype=np.float32).reshape(-1, 2)
        return Features(points, descriptors, size)

    def textured(self, features: Features) -> bool:
        return features.count >= self.params.textured_keypoints

    def is_match(self, match: Match) -> bool:
        return match.inliers >= self.params.min_inliers

    def match(self, goal: bytes, view: bytes) -> Match:
        """Compare two encoded images; ValueError as `features` when either is refused."""
        return self.compare(self.features(goal), self.features(view))

    def compare(self, goal: Features, view: Features) -> Match:
        """Compare features already computed, so a goal photo is read once per judgement."""
        textured = self.textured(goal) and self.textured(view)
        in_goal, in_view = self._inliers(goal, view)
        return Match(
            len(in_view),
            goal.count,
            view.count,
            textured,
            _region(in_view, view.size),
            _region(in_goal, goal.size),
        )

    def _inliers(self, goal: Features, view: Features) -> tuple[np.ndarray, np.ndarray]:
        """The goal's and the view's keypoints that RANSAC kept (M x 2 each, paired)."""
        none = np.empty((0, 2), np.float32)
        if min(goal.count, view.count) < 2:  # the ratio test needs two neighbours
            return none, none
        norm = cv2.NORM_L2 if self.params.detector == 'sift' else cv2.NORM_HAMMING
        pairs = cv2.BFMatcher(norm).knnMatch(goal.descriptors, view.descriptors, k=2)
        good = [
            pair[0]
            for pair in pairs
            if len(pair) == 2 and pair[0].distance < self.params.ratio * pair[1].distance
        ]
        if len(good) < _MIN_HOMOGRAPHY_MATCHES:
            return none, none
        source = goal.points[[m.queryIdx for m in good]]
        target = view.points[[m.trainIdx for m in good]]
        homography, mask = cv2.findHomography(source, target, cv2.RANSAC, self.params.ransac_px)
        if homography is None or mask is None:
            return none, none
        kept = mask.ravel().astype(bool)
        return source[kept], target[kept]


def _region(points: np.ndarray, size: tuple[int, int]) -> TextBox | None:
    if not len(points):
        return None
    width, height = size
    (left, top), (right, bottom) = points.min(axis=0), points.max(axis=0)
    return TextBox('', left / width, top / height, right / width, bottom / height)
