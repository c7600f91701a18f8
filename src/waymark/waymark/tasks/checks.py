# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The two checks around a stop: one before it, which may send the task back, and one after
it, which only sets the ledger status.

Before the stop, each claim that reaches the judge, up to `precheck_limit` per task, is
checked, and it is refused only when the judge is sure and disagrees: an unknown verdict
never blocks. The digest's rule checks only the first claim (`precheck_limit` 1); waymark
checks every arrival by default, because a later stop at a place the judge is sure is wrong
would otherwise close the task there. A judge that is wrong still cannot keep the robot
searching for ever: the task's attempts and budget end it, and claims past the limit are
granted. The count belongs to the task (one `StopChecks` per task), so a recovery does
not reset it. After the stop, the latest pre-stop verdict is reused when nothing has
happened since (the same step count); otherwise the final evidence is judged afresh.
"""

from __future__ import annotations

from dataclasses import dataclass

from waymark.tasks.judge import Judge, JudgeInput
from waymark.tasks.outcomes import Claim, JudgeVerdict

MAX_PRECHECKS = 20


@dataclass(frozen=True)
class CheckSwitches:
    """Which checks run; they are separate because only the pre-stop one changes a run.
    `precheck_limit` is how many claims of one task are checked before their stop."""

    precheck: bool = True
    certify: bool = True
    precheck_limit: int = MAX_PRECHECKS

    def __post_init__(self) -> None:
        limit = self.precheck_limit
        if type(limit) is not int or not 1 <= limit <= MAX_PRECHECKS:
            raise ValueError(
                f'precheck_limit must be an integer in [1, {MAX_PRECHECKS}]: {limit!r}'
            )


@dataclass(frozen=True)
class StopDecision:
    """Whether a claimed stop may go ahead. `verdict` is None when no check ran; when the
    stop is refused, `evidence` is the judge's, to hand back to the agent."""

    granted: bool
    verdict: JudgeVerdict | None = None

    @property
    def evidence(self) -> str:
        return self.verdict.evidence if self.verdict is not None else ''


class StopChecks:
    """The pre-stop rule and post-stop certification of one task."""

    def __init__(self, judge: Judge, switches: CheckSwitches | None = None) -> None:
        self.judge = judge
        self.switches = switches or CheckSwitches()
        self._precheck: JudgeVerdict | None = None  # the latest
        self.prechecks = 0

    @property
    def prechecked(self) -> bool:
        """Whether this task's pre-stop checks are all spent."""
        return self.prechecks >= self.switches.precheck_limit

    def request_stop(
        self, claim: Claim, evidence: JudgeInput, deadline: float | None = None
    ) -> StopDecision:
        """Whether the robot may stop with `claim`: refused, while the task has checks left,
        when the verdict is definite and differs from the claim."""
        if not self.switches.precheck or self.prechecked:
            return StopDecision(granted=True)
        verdict = self.judge.judge(evidence, deadline)
        self._precheck = verdict
        self.prechecks += 1
        refused = verdict.verdict.definite and verdict.verdict.value != claim.value
        return StopDecision(granted=not refused, verdict=verdict)

    def certify(self, evidence: JudgeInput, deadline: float | None = None) -> JudgeVerdict | None:
        """The certificate of the stop on the final evidence, or None when certification is
        off (the ledger then records the claim as unchecked)."""
        if not self.switches.certify:
            return None
        earlier = self._precheck
        if earlier is not None and earlier.steps == evidence.record.steps_used:
            return earlier
        return self.judge.judge(evidence, deadline)
