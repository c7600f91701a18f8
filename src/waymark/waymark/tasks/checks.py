# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The two checks around a stop: one before it, which may send the task back, and one after
it, which only sets the ledger status.

Before the stop, only the first claim of a task that reaches the judge is checked, and it
is refused only when the judge is sure and disagrees: an unknown verdict never blocks, and
later claims are always granted, so a judge that is wrong cannot keep the robot searching
for ever. The count belongs to the task (one `StopChecks` per task), so a recovery does
not earn a second check. After the stop, the pre-stop verdict is reused when nothing has
happened since (the same step count); otherwise the final evidence is judged afresh.
"""

from __future__ import annotations

from dataclasses import dataclass

from waymark.tasks.judge import Judge, JudgeInput
from waymark.tasks.outcomes import Claim, JudgeVerdict


@dataclass(frozen=True)
class CheckSwitches:
    """Which checks run; they are separate because only the pre-stop one changes a run."""

    precheck: bool = True
    certify: bool = True


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
        self._precheck: JudgeVerdict | None = None

    @property
    def prechecked(self) -> bool:
        """Whether this task's one pre-stop check has run."""
        return self._precheck is not None

    def request_stop(
        self, claim: Claim, evidence: JudgeInput, deadline: float | None = None
    ) -> StopDecision:
        """Whether the robot may stop with `claim`: refused only for the task's first checked
        claim, when the verdict is definite and differs from the claim."""
        if not self.switches.precheck or self.prechecked:
            return StopDecision(granted=True)
        verdict = self.judge.judge(evidence, deadline)
        self._precheck = verdict
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
