# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""A keyframe's intrinsics and depth grid survive the message both ways; bad ones are refused."""

from __future__ import annotations

import math

import cv2
import numpy as np
import pytest

from waymark.geometry import Pose
from waymark.memory.entries import CameraModel, DepthSamples, Keyframe
from waymark.memory.ingest.admission import KeyframeRules, RefusedError
from waymark_ros.ros.memory_msgs import keyframe_from_msg, keyframe_to_msg

JPEG = cv2.imencode('.jpg', np.zeros((48, 64, 3), np.uint8))[1].tobytes()


def keyframe(**fields) -> Keyframe:
    return Keyframe(
        session='s',
        index=3,
        stamp_ns=1_768_471_200_000_000_000,
        pose=Pose.from_xyz_yaw(1.0, 2.0, 0.5, 0.3),
        pose_valid=True,
        map_epoch=0,
        image=JPEG,
        **fields,
    )


def test_intrinsics_and_depth_survive_the_message():
    camera = CameraModel(640, 480, 500.0, 501.0, 319.5, 239.5)
    depth = DepthSamples(2, 2, (1.5, math.nan, 3.25, 8.0))
    back = keyframe_from_msg(keyframe_to_msg(keyframe(camera=camera, depth=depth)), KeyframeRules())
    assert back.camera == camera
    assert back.depth is not None and (back.depth.columns, back.depth.rows) == (2, 2)
    assert back.depth.metres[0] == 1.5 and math.isnan(back.depth.metres[1])
    assert back.depth.metres[2:] == (3.25, 8.0)


def test_a_keyframe_without_them_has_none():
    msg = keyframe_to_msg(keyframe())
    assert not msg.has_camera_info and msg.depth_columns == 0 and len(msg.depth_m) == 0
    back = keyframe_from_msg(msg, KeyframeRules())
    assert back.camera is None and back.depth is None


def test_intrinsics_that_are_no_camera_and_a_grid_that_does_not_fill_are_refused():
    msg = keyframe_to_msg(keyframe(camera=CameraModel(64, 48, 40.0, 40.0, 32.0, 24.0)))
    msg.camera_info.k = [0.0] * 9
    with pytest.raises(RefusedError) as refused:
        keyframe_from_msg(msg, KeyframeRules())
    assert refused.value.reason == 'camera_info_invalid'
    msg = keyframe_to_msg(keyframe(depth=DepthSamples(2, 1, (1.0, 2.0))))
    msg.depth_rows = 2
    with pytest.raises(RefusedError) as refused:
        keyframe_from_msg(msg, KeyframeRules())
    assert refused.value.reason == 'depth_invalid'
