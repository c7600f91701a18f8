# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""What a question may bring is checked before any work; its photo is decoded within limits."""

from __future__ import annotations

import re

import cv2
import numpy as np
import pytest

from waymark.agent.limits import InputLimits
from waymark.memory.storage.image_codec import ImageLimits
from waymark_testing.images import png_bomb

LIMITS = InputLimits(question_chars=20, sessions=2, photo=ImageLimits(100_000, 1_000_000))


def jpeg(height: int = 24, width: int = 32) -> bytes:
    ok, data = cv2.imencode('.jpg', np.full((height, width, 3), 200, np.uint8))
    assert ok
    return data.tobytes()


def test_a_question_within_the_limits_passes():
    assert LIMITS.problem('where is the exit?', ['tour', 'lab.2'], jpeg()) == ''
    assert LIMITS.problem('x' * 20, []) == ''


@pytest.mark.parametrize(
    'question, sessions, photo, why',
    [
        ('x' * 21, [], b'', 'the question is 21 characters, over the limit of 20'),
        ('  \n ', [], b'', 'empty question'),
        ('where?', ['a', 'b', 'c'], b'', '3 sessions named, over the limit of 2'),
        ('where?', ['tour', '../etc'], b'', "invalid session name '../etc'"),
        ('where?', [], b'not an image', 'the photo cannot be used'),
        ('where?', [], png_bomb(2000), 'the photo cannot be used: .*2000x2000 pixels'),
    ],
)
def test_each_limit_refuses_with_its_reason(question, sessions, photo, why):
    assert re.match(why, LIMITS.problem(question, sessions, photo))


def test_the_length_is_checked_before_the_text_is_read():
    assert 'over the limit' in LIMITS.problem(' ' * 21, ['../etc'])


def test_an_admitted_photo_decodes_and_a_broken_one_says_why():
    assert LIMITS.decode_photo(jpeg(24, 32)).shape == (24, 32, 3)
    with pytest.raises(ValueError, match=r'^the photo cannot be used: '):
        LIMITS.decode_photo(b'not an image')
