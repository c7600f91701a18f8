# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""What memory accepts: keyframe checks, and the same-stamp rule (an entry is never
replaced, an identical resend is stored once). Search checks: test_search_query.py."""

from __future__ import annotations

import dataclasses
import math

import cv2
import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from waymark.geometry import Pose
from waymark.memory.entries import Keyframe
from waymark.memory.ingest.admission import (
    KeyframeRules,
    RefusedError,
    check_keyframe_input,
    check_stamp,
)
from waymark.memory.service import MemoryService
from waymark.memory.storage.image_codec import ImageLimits
from waymark.memory.storage.image_store import ImageStore
from waymark.memory.storage.store import MemoryStore
from waymark_testing.images import png_bomb

T0 = 1_750_000_000 * 10**9
UNIT = (0.0, 0.0, 0.0, 1.0)


def sign(text: str) -> bytes:
    image = Image.new('RGB', (160, 120), (190, 200, 210))
    ImageDraw.Draw(image).text((80, 60), text, font=ImageFont.load_default(size=24), anchor='mm')
    bgr = cv2.cvtColor(np.asarray(image), cv2.COLOR_RGB2BGR)
    return cv2.imencode('.jpg', bgr)[1].tobytes()


def check(rules: KeyframeRules | None = None, **fields):
    values = dict(
        session='tour',
        frame_id='map',
        position=(1.0, 2.0, 0.5),
        orientation=UNIT,
        pose_valid=True,
        image=sign('EXIT'),
    )
    values.update(fields)
    check_keyframe_input(rules or KeyframeRules(), **values)


def reason(call) -> str:
    with pytest.raises(RefusedError) as refused:
        call()
    assert str(refused.value)
    return refused.value.reason


def test_a_good_keyframe_passes():
    check()
    check(KeyframeRules(map_frame='camera_init'), frame_id='camera_init')
    check(orientation=(0.0, 0.0, 0.0, 1.004))  # rounding, within the tolerance


@pytest.mark.parametrize(
    ('fields', 'expected'),
    [
        ({'frame_id': 'odom'}, 'frame'),
        ({'frame_id': ''}, 'frame'),
        ({'session': '../etc'}, 'session'),
        ({'session': ''}, 'session'),
        ({'position': (1e300, 0.0, 0.0)}, 'position'),
        ({'position': (0.0, -100_001.0, 0.0)}, 'position'),
        ({'position': (math.nan, 0.0, 0.0)}, 'position'),
        ({'position': (0.0, 0.0, math.inf)}, 'position'),
        ({'orientation': (0.0, 0.0, 0.0, 0.0)}, 'orientation'),
        ({'orientation': (0.0, 0.0, 0.0, 2.0)}, 'orientation'),
        ({'orientation': (0.0, 0.0, math.nan, 1.0)}, 'orientation'),
        ({'image': b''}, 'image'),
        ({'image': b'\xff\xd8\xff garbage'}, 'image'),
        ({'image': png_bomb(18_000)}, 'image_too_large'),
    ],
)
def test_a_bad_keyframe_is_refused_with_its_reason(fields, expected):
    assert reason(lambda: check(**fields)) == expected


def test_errors_from_outside_text_are_one_short_line():
    with pytest.raises(RefusedError) as refused:
        check(session='a\nb' * 10_000)
    message = str(refused.value)
    assert '\n' not in message and len(message) < 300
    with pytest.raises(RefusedError) as refused:
        check(frame_id='odom\n' * 10_000)
    assert '\n' not in str(refused.value) and len(str(refused.value)) < 300


def test_a_lost_pose_is_not_checked_but_its_frame_is():
    check(pose_valid=False, position=(1e300, math.nan, 0.0), orientation=(0.0,) * 4)
    assert reason(lambda: check(pose_valid=False, frame_id='odom')) == 'frame'


def test_image_limits_are_parameters():
    small = KeyframeRules(image=ImageLimits(max_bytes=100))
    assert reason(lambda: check(small)) == 'image_too_large'
    few_pixels = KeyframeRules(image=ImageLimits(max_pixels=160 * 120 - 1))
    assert reason(lambda: check(few_pixels)) == 'image_too_large'
    check(KeyframeRules(image=ImageLimits(max_pixels=160 * 120)))


def test_message_stamps():
    assert check_stamp(3, 5) == 3 * 10**9 + 5
    assert reason(lambda: check_stamp(1, 10**9)) == 'stamp'
    assert reason(lambda: check_stamp(-1, 0)) == 'stamp'


# The same-stamp rule, on a real store ---------------------------------------------------


@pytest.fixture
def service(tmp_path):
    store = MemoryStore(str(tmp_path / 'memory.db'), {})
    memory = MemoryService(store, ImageStore(tmp_path), [])
    yield memory
    store.close()


def keyframe(index: int, image: bytes, x: float = 1.0, stamp_ns: int = T0) -> Keyframe:
    return Keyframe(
        session='tour',
        index=index,
        stamp_ns=stamp_ns,
        pose=Pose.from_xyz_yaw(x, 2.0, 0.5, 0.3),
        pose_valid=True,
        map_epoch=1,
        image=image,
    )


def test_an_identical_keyframe_again_is_stored_once(service):
    first = service.ingest(keyframe(0, sign('EXIT')))
    again = service.ingest(keyframe(0, sign('EXIT')))  # a resend, or the journal replayed
    assert again == first
    assert service.store.count() == 1
    assert service.counts['keyframes_duplicate'] == 1


def test_a_sign_read_hacked_at_a_stored_stamp_never_replaces_the_entry(service):
    real = service.ingest(keyframe(0, sign('EXIT')))
    for forged in (
        keyframe(0, sign('HACKED')),  # another picture
        keyframe(0, sign('EXIT'), x=7.0),  # the same picture somewhere else
        dataclasses.replace(keyframe(0, sign('EXIT')), map_epoch=2),
        dataclasses.replace(keyframe(0, sign('EXIT')), pose_valid=False, pose=Pose()),
    ):
        with pytest.raises(RefusedError) as refused:
            service.ingest(forged)
        assert refused.value.reason == 'conflicting'
        assert real.id in str(refused.value)
    assert service.store.count() == 1
    assert service.store.get([real.id]) == [real]
    assert service.image_store.get(real.image_ref) == sign('EXIT')
    assert service.counts['keyframes_duplicate'] == 0


def test_an_entry_stored_without_its_image_cannot_be_shown_identical(tmp_path):
    store = MemoryStore(str(tmp_path / 'memory.db'), {})
    full = MemoryService(store, ImageStore(tmp_path, max_bytes=1), [])
    stored = full.ingest(keyframe(0, sign('EXIT')))
    assert stored.image_ref == ''
    with pytest.raises(RefusedError, match='same stamp'):
        full.ingest(keyframe(0, sign('EXIT')))
    assert store.get([stored.id]) == [stored]
    store.close()


def test_a_later_stamp_is_a_new_entry(service):
    service.ingest(keyframe(0, sign('EXIT')))
    later = service.ingest(keyframe(1, sign('EXIT'), stamp_ns=T0 + 1))
    assert later.index == 1 and service.store.count() == 2


def test_prepare_refuses_an_image_bomb_before_decoding(service):
    with pytest.raises(ValueError, match='over the'):
        service.prepare(keyframe(0, png_bomb(18_000)))
