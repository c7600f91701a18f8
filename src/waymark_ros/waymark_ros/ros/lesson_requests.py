# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""memory_node's lesson services answered from a LessonService. Each request gets an
explicit success and a one-line reason; a refused or failed change leaves the bank as it
was (the bank writes its collection first and changes nothing the collection refused)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from waymark.lessons.bank import ReadOnlyError, Retrieved
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


def answer_get_lessons(
    lessons: LessonService | None, request: GetLessons.Request, response, counts: Counter[str]
) -> None:
    if not _bank_open(lessons, response):
        return
    try:
        found = lessons.lessons_for(request.task)
    except ValueError as error:
        _refused(response, str(error), counts, 'lessons_refused')
        return
    except Exception as error:  # the embedder failed: report it, keep serving
        _refused(response, _failure('get_lessons', error), counts, 'lessons_failed')
        return
    prior = lessons.bank.prior
    response.lessons = [lesson_msg(f, f.card.trust(prior)) for f in found]
    response.success, response.message = True, f'{len(found)} lessons'
    counts['lessons_given'] += len(found)


def answer_calibrate(
    lessons: LessonService | None,
    request: CalibrateLessons.Request,
    response,
    counts: Counter[str],
) -> bool:
    """Fill `response`; True when the bank changed."""
    if not _bank_open(lessons, response):
        return False
    try:
        response.calibrated = lessons.calibrate(list(request.lesson_ids), float(request.reward))
    except (ReadOnlyError, ValueError) as error:
        _refused(response, str(error), counts, 'calibrations_refused')
        return False
    except Exception as error:
        _refused(response, _failure('calibrate', error), counts, 'calibrations_failed')
        return False
    response.success = True
    response.message = (
        f'{request.outcome or "an outcome"} (reward {request.reward:g}) counted for '
        f'{response.calibrated} of {len(request.lesson_ids)} lessons'
    )
    counts['calibrations'] += 1
    return response.calibrated > 0


def answer_add(
    lessons: LessonService | None, request: AddLesson.Request, response, counts: Counter[str]
) -> bool:
    """Fill `response`; True when the bank changed."""
    if not _bank_open(lessons, response):
        return False
    try:
        source = provenance(request.run, request.task_id, request.model)
        added = lessons.add(request.task, request.summary, request.lesson, source)
    except (ReadOnlyError, ValueError) as error:
        _refused(response, str(error), counts, 'lessons_add_refused')
        return False
    except Exception as error:
        _refused(response, _failure('add_lesson', error), counts, 'lessons_add_failed')
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


def answer_export(
    lessons: LessonService | None, request: ExportLessons.Request, response, counts: Counter[str]
) -> None:
    if not _bank_open(lessons, response):
        return
    path = Path(request.path)
    if not path.is_absolute() or not path.parent.is_dir():
        problem = f'give an absolute path in an existing directory: {request.path!r}'
        _refused(response, problem, counts, 'exports_refused')
        return
    try:
        response.cards = lessons.export(path)
    except Exception as error:  # a full disk, no permission
        _refused(response, _failure('export_lessons', error), counts, 'exports_failed')
        return
    response.success, response.message = True, f'wrote {response.cards} lessons to {path}'
    counts['exports'] += 1


def _bank_open(lessons: LessonService | None, response) -> bool:
    if lessons is None:
        response.success, response.message = False, LESSONS_OFF
        return False
    return True


def _refused(response, message: str, counts: Counter[str], count: str) -> None:
    response.success, response.message = False, message
    counts[count] += 1


def _failure(service: str, error: Exception) -> str:
    return f'{service} failed: {type(error).__name__}: {" ".join(str(error).split())}'
