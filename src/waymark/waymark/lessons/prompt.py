# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The lessons block the agent reads before a task, in waymark's own words.

Lessons are written by a model, so they are quoted as data, never spliced in as
instructions. The block says what they are (habits from other questions, not answers),
how to use them (by the shape of the question, one check or trap each, current evidence
wins) and nothing about trust: the score ranks them, the model need not see it. With no
lesson retrieved there is no block at all.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from waymark.agent.agent import LessonsGiven
from waymark.agent.evidence import quote
from waymark.lessons.cards import MAX_LESSON_CHARS, MAX_SUMMARY_CHARS, MAX_TASK_CHARS

if TYPE_CHECKING:  # the bank's Milvus store loads only where a bank is used
    from waymark.lessons.bank import Embed, LessonBank, Retrieved

HEADER = (
    'Lessons from earlier questions (notes on method written after their outcomes were '
    'checked; they come from other places and times and hold no answers):'
)
RULES = (
    'How to use them: match a lesson by the kind of question (what is asked and how it is '
    'worked out), not by shared object names; take at most one check or one trap from each; '
    'skip any that does not fit; a similar question is no licence to reuse an old result; '
    'when a lesson disagrees with what memory and the tools show now, the current evidence '
    'wins. Work the answer out afresh.'
)


@dataclass(frozen=True)
class ShownLesson:
    """What the agent is shown of a lesson: from the bank here, or from memory_node."""

    lesson_id: str
    task: str
    summary: str
    lesson: str
    similarity: float

    @classmethod
    def of(cls, found: Retrieved) -> ShownLesson:
        card = found.card
        return cls(card.card_id, card.task, card.summary, card.lesson, found.ranked.similarity)


def lesson_block(lessons: Sequence[ShownLesson]) -> str:
    """The block to put before the task, or '' when no lesson was retrieved."""
    if not lessons:
        return ''
    parts = [HEADER]
    for number, shown in enumerate(lessons, start=1):
        parts.append(
            '\n'.join(
                (
                    f'Lesson {number} (task similarity {shown.similarity:.3f})',
                    f'  earlier question: {quote(shown.task, MAX_TASK_CHARS)}',
                    f'  lesson: {quote(shown.lesson, MAX_LESSON_CHARS)}',
                    f'  what happened then: {quote(shown.summary, MAX_SUMMARY_CHARS)}',
                    '  (its answer is not shown and must not be reused)',
                )
            )
        )
    parts.append(RULES)
    return '\n\n'.join(parts)


def lesson_task(question: str, task: str = '') -> str:
    """What a question's lessons are looked up by: `task` (a task's goal) when given, else
    the question's first line, so that records appended below a goal (a task's briefing)
    neither push the text over the limit nor steer the similarity. Whitespace is collapsed
    and the text cut at a word to MAX_TASK_CHARS, the most lessons/get takes; a `task`
    over that is refused (ValueError), as its sender chose it."""
    if len(task) > MAX_TASK_CHARS:
        raise ValueError(f'lesson_task is over {MAX_TASK_CHARS} characters ({len(task)})')
    first = next((line for line in question.splitlines() if line.strip()), '')
    text = ' '.join((task if task.strip() else first).split())
    if len(text) <= MAX_TASK_CHARS:
        return text
    head = text[: MAX_TASK_CHARS + 1].rsplit(' ', 1)[0]
    return head if len(head) <= MAX_TASK_CHARS else text[:MAX_TASK_CHARS]


def lesson_source(bank: LessonBank, embed_task: Embed) -> Callable[[str], LessonsGiven]:
    """What the agent calls per question: the bank's lessons for it, as a block."""

    def given(question: str) -> LessonsGiven:
        found = bank.retrieve(embed_task(lesson_task(question)))
        return lessons_given([ShownLesson.of(f) for f in found])

    return given


def lessons_given(lessons: Sequence[ShownLesson]) -> LessonsGiven:
    return LessonsGiven(lesson_block(lessons), tuple(shown.lesson_id for shown in lessons))
