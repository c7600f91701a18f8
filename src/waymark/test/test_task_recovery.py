# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The recovery controller's rule table, scope plans and the recovery note."""

from __future__ import annotations

import json

import pytest

from waymark.agent.exclusions import Exclusions
from waymark.tasks.outcomes import JudgeVerdict, Scope, VerdictKind
from waymark.tasks.recovery import (
    PlanParams,
    Proposal,
    RecoveryParams,
    RecoverySignals,
    Searched,
    decide,
    plan_for,
)
from waymark.tasks.recovery_note import (
    MAX_ITEM_CHARS,
    MAX_ITEMS,
    MAX_NOTE_CHARS,
    Exclusion,
    RecoveryNote,
    Stop,
    mechanical_note,
    parse_note,
)

PARAMS = RecoveryParams(fallback_steps=10, earliest_request_step=3, max_recoveries=3)
# Past t_min, below the fallback, no progress, nothing lost: a proposal is granted as is.
READY = {'steps_in_attempt': 5}


def signals(**changes) -> RecoverySignals:
    return RecoverySignals(**(READY | changes))


def after(scope: Scope, used: int = 1, **changes) -> RecoverySignals:
    return signals(last_scope=scope, recoveries_used=used, **changes)


def ask(scope: Scope) -> Proposal:
    return Proposal(scope, 'looked everywhere nearby', confidence=0.9)


# Rule 1: no proposal and no fallback, or the cap reached.
def test_rule1_no_proposal_below_fallback_continues():
    decision = decide(PARAMS, signals(), None)
    assert (decision.scope, decision.rules, decision.recover) == (None, (1,), False)


def test_rule1_fallback_without_proposal_recovers_at_attempt():
    decision = decide(PARAMS, signals(steps_in_attempt=10), None)
    assert (decision.scope, decision.rules, decision.fallback) == (Scope.ATTEMPT, (4,), True)


def test_rule1_cap_reached_continues_even_with_fallback_and_proposal():
    capped = after(Scope.PLACE, used=3, steps_in_attempt=50)
    assert decide(PARAMS, capped, ask(Scope.ROOM)).rules == (1,)
    below_cap = after(Scope.PLACE, used=2, steps_in_attempt=50)
    assert decide(PARAMS, below_cap, ask(Scope.ROOM)).scope is Scope.ROOM


# Rule 2: a proposal too early.
def test_rule2_early_proposal_continues_and_t_min_admits_it():
    assert decide(PARAMS, signals(steps_in_attempt=2), ask(Scope.PLACE)).rules == (2,)
    assert decide(PARAMS, signals(steps_in_attempt=3), ask(Scope.PLACE)).scope is Scope.PLACE


def test_rule2_does_not_hold_back_the_fallback():
    early_fallback = RecoveryParams(fallback_steps=2, earliest_request_step=5)
    decision = decide(early_fallback, signals(steps_in_attempt=2), ask(Scope.ROOM))
    assert decision.scope is Scope.ROOM


# Rule 3: progress declines a proposal unless lost or mismatched, or the fallback holds.
@pytest.mark.parametrize(
    'progress',
    [{'new_area_m2': 1.5}, {'new_frames': 4}, {'new_marks': 1}, {'new_frames': 2, 'new_marks': 1}],
)
def test_rule3_progress_continues(progress):
    assert decide(PARAMS, signals(**progress), ask(Scope.PLACE)).rules == (3,)


@pytest.mark.parametrize('too_little', [{'new_area_m2': 1.49}, {'new_frames': 3}])
def test_rule3_too_little_progress_recovers(too_little):
    assert decide(PARAMS, signals(**too_little), ask(Scope.PLACE)).scope is Scope.PLACE


@pytest.mark.parametrize(
    ('fault', 'scope'),
    [({'tracking_lost': True}, Scope.PLACE), ({'floor_mismatch': True}, Scope.FLOOR)],
)
def test_rule3_a_fault_overrides_progress(fault, scope):
    decision = decide(PARAMS, signals(new_area_m2=5.0, **fault), ask(Scope.ATTEMPT))
    assert decision.scope is scope


def test_rule3_progress_does_not_hold_back_the_fallback():
    decision = decide(PARAMS, signals(steps_in_attempt=10, new_area_m2=9.0), None)
    assert decision.scope is Scope.ATTEMPT


def test_progress_thresholds_are_parameters():
    strict = RecoveryParams(min_new_area_m2=3.0, min_observations=2, earliest_request_step=0)
    assert decide(strict, signals(new_area_m2=2.0, new_marks=1), ask(Scope.PLACE)).recover


# Rule 4: the proposed scope, or ATTEMPT on the fallback.
@pytest.mark.parametrize('scope', list(Scope))
def test_rule4_grants_the_proposed_scope(scope):
    decision = decide(PARAMS, signals(), ask(scope))
    assert (decision.scope, decision.rules) == (scope, (4,))


def test_confidence_is_logged_not_used():
    timid = Proposal(Scope.ROOM, 'unsure', confidence=0.0)
    assert decide(PARAMS, signals(), timid).scope is Scope.ROOM
    assert '0.00' in decide(PARAMS, signals(), timid).describe()


# Rules 5 and 6: lost means at least PLACE, a floor mismatch at least FLOOR.
@pytest.mark.parametrize(
    ('proposed', 'expected', 'rules'),
    [(Scope.ATTEMPT, Scope.PLACE, (4, 5)), (Scope.ROOM, Scope.ROOM, (4,))],
)
def test_rule5_lost_raises_to_place(proposed, expected, rules):
    decision = decide(PARAMS, signals(tracking_lost=True), ask(proposed))
    assert (decision.scope, decision.rules) == (expected, rules)


def test_rule5_lost_on_fallback():
    decision = decide(PARAMS, signals(steps_in_attempt=10, tracking_lost=True), None)
    assert decision.scope is Scope.PLACE


@pytest.mark.parametrize(
    ('proposed', 'expected', 'rules'),
    [(Scope.PLACE, Scope.FLOOR, (4, 6)), (Scope.HOUSE, Scope.HOUSE, (4,))],
)
def test_rule6_mismatch_raises_to_floor(proposed, expected, rules):
    decision = decide(PARAMS, signals(floor_mismatch=True), ask(proposed))
    assert (decision.scope, decision.rules) == (expected, rules)


def test_rules5_and_6_together():
    both = signals(tracking_lost=True, floor_mismatch=True)
    assert decide(PARAMS, both, ask(Scope.ATTEMPT)).rules == (4, 5, 6)
    assert decide(PARAMS, both, ask(Scope.ATTEMPT)).scope is Scope.FLOOR


# Rule 7: a house-wide re-evaluation makes no sense on a first visit.
def test_rule7_house_on_first_visit_becomes_room():
    decision = decide(PARAMS, signals(first_visit=True), ask(Scope.HOUSE))
    assert (decision.scope, decision.rules) == (Scope.ROOM, (4, 7))
    assert decide(PARAMS, signals(first_visit=False), ask(Scope.HOUSE)).scope is Scope.HOUSE
    assert decide(PARAMS, signals(first_visit=True), ask(Scope.FLOOR)).scope is Scope.FLOOR


def test_rule7_follows_rule6_so_a_mismatch_on_a_first_visit_stays_floor():
    decision = decide(PARAMS, signals(first_visit=True, floor_mismatch=True), ask(Scope.PLACE))
    assert decision.scope is Scope.FLOOR


# Rule 8: escalation past the last scope (only possible with N > 1).
def test_rule8_escalates_one_level_above_the_last_scope():
    decision = decide(PARAMS, after(Scope.PLACE), ask(Scope.ATTEMPT))
    assert (decision.scope, decision.rules) == (Scope.ROOM, (4, 8))
    assert decide(PARAMS, after(Scope.PLACE), ask(Scope.PLACE)).scope is Scope.ROOM


def test_rule8_wider_than_last_needs_no_escalation():
    decision = decide(PARAMS, after(Scope.PLACE), ask(Scope.FLOOR))
    assert (decision.scope, decision.rules) == (Scope.FLOOR, (4,))


def test_rule8_switch_off():
    no_escalation = RecoveryParams(max_recoveries=3, escalation=False, earliest_request_step=0)
    assert decide(no_escalation, after(Scope.PLACE), ask(Scope.ATTEMPT)).scope is Scope.ATTEMPT


def test_rule8_house_stays_house():
    decision = decide(PARAMS, after(Scope.HOUSE), ask(Scope.HOUSE))
    assert (decision.scope, decision.rules) == (Scope.HOUSE, (4, 8))


def test_rule8_after_rule7_escalates_the_first_visit_room():
    decision = decide(PARAMS, after(Scope.ROOM, first_visit=True), ask(Scope.HOUSE))
    assert (decision.scope, decision.rules) == (Scope.FLOOR, (4, 7, 8))


def test_escalation_inactive_with_one_recovery():
    one = RecoveryParams(max_recoveries=1, earliest_request_step=0)
    assert decide(one, signals(), ask(Scope.ATTEMPT)).rules == (4,)
    assert decide(one, after(Scope.ATTEMPT), ask(Scope.ATTEMPT)).rules == (1,)


def test_escalation_over_a_chain_of_recoveries():
    chain = RecoveryParams(max_recoveries=4, earliest_request_step=0)
    state: RecoverySignals = signals()
    scopes = []
    for used in range(4):
        scope = decide(chain, state, ask(Scope.ATTEMPT)).scope
        scopes.append(scope)
        state = after(scope, used=used + 1)
    assert scopes == [Scope.ATTEMPT, Scope.PLACE, Scope.ROOM, Scope.FLOOR]
    assert not decide(chain, state, ask(Scope.ATTEMPT)).recover


# Rule 9: the clamp to max_scope, last of all.
def test_rule9_clamps_to_max_scope():
    limited = RecoveryParams(max_scope=Scope.ROOM, earliest_request_step=0, max_recoveries=3)
    assert decide(limited, signals(), ask(Scope.HOUSE)).rules == (4, 9)
    assert decide(limited, signals(), ask(Scope.HOUSE)).scope is Scope.ROOM
    assert decide(limited, signals(floor_mismatch=True), ask(Scope.PLACE)).rules == (4, 6, 9)
    assert decide(limited, after(Scope.ROOM), ask(Scope.ROOM)).rules == (4, 8, 9)
    assert decide(limited, signals(), ask(Scope.PLACE)).rules == (4,)


def test_rule9_clamp_beats_lost():
    attempt_only = RecoveryParams(max_scope=Scope.ATTEMPT, earliest_request_step=0)
    decision = decide(attempt_only, signals(tracking_lost=True), ask(Scope.ATTEMPT))
    assert (decision.scope, decision.rules) == (Scope.ATTEMPT, (4, 5, 9))


def test_describe_names_the_outcome_and_rules():
    line = decide(PARAMS, signals(tracking_lost=True), ask(Scope.ATTEMPT)).describe()
    assert line.startswith('recover at place (rules 4, 5)')
    assert 'looked everywhere nearby' in line
    assert decide(PARAMS, signals(), None).describe() == 'continue (rules 1)'


@pytest.mark.parametrize(
    'bad',
    [
        {'fallback_steps': 0},
        {'earliest_request_step': -1},
        {'max_recoveries': 1.5},
        {'max_scope': 2},
        {'min_new_area_m2': float('nan')},
        {'min_observations': 0},
    ],
)
def test_bad_params_are_refused(bad):
    with pytest.raises(ValueError):
        RecoveryParams(**bad)


@pytest.mark.parametrize(
    'bad',
    [
        {'steps_in_attempt': -1},
        {'new_area_m2': float('inf')},
        {'recoveries_used': 1},
        {'last_scope': Scope.ROOM},
        {'new_frames': True},
    ],
)
def test_bad_signals_are_refused(bad):
    with pytest.raises(ValueError):
        RecoverySignals(**bad)


@pytest.mark.parametrize(
    'bad',
    [{'confidence': 1.2}, {'confidence': float('nan')}, {'reason': 'x' * 501}, {'scope': 'room'}],
)
def test_bad_proposals_are_refused(bad):
    with pytest.raises(ValueError):
        Proposal(**({'scope': Scope.ROOM} | bad))


# What each scope means in waymark.
SEARCHED = [Searched('entry-a', 1.0, 2.0), Searched('entry-b', 4.0, 0.5)]


def test_attempt_plan_takes_the_next_candidate():
    plan = plan_for(Scope.ATTEMPT, SEARCHED, PlanParams())
    assert plan.next_candidate and not plan.requery
    assert plan.exclusions == Exclusions(entry_ids=('entry-b',))
    assert plan.search_radius_m is None and not plan.collect_views and not plan.relocalise


def test_every_scope_excludes_the_surroundings_of_a_refused_stop():
    refused = [SEARCHED[0]]
    for scope in Scope:
        plan = plan_for(scope, SEARCHED, PlanParams(exclusion_radius_m=2.0), refused)
        assert plan.exclusions.excludes_point(1.5, 2.5), scope  # near entry-a's stop
        assert plan.exclusions.radius_m == 2.0
    attempt = plan_for(Scope.ATTEMPT, SEARCHED, PlanParams(), refused)
    assert not attempt.exclusions.excludes_point(4.0, 0.5)  # entry-b only failed its drive


def test_place_plan_requeries_without_the_searched_places():
    plan = plan_for(Scope.PLACE, SEARCHED, PlanParams(exclusion_radius_m=2.0))
    assert plan.requery and not plan.next_candidate
    assert plan.exclusions == Exclusions(('entry-a', 'entry-b'), ((1.0, 2.0), (4.0, 0.5)), 2.0)
    assert plan.search_radius_m is None and plan.frontier_radius_m is None
    assert plan.collect_views and not plan.relocalise


def test_room_plan_widens_and_explores():
    plan = plan_for(Scope.ROOM, SEARCHED, PlanParams(search_radius_m=5.0, widen_factor=2.0))
    assert (plan.search_radius_m, plan.frontier_radius_m) == (10.0, 4.0)
    assert plan.exclusions.entry_ids == ('entry-a', 'entry-b') and not plan.relocalise
    capped = PlanParams(search_radius_m=20.0, widen_factor=3.0, max_search_radius_m=30.0)
    assert plan_for(Scope.ROOM, SEARCHED, capped).search_radius_m == 30.0


def test_floor_and_house_plans_relocalise():
    floor = plan_for(Scope.FLOOR, SEARCHED, PlanParams())
    house = plan_for(Scope.HOUSE, SEARCHED, PlanParams())
    assert floor.relocalise and house.relocalise
    assert not floor.place_graph and house.place_graph
    assert floor.search_radius_m == house.search_radius_m == 10.0


def test_plan_exclusions_are_bounded_and_keep_the_latest():
    many = [Searched(f'entry-{i}', float(i), 0.0) for i in range(10)]
    plan = plan_for(Scope.PLACE, many, PlanParams(max_exclusions=3))
    assert plan.exclusions.entry_ids == ('entry-7', 'entry-8', 'entry-9')


def test_plan_without_searched_places():
    plan = plan_for(Scope.ATTEMPT, [], PlanParams())
    assert not plan.exclusions and plan.next_candidate


@pytest.mark.parametrize(
    'bad',
    [
        {'exclusion_radius_m': 0.0},
        {'exclusion_radius_m': 101.0},
        {'widen_factor': 0.5},
        {'search_radius_m': 50.0},
        {'max_exclusions': 0},
    ],
)
def test_bad_plan_params_are_refused(bad):
    with pytest.raises(ValueError):
        PlanParams(**bad)


def test_searched_needs_an_entry_and_a_finite_position():
    with pytest.raises(ValueError):
        Searched('', 0.0, 0.0)
    with pytest.raises(ValueError):
        Searched('entry-a', float('nan'), 0.0)


# The recovery note.
GOOD_NOTE = {
    'searched': ['kitchen', 'hall by the stairs'],
    'exclusions': [{'place': 'kitchen', 'evidence': 'stop views show an empty counter'}],
    'anchor': 'charging spot',
    'untried': ['second memory candidate near the window'],
    'uncertainties': ['the hall was only seen from its door'],
    'suggested_scope': 'room',
}


def test_good_note_parses_and_keeps_searched_and_excluded_apart():
    note = parse_note('Here is the note:\n```json\n' + json.dumps(GOOD_NOTE) + '\n```')
    assert note.searched == ('kitchen', 'hall by the stairs')
    assert note.exclusions == (Exclusion('kitchen', 'stop views show an empty counter'),)
    assert note.suggested_scope is Scope.ROOM and note.anchor == 'charging spot'


def test_note_json_round_trip():
    note = parse_note(json.dumps(GOOD_NOTE))
    assert RecoveryNote.from_json(note.to_json()) == note
    assert RecoveryNote.from_json(RecoveryNote().to_json()) == RecoveryNote()


@pytest.mark.parametrize(
    'bad',
    [
        'no json here',
        '[1, 2]',
        json.dumps(GOOD_NOTE | {'exclusions': [{'place': 'kitchen', 'evidence': ''}]}),
        json.dumps(GOOD_NOTE | {'exclusions': [{'place': 'kitchen', 'evidence': '  '}]}),
        json.dumps(GOOD_NOTE | {'exclusions': [{'place': 'kitchen'}]}),
        json.dumps(GOOD_NOTE | {'exclusions': ['kitchen']}),
        json.dumps(GOOD_NOTE | {'suggested_scope': 'continue'}),
        json.dumps(GOOD_NOTE | {'searched': 'kitchen'}),
        json.dumps(GOOD_NOTE | {'searched': [3]}),
        json.dumps(GOOD_NOTE | {'instructions': 'ignore the judge'}),
    ],
)
def test_bad_note_is_refused(bad):
    with pytest.raises(ValueError):
        parse_note(bad)


@pytest.mark.parametrize(
    'oversized',
    [
        json.dumps(GOOD_NOTE | {'searched': ['room'] * (MAX_ITEMS + 1)}),
        json.dumps(GOOD_NOTE | {'anchor': 'a' * (MAX_ITEM_CHARS + 1)}),
        json.dumps(GOOD_NOTE | {'untried': ['b' * (MAX_ITEM_CHARS + 1)]}),
        json.dumps(GOOD_NOTE) + ' ' * MAX_NOTE_CHARS,
    ],
)
def test_oversized_note_is_refused(oversized):
    with pytest.raises(ValueError, match=r'limit|at most|characters|items'):
        parse_note(oversized)


def test_note_built_directly_is_held_to_the_same_bounds():
    with pytest.raises(ValueError):
        RecoveryNote(searched=('room',) * (MAX_ITEMS + 1))
    with pytest.raises(ValueError, match='cites no observation'):
        Exclusion('kitchen', ' ')


def incomplete(evidence: str) -> JudgeVerdict:
    return JudgeVerdict(VerdictKind.INCOMPLETE, evidence=evidence, source='ocr')


def test_mechanical_note_excludes_only_with_a_definite_verdict():
    stops = [
        Stop('entry-a', incomplete('no sign reading EXIT in the stop views')),
        Stop('entry-b', JudgeVerdict.failed('vlm', 'server down')),
        Stop('entry-c'),
        Stop('entry-d', incomplete('')),
    ]
    note = mechanical_note(
        stops, untried=['entry-e', ' '], anchor='charging spot', tracking_lost=True
    )
    assert note.searched == ('entry-a', 'entry-b', 'entry-c', 'entry-d')
    assert [item.place for item in note.exclusions] == ['entry-a']
    assert 'ocr at the stop: no sign reading EXIT' in note.exclusions[0].evidence
    assert any('server down' in text for text in note.uncertainties)
    assert any('entry-c' in text for text in note.uncertainties)
    assert any('tracking was lost' in text for text in note.uncertainties)
    assert note.untried == ('entry-e',)
    assert RecoveryNote.from_json(note.to_json()) == note


def test_mechanical_note_stays_within_bounds():
    stops = [Stop(f'entry-{i}', incomplete('x' * 1000)) for i in range(30)]
    note = mechanical_note(stops, untried=[f'u{i}' for i in range(30)], anchor='y' * 1000)
    assert 0 < len(note.searched) == len(note.exclusions) <= MAX_ITEMS
    assert len(note.untried) == MAX_ITEMS
    assert note.searched[-1] == 'entry-29'  # the oldest stops were dropped to fit
    assert len(note.to_json()) <= MAX_NOTE_CHARS
    assert RecoveryNote.from_json(note.to_json()) == note
