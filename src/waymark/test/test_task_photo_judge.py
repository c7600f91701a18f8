# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The photo judge on textured pictures seen from elsewhere, and the judge that puts it in
front of another for photo goals."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from waymark.memory.views.photo_match import PhotoMatcher, PhotoMatchParams
from waymark.tasks.judge import JudgeInput, MechanicalRecord
from waymark.tasks.outcomes import JudgeVerdict, VerdictKind
from waymark.tasks.photo_judge import PhotoFirstJudge, PhotoJudge
from waymark.tasks.stop_views import SelectedFrame, StopView
from waymark_testing.textures import encode, moved, poster

RECORD = MechanicalRecord(task_number=1, steps_used=5, step_budget=16, frame_count=20)
BLANK = encode(np.full((480, 640, 3), 128, np.uint8))


@pytest.fixture(scope='module')
def pictures() -> dict[str, bytes]:
    return {
        'goal': encode(poster(1)),
        'goal seen': encode(moved(poster(1))),
        'other': encode(moved(poster(2))),
        'third': encode(moved(poster(3))),
    }


def task(stops: list[bytes], photo: bytes = b'', goal: str = '', earlier=()) -> JudgeInput:
    before = [SelectedFrame(StopView(image, 0.0, i), False) for i, image in enumerate(earlier)]
    at_stop = [
        SelectedFrame(StopView(image, i * math.pi / 2, 100 + i), True)
        for i, image in enumerate(stops)
    ]
    return JudgeInput(record=RECORD, frames=(*before, *at_stop), goal_text=goal, goal_photo=photo)


def test_a_stop_view_showing_the_photographed_thing_is_complete(pictures):
    verdict = PhotoJudge().judge(task([pictures['other'], pictures['goal seen']], pictures['goal']))
    assert verdict.verdict is VerdictKind.COMPLETE, verdict.evidence
    assert verdict.source == 'photo' and verdict.steps == RECORD.steps_used
    assert verdict.evidence.startswith('stop view 2 matches the goal photo with ')
    assert 'verified inliers' in verdict.evidence and verdict.confidence == 1.0


def test_textured_stop_views_without_a_match_are_incomplete(pictures):
    # Seen on the way is not seen at the stop.
    verdict = PhotoJudge().judge(
        task(
            [pictures['other'], pictures['third']],
            pictures['goal'],
            earlier=[pictures['goal seen']],
        )
    )
    assert verdict.verdict is VerdictKind.INCOMPLETE, verdict.evidence
    assert 'stop view 1:' in verdict.evidence and 'stop view 2:' in verdict.evidence


@pytest.mark.parametrize(
    'stops, why',
    [
        ([BLANK, 'other'], 'too few keypoints'),  # a blank wall rules nothing out
        ([b'not an image', 'other'], 'did not decode'),
        ([], 'no stop views'),
    ],
)
def test_what_it_cannot_rule_out_is_unknown(pictures, stops, why):
    views = [pictures.get(stop, stop) if isinstance(stop, str) else stop for stop in stops]
    verdict = PhotoJudge().judge(task(views, pictures['goal'], earlier=[pictures['other']]))
    assert verdict.verdict is VerdictKind.UNKNOWN and why in verdict.evidence, verdict


def test_goals_it_cannot_judge_are_unknown_with_the_reason(pictures):
    judge = PhotoJudge()
    text = judge.judge(task([pictures['goal seen']], goal='the PHARMACY sign'))
    assert text.verdict is VerdictKind.UNKNOWN and 'no photo' in text.evidence
    blank_goal = judge.judge(task([pictures['goal seen']], BLANK))
    assert blank_goal.verdict is VerdictKind.UNKNOWN and 'keypoints' in blank_goal.evidence
    broken = judge.judge(task([pictures['goal seen']], b'\x89PNG\r\n\x1a\nbroken'))
    assert broken.verdict is VerdictKind.UNKNOWN and 'goal photo' in broken.error
    unreadable = judge.judge(task([b'not an image', b'nor this'], pictures['goal']))
    assert unreadable.verdict is VerdictKind.UNKNOWN and 'decoded' in unreadable.error
    late = judge.judge(task([pictures['goal seen']], pictures['goal']), time.monotonic() - 1.0)
    assert late.verdict is VerdictKind.UNKNOWN and 'deadline' in late.error


class _Fixed:
    """A judge that always says the same, and counts what it was asked."""

    source = 'ocr'

    def __init__(self, verdict: VerdictKind) -> None:
        self.verdict = verdict
        self.asked: list[JudgeInput] = []

    def judge(self, task: JudgeInput, deadline: float | None = None) -> JudgeVerdict:
        self.asked.append(task)
        return JudgeVerdict(self.verdict, evidence='read something', source=self.source)


def test_photo_goals_go_to_the_photo_judge_first(pictures):
    other = _Fixed(VerdictKind.COMPLETE)
    judge = PhotoFirstJudge(PhotoJudge(), other)
    assert judge.source == 'photo+ocr'
    decided = judge.judge(task([pictures['other'], pictures['third']], pictures['goal']))
    assert decided.verdict is VerdictKind.INCOMPLETE and decided.source == 'photo'
    assert other.asked == []
    # What the photo judge cannot tell, the other judge decides (it reads the photo).
    fallback = judge.judge(task([BLANK], pictures['goal']))
    assert fallback.verdict is VerdictKind.COMPLETE and fallback.source == 'ocr'
    text = task([pictures['goal seen']], goal='the PHARMACY sign')
    assert judge.judge(text).source == 'ocr' and other.asked[-1] is text


def test_when_neither_can_tell_the_unknown_says_why_for_both(pictures):
    judge = PhotoFirstJudge(PhotoJudge(), _Fixed(VerdictKind.UNKNOWN))
    verdict = judge.judge(task([BLANK], pictures['goal']))
    assert verdict.verdict is VerdictKind.UNKNOWN and verdict.source == 'photo+ocr'
    assert verdict.evidence.startswith('photo: no stop view matches')
    assert '; ocr: read something' in verdict.evidence


def test_a_sparse_goal_photo_can_confirm_a_stop_but_never_rule_one_out(pictures):
    """Under `textured_keypoints` the goal photo still matches the thing it shows; without
    a match it cannot say the stop is elsewhere (a sparse photo misses too often)."""
    sparse = PhotoJudge(PhotoMatcher(PhotoMatchParams(features=400, textured_keypoints=500)))
    found = sparse.judge(task([pictures['goal seen']], pictures['goal']))
    assert found.verdict is VerdictKind.COMPLETE, found.evidence
    missed = sparse.judge(task([pictures['other'], pictures['third']], pictures['goal']))
    assert missed.verdict is VerdictKind.UNKNOWN, missed.evidence
    assert 'needed to rule a stop out' in missed.evidence


@pytest.mark.parametrize(
    ('read', 'expected'),
    [
        (VerdictKind.COMPLETE, VerdictKind.COMPLETE),  # the words agree
        (VerdictKind.UNKNOWN, VerdictKind.COMPLETE),  # nothing to read: the match stands
        (VerdictKind.INCOMPLETE, VerdictKind.UNKNOWN),  # other words: a look-alike
    ],
)
def test_a_photo_match_the_writing_contradicts_is_unknown(pictures, read, expected):
    other = _Fixed(read)
    verdict = PhotoFirstJudge(PhotoJudge(), other).judge(
        task([pictures['goal seen']], pictures['goal'])
    )
    assert verdict.verdict is expected, verdict.evidence
    assert len(other.asked) == 1  # every match is read too
    if expected is VerdictKind.UNKNOWN:
        assert 'matches the goal photo' in verdict.evidence
        assert 'but ocr: read something' in verdict.evidence
        assert verdict.source == 'photo+ocr'
