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


def feedback_reward(correct: bool) -> float:
    """A person's confirmation is a verified outcome: 1 when they said right, else 0."""
    return 1.0 if correct else 0.0
