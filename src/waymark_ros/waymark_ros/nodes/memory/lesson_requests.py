# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""memory_node's lesson services answered from a LessonService. Each request gets an
explicit success and a one-line reason; a refused or failed change leaves the bank as it
was (the bank writes its collection first and changes nothing the collection refused)."""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from waymark.lessons.bank import ReadOnlyError, Retrieved
from waymark.lessons.cards import Superseded
from waymark.lessons.service import LessonService, provenance
from waymark_interfaces.msg import Lesson
from waymark_interfaces.srv import AddLesson, CalibrateLessons, ExportLessons, GetLessons

LESSONS_OFF = 'the lesson bank is off (lessons.mode is off, or it did not open)'


def lesson_msg(found: Retrieved, trust: float) -> Lesson:
    card = found.card
    return Lesson(
        id=card.card_id,
        task=card.task,
        summary=card.summary,
        lesson=card.lesson,
        similarity=float(found.ranked.similarity),
        trust=float(trust),
        visits=card.visits.count,
    )


Answer = Callable[[LessonService, Any, Any, Counter[str]], bool]


def _needs_bank(answer: Answer):
    """`answer` for a bank that is open; with none (`lessons` None) the response says the
    bank is off, and why when `off_reason` is given. Each answer fills `response` and
    returns whether the bank changed."""

    @functools.wraps(answer)
    def checked(
        lessons: LessonService | None, request, response, counts: Counter[str], off_reason=''
    ) -> bool:
        if lessons is None:
            response.success = False
            response.message = f'{LESSONS_OFF}: {off_reason}' if off_reason else LESSONS_OFF
            return False
        return answer(lessons, request, response, counts)

    return checked


@_needs_bank
def answer_get_lessons(
    lessons: LessonService, request: GetLessons.Request, response, counts: Counter[str]
) -> bool:
    found = _attempt(
        lambda: lessons.lessons_for(request.task), response, counts, 'get_lessons', 'lessons'
    )
    if found is _FAILED:
        return False
    prior = lessons.bank.prior
    response.lessons = [lesson_msg(f, f.card.trust(prior)) for f in found]
    response.success, response.message = True, f'{len(found)} lessons'
    counts['lessons_given'] += len(found)
    return False


@_needs_bank
def answer_calibrate(
    lessons: LessonService, request: CalibrateLessons.Request, response, counts: Counter[str]
) -> bool:
    key = request.outcome_key

    def calibrate() -> int:
        replaces = None
        if request.replaces_key:
            replaces = Superseded(request.replaces_key, float(request.replaces_reward))
        return lessons.calibrate(list(request.lesson_ids), float(request.reward), key, replaces)

    calibrated = _attempt(
        calibrate,
        response,
        counts,
        'calibrate',
        'calibrations',
    )
    if calibrated is _FAILED:
        return False
    response.success, response.calibrated = True, calibrated
    named = len(set(request.lesson_ids))
    response.message = (
        f'{request.outcome or "an outcome"} (reward {request.reward:g}) counted for '
        f'{calibrated} of {named} lessons'
    ) + (f' (the others are gone or counted {key!r} before)' if key and calibrated < named else '')
    if request.replaces_key and calibrated:
        response.message += f', in place of {request.replaces_key!r} where it had counted'
    counts['calibrations'] += 1
    return calibrated > 0


@_needs_bank
def answer_add(
    lessons: LessonService, request: AddLesson.Request, response, counts: Counter[str]
) -> bool:
    def add():
        source = provenance(request.run, request.task_id, request.model)
        return lessons.add(request.task, request.summary, request.lesson, source)

    added = _attempt(add, response, counts, 'add_lesson', 'lessons_add')
    if added is _FAILED:
        return False
    response.success = True
    response.id, response.merged, response.evicted = (
        added.card_id,
        added.merged,
        list(added.evicted),
    )
    response.message = (
        f'merged into lesson {added.card_id}' if added.merged else f'wrote lesson {added.card_id}'
    ) + (f', evicting {len(added.evicted)}' if added.evicted else '')
    counts['lessons_add_merged' if added.merged else 'lessons_add_written'] += 1
    return True


@_needs_bank
def answer_export(
    lessons: LessonService, request: ExportLessons.Request, response, counts: Counter[str]
) -> bool:
    path = Path(request.path)
    if not path.is_absolute() or not path.parent.is_dir():
        problem = f'give an absolute path in an existing directory: {request.path!r}'
        _refused(response, problem, counts, 'exports_refused')
        return False
    try:
        response.cards = lessons.export(path)
    except Exception as error:  # a full disk, no permission
        _refused(response, _failure('export_lessons', error), counts, 'exports_failed')
        return False
    response.success, response.message = True, f'wrote {response.cards} lessons to {path}'
    counts['exports'] += 1
    return False


_FAILED = object()


def _attempt(call: Callable[[], Any], response, counts: Counter[str], service: str, count: str):
    """What `call` returns, or `_FAILED` with `response` refused: a request the bank turns
    down (read-only, bad values) counts as `<count>_refused`, a bank that fails (the
    embedder, the collection) as `<count>_failed`; memory_node serves on either way."""
    try:
        return call()
    except (ReadOnlyError, ValueError) as error:
        _refused(response, str(error), counts, f'{count}_refused')
    except Exception as error:
        _refused(response, _failure(service, error), counts, f'{count}_failed')
    return _FAILED


def _refused(response, message: str, counts: Counter[str], count: str) -> None:
    response.success, response.message = False, message
    counts[count] += 1


def _failure(service: str, error: Exception) -> str:
    return f'{service} failed: {type(error).__name__}: {" ".join(str(error).split())}'
