# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Reading a reflection: the model's lesson from a verified outcome, checked before it can
become a card.

The reply is untrusted text. It must hold one JSON object with exactly `summary` and
`transferable_lesson`, each within its length, and neither may leak (`leakage`). What
fails is a `Rejected` with its reason, never an exception: the caller retries once and
then counts the card as skipped.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from waymark.lessons.cards import MAX_LESSON_CHARS, MAX_SUMMARY_CHARS
from waymark.lessons.leakage import Leak, LeakContext, find_leaks
from waymark.model_text import first_json_object, validation_problems
from waymark.tasks.outcomes import Word

# Only this much of a reply is searched for JSON (the call's max_tokens bounds it anyway).
MAX_REPLY_CHARS = 8_000


class RejectReason(Word):
    NOT_JSON = 'not_json'
    BAD_SHAPE = 'bad_shape'  # missing or extra keys, wrong types, too long, empty
    LEAK = 'leak'


@dataclass(frozen=True)
class Reflection:
    summary: str
    lesson: str


@dataclass(frozen=True)
class Rejected:
    reason: RejectReason
    detail: str
    leaks: tuple[Leak, ...] = ()


class _Reply(BaseModel):
    model_config = ConfigDict(extra='forbid', strict=True, str_strip_whitespace=True)

    summary: str = Field(min_length=1, max_length=MAX_SUMMARY_CHARS)
    transferable_lesson: str = Field(min_length=1, max_length=MAX_LESSON_CHARS)


def read_reflection(reply: str, context: LeakContext | None = None) -> Reflection | Rejected:
    """The reflection in `reply`, or why it cannot be used."""
    found = first_json_object(reply[:MAX_REPLY_CHARS])
    if found is None:
        return Rejected(RejectReason.NOT_JSON, 'no JSON object in the reply')
    try:
        parsed = _Reply.model_validate(found)
    except ValidationError as error:
        return Rejected(RejectReason.BAD_SHAPE, validation_problems(error, 'reply', limit=3))
    leaks = find_leaks(f'{parsed.summary}\n{parsed.transferable_lesson}', context)
    if leaks:
        detail = '; '.join(str(leak) for leak in leaks[:5])
        return Rejected(RejectReason.LEAK, detail, tuple(leaks))
    return Reflection(parsed.summary, parsed.transferable_lesson)
