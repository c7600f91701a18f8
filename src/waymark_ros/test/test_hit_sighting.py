# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""A memory hit carries its record's sighting over DDS (MemoryHit.sighting), so that the
reasoner can localise what a hit saw; a sighting that is not one is dropped, not the hit."""

from __future__ import annotations

import math
from dataclasses import replace

from rclpy.serialization import deserialize_message, serialize_message

from waymark.memory.entries import (
    CameraModel,
    DepthSamples,
    FrameRecord,
    Hit,
    Sighting,
    TextBox,
)
from waymark.memory.storage.sighting_codec import SIGHTING_MAX_BYTES
from waymark_interfaces.msg import MemoryHit
from waymark_ros.ros.memory_msgs import hit_from_msg, hit_to_msg

T0 = 1_750_000_000 * 10**9
SIGHTING = Sighting(
    CameraModel(640, 480, 320.0, 320.0, 320.0, 240.0),
    (TextBox('BAKERY', 0.25, 0.375, 0.5, 0.4375),),
    DepthSamples(2, 1, (2.5, 3.0)),
)
FRAME = FrameRecord('tour', 7, T0, 1.5, -2.0, 0.5, 0.0, 2, True, 'images/ab/c.jpg', 'BAKERY')


def through_dds(msg: MemoryHit) -> MemoryHit:
    return deserialize_message(serialize_message(msg), MemoryHit)


def test_the_sighting_survives_the_round_trip_through_the_message():
    record = replace(FRAME, sighting=SIGHTING)

    hit = hit_from_msg(through_dds(hit_to_msg(Hit(record, 0.75, 'text'), 'map')))

    assert hit.record == record
    assert hit_from_msg(hit_to_msg(Hit(FRAME, 0.5, 'text'), 'map')).record.sighting is None


def test_a_sighting_that_is_not_one_is_dropped_and_the_hit_kept():
    for bad in (
        '{"camera": {"width": 0, "height": 1, "fx": 1, "fy": 1, "cx": 0, "cy": 0}}',
        '{"text_boxes": [{"text": "X", "left": -1, "top": 0, "right": 1, "bottom": 1}]}',
        'print("hello")',
        '{"text_boxes": []}' + ' ' * SIGHTING_MAX_BYTES,
    ):
        msg = hit_to_msg(Hit(FRAME, 0.5, 'text'), 'map')
        msg.sighting = bad
        hit = hit_from_msg(msg)
        assert hit.record.sighting is None and hit.record.id == FRAME.id, bad
    nan_depth = replace(SIGHTING, depth=DepthSamples(1, 1, (math.nan,)))
    msg = hit_to_msg(Hit(replace(FRAME, sighting=nan_depth), 0.5, 'text'), 'map')
    assert math.isnan(hit_from_msg(through_dds(msg)).record.sighting.depth.metres[0])


def test_a_photo_region_survives_the_round_trip_and_one_outside_the_picture_is_dropped():
    region = TextBox('', 0.25, 0.5, 0.75, 1.0)  # fractions that float32 holds exactly
    hit = hit_from_msg(through_dds(hit_to_msg(Hit(FRAME, 0.5, 'photo', region), 'map')))
    assert hit.region == region
    assert hit_from_msg(through_dds(hit_to_msg(Hit(FRAME, 0.5, 'photo'), 'map'))).region is None
    for bad in ([-0.1, 0.0, 0.5, 0.5], [0.5, 0.0, 0.25, 1.0], [math.nan, 0.0, 0.5, 0.5]):
        msg = hit_to_msg(Hit(FRAME, 0.5, 'photo', region), 'map')
        msg.photo_region = bad
        dropped = hit_from_msg(through_dds(msg))
        assert dropped.region is None and dropped.record.id == FRAME.id, bad
