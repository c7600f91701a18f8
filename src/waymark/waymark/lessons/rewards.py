# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Where a lesson's reward comes from. Only a verified outcome pays: a wrong reward
corrupts every card that guided the task, so a claim or an unresolved task pays nothing."""

from __future__ import annotations

from waymark.tasks.outcomes import LedgerStatus

_TASK_REWARDS = {LedgerStatus.CERTIFIED: 1.0, LedgerStatus.NOT_DONE: 0.0}


def task_reward(status: LedgerStatus) -> float | None:
    """1 for a task the judge certified, 0 for one it found not done, None (no update) for
    UNRESOLVED, CLAIMED and STOPPED: nobody verified those."""
    return _TASK_REWARDS.get(status)


def task_outcome_key(task_id: str) -> str:
    """The key of the judge's verdict on a task, as its calibration counts it."""
    return f'task {task_id}'


def person_task_outcome_key(task_id: str) -> str:
    """The key of a person's word on a task: its own, so that it can replace the judge's
    verdict rather than be taken for a repeat of it."""
    return f'feedback task {task_id}'


def feedback_reward(correct: bool) -> float:
    """A person's confirmation is a verified outcome: 1 when they said right, else 0."""
    return 1.0 if correct else 0.0
