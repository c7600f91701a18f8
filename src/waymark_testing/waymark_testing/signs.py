# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Keyframes of printed signs at known poses, and the calls tests make with them."""

from __future__ import annotations

import cv2
import numpy as np
from PIL import Image, ImageDraw, ImageFont

from waymark.geometry import Pose
from waymark.memory.entries import Keyframe
from waymark_interfaces.msg import Keyframe as KeyframeMsg
from waymark_interfaces.srv import SearchMemory
from waymark_ros.ros import qos
from waymark_ros.ros.memory_msgs import keyframe_to_msg
from waymark_testing.ros_harness import wait_for_subscriber, wait_until

T0 = 1_768_471_200_000_000_000
S = 1_000_000_000
SIGNS = ['PHARMACY', 'BAKERY', 'LIBRARY', '']  # the last frame shows a blank wall


def sign_jpeg(text: str) -> bytes:
    image = Image.new('RGB', (640, 480), (190, 200, 210))
    if text:
        draw = ImageDraw.Draw(image)
        draw.rectangle((40, 160, 600, 300), fill=(250, 250, 245))
        font = ImageFont.load_default(size=72)
        draw.text((320, 230), text, font=font, fill=(15, 15, 15), anchor='mm', stroke_width=2)
    return cv2.imencode('.jpg', cv2.cvtColor(np.asarray(image), cv2.COLOR_RGB2BGR))[1].tobytes()


def keyframe(i: int, text: str, session='tour', pose_valid=True) -> KeyframeMsg:
    return keyframe_to_msg(
        Keyframe(
            session=session,
            index=i,
            stamp_ns=T0 + i * S,
            pose=Pose.from_xyz_yaw(2.0 * i, 1.0, 0.5, 0.1 * i),
            pose_valid=pose_valid,
            map_epoch=0,
            image=sign_jpeg(text),
        )
    )


def search(ros, mode: str, **fields) -> SearchMemory.Response:
    request = SearchMemory.Request(mode=mode)
    for name, value in fields.items():
        setattr(request, name, value)
    return ros.call(SearchMemory, 'search_memory', request)


def publish_and_wait(ros, keyframes: list[KeyframeMsg], stats: dict, expected_frames: int):
    publisher = ros.node.create_publisher(KeyframeMsg, 'keyframes', qos.keyframes(100))
    wait_for_subscriber(publisher, 'keyframes subscriber')
    for msg in keyframes:
        publisher.publish(msg)
    wait_until(lambda: stats.get('frames') == expected_frames, 60, f'{expected_frames} frames')
