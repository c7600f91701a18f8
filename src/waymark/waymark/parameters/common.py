# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Choices and groups that more than one node offers."""

from __future__ import annotations

from dataclasses import dataclass

from waymark.settings import setting

TF = 'tf'
# Where the robot's pose comes from: a topic of one of these message types (LIO SLAM
# publishes Odometry, the ZED's tracking a PoseWithCovarianceStamped, other drivers a
# PoseStamped), or the TF tree (`tf`: parent_frame -> child_frame).
POSE_TYPES = ('odometry', 'pose_stamped', 'pose_with_covariance', TF)


@dataclass(frozen=True)
class TfPoseParameters:
    parent_frame: str = setting('map', 'With pose_type tf: the map frame (must be map_frame).')
    child_frame: str = setting('base_link', 'With pose_type tf: the robot body frame.')
    rate_hz: float = setting(
        20.0, 'With pose_type tf: how often the transform is looked up.', low=0.1, high=1000.0
    )
    max_age_s: float = setting(
        0.5,
        'With pose_type tf: a transform whose newest dynamic link is older than this is '
        'not used (the localisation stopped).',
        low=0.01,
        high=3600.0,
    )

    def __post_init__(self) -> None:
        if not (self.parent_frame and self.child_frame) or self.parent_frame == self.child_frame:
            raise ValueError(
                'tf_pose.parent_frame and tf_pose.child_frame must be two frame names, got '
                f'{self.parent_frame!r} and {self.child_frame!r}'
            )


def check_tf_frame(pose_type: str, tf_pose: TfPoseParameters, map_frame: str) -> None:
    """Poses from TF are in parent_frame, and every node wants them in its map frame."""
    if pose_type == TF and tf_pose.parent_frame != map_frame:
        raise ValueError(
            f'tf_pose.parent_frame {tf_pose.parent_frame!r} is not map_frame {map_frame!r}: '
            'the poses from TF would be in another frame than the map'
        )


@dataclass(frozen=True)
class InputDiagnosticsParameters:
    input_timeout_s: float = setting(
        5.0,
        'An expected input silent for this long is reported (console and /diagnostics).',
        low=0.1,
        high=3600.0,
        live=True,
    )
    repeat_s: float = setting(
        30.0,
        'While an input stays silent, the console warning is repeated this often.',
        low=1.0,
        high=86400.0,
        live=True,
    )


def comma_list(text: str) -> tuple[str, ...]:
    """The items of a comma-separated string parameter (settings hold no string lists),
    stripped, empty ones dropped."""
    return tuple(item.strip() for item in text.split(',') if item.strip())
