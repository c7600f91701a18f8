# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""A judge for photo goals without learned weights: is the photographed thing in a stop view?

`PhotoJudge` compares the goal photo with each stop view by verified local features
(`waymark.memory.views.photo_match`): a stop view with enough inliers shows the goal
(complete); stop views that all have features to match and none that matches, for a goal
photo with features enough to be sure of that, show somewhere else (incomplete);
otherwise (a blank wall, a view that does not decode, no stop views, a sparse goal photo)
it cannot tell (unknown). A text goal is not its to judge. Look-alike objects
match each other, so it tells an object from other objects, not one of two identical ones
apart.

`PhotoFirstJudge` puts it in front of another judge (the OCR judge): a photo goal is
decided by the photo judge when it can, and by the other judge (which reads the writing a
photo shows) when the photo judge says unknown; every other goal goes to the other judge.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

from waymark.memory.views.photo_match import Features, Match, PhotoMatcher
from waymark.tasks.judge import Judge, JudgeInput
from waymark.tasks.outcomes import JudgeVerdict, VerdictKind


@dataclass(frozen=True)
class _Compared:
    number: int  # the stop view's number among the stop views, from 1
    match: Match


class PhotoJudge:
    """Judges a photo goal by verified inliers between the goal photo and the stop views.
    Never raises for a failed check: a photo that does not decode is an UNKNOWN with the
    error, a past deadline an UNKNOWN that says how far it got."""

    source = 'photo'

    def __init__(self, matcher: PhotoMatcher | None = None, max_evidence_chars: int = 600) -> None:
        if max_evidence_chars < 1:
            raise ValueError(f'max_evidence_chars must be >= 1, got {max_evidence_chars}')
        self.matcher = matcher or PhotoMatcher()
        self.max_evidence_chars = max_evidence_chars

    def judge(self, task: JudgeInput, deadline: float | None = None) -> JudgeVerdict:
        steps = task.record.steps_used
        if not task.goal_photo:
            return self._unknown('the goal has no photo, so the photo judge cannot judge it', steps)
        try:
            goal = self.matcher.features(task.goal_photo)
        except ValueError as error:
            return JudgeVerdict.failed(self.source, f'the goal photo: {error}', steps)
        if goal.count < self.matcher.params.min_inliers:
            return self._unknown(
                f'the goal photo has {goal.count} keypoints, under the '
                f'{self.matcher.params.min_inliers} a match needs',
                steps,
            )
        stops = task.stop_frames
        if not stops:
            return self._unknown('no stop views to compare with the goal photo', steps)
        compared, undecodable = [], 0
        for number, frame in enumerate(stops, start=1):
            if deadline is not None and time.monotonic() > deadline:
                return JudgeVerdict.failed(
                    self.source, f'deadline passed after {number - 1} of {len(stops)}', steps
                )
            try:
                view = self.matcher.features(frame.view.image)
            except ValueError:
                undecodable += 1
                continue
            compared.append(_Compared(number, self.matcher.compare(goal, view)))
        if not compared:
            return JudgeVerdict.failed(self.source, 'no stop view could be decoded', steps)
        return self._decide(goal, compared, len(stops), undecodable, steps)

    def _decide(
        self, goal: Features, compared: list[_Compared], stops: int, undecodable: int, steps: int
    ) -> JudgeVerdict:
        need = self.matcher.params.min_inliers
        best = max(compared, key=lambda seen: seen.match.inliers)
        if self.matcher.is_match(best.match):
            evidence = (
                f'stop view {best.number} matches the goal photo with {best.match.inliers} '
                f'verified inliers ({need} needed)'
            )
            return self._verdict(VerdictKind.COMPLETE, evidence, best.match.inliers / need, steps)
        counts = '; '.join(
            f'stop view {seen.number}: {seen.match.inliers} inliers, '
            f'{seen.match.view_keypoints} keypoints'
            for seen in compared
        )
        if not self.matcher.textured(goal):  # a match was possible; ruling out is not
            return self._unknown(
                f'no stop view matches the goal photo ({counts}; {need} inliers needed), but '
                f'the goal photo has only {goal.count} keypoints, under the '
                f'{self.matcher.params.textured_keypoints} needed to rule a stop out',
                steps,
            )
        bare = [seen for seen in compared if not seen.match.textured]
        if undecodable or bare:
            return self._unknown(
                f'no stop view matches the goal photo ({counts}; {need} inliers needed), but '
                f'{len(bare)} have too few keypoints and {undecodable} did not decode, so '
                f'the stop is not ruled out',
                steps,
            )
        evidence = (
            f'all {stops} stop views have features and none matches the goal photo '
            f'({counts}; {need} inliers needed)'
        )
        return self._verdict(
            VerdictKind.INCOMPLETE, evidence, 1.0 - best.match.inliers / need, steps
        )

    def _verdict(
        self, verdict: VerdictKind, evidence: str, confidence: float, steps: int
    ) -> JudgeVerdict:
        return JudgeVerdict(
            verdict,
            evidence=_clip(evidence, self.max_evidence_chars),
            confidence=min(1.0, max(0.0, confidence)),
            source=self.source,
            steps=steps,
        )

    def _unknown(self, evidence: str, steps: int) -> JudgeVerdict:
        return JudgeVerdict(
            VerdictKind.UNKNOWN,
            evidence=_clip(evidence, self.max_evidence_chars),
            source=self.source,
            steps=steps,
        )


class PhotoFirstJudge:
    """Photo goals to the photo judge first, everything else (and what it cannot tell) to
    `other`. A definite verdict's `source` names the judge that gave it; when neither can
    tell, the unknown carries what each said.

    A match is checked by `other` too: where it rules the stop out (the photo shows
    writing and the stop views read only other writing) the two disagree, and the answer
    is unknown. Local features match a look-alike sign whose layout is the same and whose
    words are not (the `lookalike` worlds: a wrong stop certified at 13 inliers); the words
    tell them apart."""

    def __init__(self, photo: PhotoJudge, other: Judge) -> None:
        self.photo = photo
        self.other = other
        self.source = f'{photo.source}+{other.source}'

    def judge(self, task: JudgeInput, deadline: float | None = None) -> JudgeVerdict:
        if not task.goal_photo:
            return self.other.judge(task, deadline)
        verdict = self.photo.judge(task, deadline)
        if verdict.verdict is VerdictKind.INCOMPLETE:
            return verdict
        fallback = self.other.judge(task, deadline)
        if verdict.verdict is VerdictKind.COMPLETE:
            if fallback.verdict is not VerdictKind.INCOMPLETE:
                return verdict
            said = (
                f'{verdict.source}: {verdict.evidence}; but {fallback.source}: {fallback.evidence}'
            )
            return JudgeVerdict(
                VerdictKind.UNKNOWN,
                evidence=_clip(said, self.photo.max_evidence_chars),
                source=self.source,
                steps=verdict.steps,
            )
        if fallback.verdict.definite:
            return fallback
        said = '; '.join(
            f'{each.source}: {each.evidence or each.error}' for each in (verdict, fallback)
        )
        return replace(
            fallback, evidence=_clip(said, self.photo.max_evidence_chars), source=self.source
        )


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + '...'
