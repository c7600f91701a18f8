# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The recovery controller: when a task's attempt is stuck, how much to re-examine.

The agent may propose a recovery; the runner decides from measured signals, never from
the proposal's confidence, so a confident model cannot buy a reset and a silent one is
still rescued by the fallback. The rule table is applied in order and the smallest scope
that covers what the failure implicates is chosen; each scope then becomes a plan that
says, as data, what the next attempt does differently in waymark's terms.

Turns in waymark: the digest counts model turns of a step-by-step navigator. waymark's
agent counts steps (one model reply with its tool calls), the unit `Budget.agent_steps`
limits, so the fallback threshold and the earliest request are counted in agent steps of
the current attempt. The fallback keeps the digest's proportion (80 of 200 turns: 6 of the
default 16 steps); the earliest request is step 2, so the agent has read at least one
memory answer before it may ask to start over.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from waymark.agent.exclusions import MAX_EXCLUDED, MAX_EXCLUSION_RADIUS_M, Exclusions
from waymark.tasks.outcomes import Scope

# The bounds of every count a signal or parameter carries; larger values are input errors.
MAX_COUNT = 100_000
MAX_REASON_CHARS = 500


@dataclass(frozen=True)
class RecoveryParams:
    """When the runner may or must recover, and how far.

    `fallback_steps` (T_f): agent steps in this attempt after which the runner recovers
    even without a proposal. `earliest_request_step` (t_min): a proposal before this many
    steps is declined unless the fallback holds. `max_recoveries` (N): recoveries per task;
    1 is the digest's setting, and with 1 escalation can never apply. `max_scope` (u_max)
    clamps every decision. Progress (new area or new observations since the last
    checkpoint) declines a proposal, as a guard against giving up while things improve."""

    fallback_steps: int = 6
    earliest_request_step: int = 2
    max_recoveries: int = 1
    max_scope: Scope = Scope.HOUSE
    escalation: bool = True
    min_new_area_m2: float = 1.5
    min_observations: int = 1
    frames_per_observation: int = 4

    def __post_init__(self) -> None:
        for name in ('fallback_steps', 'frames_per_observation', 'min_observations'):
            _check_count(name, getattr(self, name), minimum=1)
        for name in ('earliest_request_step', 'max_recoveries'):
            _check_count(name, getattr(self, name), minimum=0)
        if not isinstance(self.max_scope, Scope):
            raise ValueError(f'max_scope must be a Scope, got {self.max_scope!r}')
        if not (math.isfinite(self.min_new_area_m2) and self.min_new_area_m2 > 0.0):
            raise ValueError(f'min_new_area_m2 must be finite and > 0: {self.min_new_area_m2}')


@dataclass(frozen=True)
class RecoverySignals:
    """What the runner measured for the current attempt (the digest's z).

    `new_area_m2`, `new_frames` and `new_marks` count since the last checkpoint;
    `last_scope` is the previous recovery's scope, None before the first recovery."""

    steps_in_attempt: int = 0
    new_area_m2: float = 0.0
    new_frames: int = 0
    new_marks: int = 0
    tracking_lost: bool = False
    floor_mismatch: bool = False
    first_visit: bool = False
    last_scope: Scope | None = None
    recoveries_used: int = 0

    def __post_init__(self) -> None:
        for name in ('steps_in_attempt', 'new_frames', 'new_marks', 'recoveries_used'):
            _check_count(name, getattr(self, name), minimum=0)
        if not (math.isfinite(self.new_area_m2) and self.new_area_m2 >= 0.0):
            raise ValueError(f'new_area_m2 must be finite and >= 0: {self.new_area_m2}')
        if (self.last_scope is None) != (self.recoveries_used == 0):
            raise ValueError(
                f'last_scope ({self.last_scope!r}) must be given exactly when recoveries '
                f'were used ({self.recoveries_used})'
            )

    def observations(self, params: RecoveryParams) -> int:
        """The observation proxy: new frames in groups, plus each new mark."""
        return self.new_frames // params.frames_per_observation + self.new_marks

    def progressing(self, params: RecoveryParams) -> bool:
        """New area or new observations; new frames need not show anything new, so this
        only guards against recovering too early, it proves nothing."""
        return (
            self.new_area_m2 >= params.min_new_area_m2
            or self.observations(params) >= params.min_observations
        )


@dataclass(frozen=True)
class Proposal:
    """The agent's request for a recovery. `confidence` is logged, never compared."""

    scope: Scope
    reason: str = ''
    confidence: float = 0.0

    def __post_init__(self) -> None:
        if not isinstance(self.scope, Scope):
            raise ValueError(f'scope must be a Scope, got {self.scope!r}')
        if len(self.reason) > MAX_REASON_CHARS:
            raise ValueError(
                f'reason is {len(self.reason)} characters, over the limit of {MAX_REASON_CHARS}'
            )
        if not (math.isfinite(self.confidence) and 0.0 <= self.confidence <= 1.0):
            raise ValueError(f'confidence must be in [0, 1], got {self.confidence}')


@dataclass(frozen=True)
class RecoveryDecision:
    """Continue (`scope` None) or recover at `scope`. `rules` are the rule-table rows that
    decided or changed the outcome, in the order they applied."""

    scope: Scope | None
    rules: tuple[int, ...]
    fallback: bool
    proposal: Proposal | None = None

    @property
    def recover(self) -> bool:
        return self.scope is not None

    def describe(self) -> str:
        """One line for logs and feedback."""
        rules = ', '.join(map(str, self.rules))
        outcome = 'continue' if self.scope is None else f'recover at {self.scope.name.lower()}'
        parts = [f'{outcome} (rules {rules})']
        if self.fallback:
            parts.append('fallback threshold reached')
        if self.proposal is not None:
            parts.append(
                f'proposed {self.proposal.scope.name.lower()} with confidence '
                f'{self.proposal.confidence:.2f}: {self.proposal.reason}'
            )
        return '; '.join(parts)


def decide(
    params: RecoveryParams, signals: RecoverySignals, proposal: Proposal | None
) -> RecoveryDecision:
    """The rule table, in order; a continue returns at once."""
    fallback = signals.steps_in_attempt >= params.fallback_steps

    def keep_going(rule: int) -> RecoveryDecision:
        return RecoveryDecision(None, (rule,), fallback, proposal)

    if (proposal is None and not fallback) or signals.recoveries_used >= params.max_recoveries:
        return keep_going(1)
    if not fallback and signals.steps_in_attempt < params.earliest_request_step:
        return keep_going(2)
    if (
        not fallback
        and signals.progressing(params)
        and not signals.tracking_lost
        and not signals.floor_mismatch
    ):
        return keep_going(3)
    scope = proposal.scope if proposal is not None else Scope.ATTEMPT
    rules = [4]
    if signals.tracking_lost and scope < Scope.PLACE:
        scope, rules = Scope.PLACE, [*rules, 5]
    if signals.floor_mismatch and scope < Scope.FLOOR:
        scope, rules = Scope.FLOOR, [*rules, 6]
    if scope is Scope.HOUSE and signals.first_visit:
        scope, rules = Scope.ROOM, [*rules, 7]
    last = signals.last_scope
    # Rule 1 has already continued when recoveries_used >= max_recoveries, so with N = 1
    # this row can never apply, as the digest requires.
    if params.escalation and last is not None and scope <= last:
        scope, rules = Scope(min(last + 1, Scope.HOUSE)), [*rules, 8]
    if scope > params.max_scope:
        scope, rules = params.max_scope, [*rules, 9]
    return RecoveryDecision(scope, tuple(rules), fallback, proposal)


@dataclass(frozen=True)
class Searched:
    """A place an earlier attempt drove to: the memory entry it came from and where."""

    entry_id: str
    x: float
    y: float

    def __post_init__(self) -> None:
        if not self.entry_id:
            raise ValueError('a searched place needs the memory entry it came from')
        if not (math.isfinite(self.x) and math.isfinite(self.y)):
            raise ValueError(f'a searched place needs a finite position: {self.x}, {self.y}')


@dataclass(frozen=True)
class PlanParams:
    """How far each scope reaches: the radius an exclusion covers around a searched place,
    the search radius and how much ROOM widens it, the frontier radius explored around
    the robot, and how many searched places a plan carries (the most recent ones)."""

    exclusion_radius_m: float = 1.5
    search_radius_m: float = 5.0
    widen_factor: float = 2.0
    max_search_radius_m: float = 30.0
    frontier_radius_m: float = 4.0
    max_exclusions: int = 32

    def __post_init__(self) -> None:
        for name in (
            'exclusion_radius_m',
            'search_radius_m',
            'max_search_radius_m',
            'frontier_radius_m',
        ):
            value = getattr(self, name)
            if not (math.isfinite(value) and 0.0 < value <= 1000.0):
                raise ValueError(f'{name} must be in (0, 1000] m, got {value}')
        if self.exclusion_radius_m > MAX_EXCLUSION_RADIUS_M:
            raise ValueError(
                f'exclusion_radius_m must be at most {MAX_EXCLUSION_RADIUS_M:g} m, '
                f'got {self.exclusion_radius_m}'
            )
        if not (math.isfinite(self.widen_factor) and 1.0 <= self.widen_factor <= 10.0):
            raise ValueError(f'widen_factor must be in [1, 10], got {self.widen_factor}')
        if self.search_radius_m > self.max_search_radius_m:
            raise ValueError(
                f'search_radius_m ({self.search_radius_m}) exceeds max_search_radius_m '
                f'({self.max_search_radius_m})'
            )
        _check_count('max_exclusions', self.max_exclusions, minimum=1)


@dataclass(frozen=True)
class RecoveryPlan:
    """What the next attempt does, for the runner to carry out.

    Every scope keeps the map, places, ledger and memory, and starts a fresh agent
    conversation. `exclusions` leave the searched places out of the next memory query
    (an entry id, or anything within the exclusion radius of a position); ATTEMPT excludes
    the candidate just tried and the surroundings of every stop the judge refused, the
    wider scopes every place searched. `search_radius_m` is None where the search is not
    widened; `frontier_radius_m` is None where no exploring happens. `collect_views`
    turns in place for four heading-bucketed views; `relocalise` matches them against
    named places and map epochs, over the whole place graph when `place_graph`."""

    scope: Scope
    next_candidate: bool
    requery: bool
    exclusions: Exclusions
    search_radius_m: float | None
    frontier_radius_m: float | None
    collect_views: bool
    relocalise: bool
    place_graph: bool


def plan_for(
    scope: Scope,
    searched: Sequence[Searched],
    params: PlanParams,
    refused: Sequence[Searched] = (),
) -> RecoveryPlan:
    """What `scope` means in waymark. Scopes are cumulative: each re-examines what the
    narrower ones do and more. `searched` is in the order visited; the last is the
    candidate the failed attempt ended on. `refused` are the stops the judge ruled out,
    excluded with their surroundings at every scope."""
    recent = tuple(searched)[-params.max_exclusions :]
    if scope is Scope.ATTEMPT:
        recent = recent[-1:]
        around = tuple(refused)[-params.max_exclusions :]
    else:
        around = recent
    wide = scope >= Scope.ROOM
    positions = tuple(dict.fromkeys((p.x, p.y) for p in around))[-MAX_EXCLUDED:]
    return RecoveryPlan(
        scope=scope,
        next_candidate=scope is Scope.ATTEMPT,
        requery=scope >= Scope.PLACE,
        exclusions=Exclusions(
            entry_ids=tuple(dict.fromkeys(place.entry_id for place in recent))[-MAX_EXCLUDED:],
            positions=positions,
            radius_m=params.exclusion_radius_m if positions else 0.0,
        ),
        search_radius_m=(
            min(params.search_radius_m * params.widen_factor, params.max_search_radius_m)
            if wide
            else None
        ),
        frontier_radius_m=params.frontier_radius_m if wide else None,
        collect_views=scope > Scope.ATTEMPT,
        relocalise=scope >= Scope.FLOOR,
        place_graph=scope is Scope.HOUSE,
    )


def _check_count(name: str, value: int, minimum: int) -> None:
    if type(value) is not int or not minimum <= value <= MAX_COUNT:
        raise ValueError(f'{name} must be an integer in [{minimum}, {MAX_COUNT}], got {value!r}')
