# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Task sequences drawn from a generated world, and scoring of chained runs.

Scoring cases use a hand-built pair of rooms 5 m square joined by one door near the
south wall, with one sign on the east room's east wall facing west, so where the sign is
seen from and how far it is on foot can be reasoned out by hand.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from PIL import Image

from waymark.evaluation.task_cli import SINGLE_SHOT, TASK_LAYER, SuiteScores, done_when
from waymark.evaluation.task_geometry import Camera, FreeSpace, nearest_distance
from waymark.evaluation.task_scoring import (
    CPU_JUDGED_KINDS,
    SEARCHED_KINDS,
    GoalKind,
    RunScore,
    TaskOutcome,
    TaskScore,
    TaskScorer,
    comparison_table,
    kind_table,
    spl,
    summarise,
    task_table,
)
from waymark.evaluation.task_sequences import (
    MAX_TASKS,
    MIN_TASKS,
    SequenceFormatError,
    SequenceStep,
    StepKind,
    TaskSequence,
    generate_sequence,
    load_sequence,
    render_photos,
    save_sequence,
    tour_ground_truth,
)
from waymark.sim.generate import generate_world
from waymark.sim.world import Room, World, jambs, make_doorway, place_sign, room_faces
from waymark.tasks.outcomes import LedgerStatus

# --- sequences in a generated world ------------------------------------------------------


@pytest.fixture(scope='module')
def small():
    world = generate_world(0, 'small')
    return world, tour_ground_truth(world), FreeSpace(world)


@pytest.fixture(scope='module')
def sequences(small):
    world, truth, space = small
    return {seed: generate_sequence(world, truth, seed, space=space) for seed in (0, 1)}


def test_sequence_is_reproducible_by_seed(small, sequences):
    world, truth, space = small
    again = generate_sequence(world, truth, 0, space=space)
    assert again.to_json() == sequences[0].to_json()
    assert sequences[1].to_json() != sequences[0].to_json()


@pytest.mark.parametrize('seed', [0, 1])
def test_sequence_is_valid_and_chains_mixed_goals(small, sequences, seed):
    world, _, space = small
    sequence = sequences[seed]
    assert MIN_TASKS <= len(sequence.tasks) <= MAX_TASKS
    kinds = {task.kind for task in sequence.tasks}
    assert len(kinds) >= 3
    assert any(sequence.revisits())
    assert space.free(*sequence.start[:2])
    marked_at = {s.place: i for i, s in enumerate(sequence.steps) if s.kind is StepKind.MARK}
    scorer = TaskScorer(world, space=space)
    reach = space.distances_from(*sequence.start[:2])
    for index, step in enumerate(sequence.steps):
        if step.kind is StepKind.PLACE:
            between = sequence.steps[marked_at[step.place] + 1 : index]
            assert any(s.kind.is_task for s in between), 'a task lies between mark and goal'
        elif step.kind is StepKind.MARK:
            assert space.free(*step.pose[:2])
            assert math.isfinite(reach[space.geometry.world_to_cell(*step.pose[:2])])
        else:
            views = scorer.views_of(step.target)
            cells = space.geometry.world_to_cells(views)
            assert np.isfinite(reach[cells[:, 0], cells[:, 1]]).any(), step
        if step.kind is StepKind.PHOTO:
            assert scorer.camera.sees(world, *step.pose, step.target)


def test_sequence_round_trips_and_bad_files_are_refused(tmp_path, sequences):
    path = tmp_path / 'sequence.json'
    save_sequence(sequences[0], path)
    assert load_sequence(path) == sequences[0]
    data = sequences[0].model_dump(mode='json')
    for broken, message in (
        ('{"version": 2}', 'version 2'),
        ('[]', 'JSON object'),
        ('{', 'not JSON'),
    ):
        path.write_text(broken)
        with pytest.raises(SequenceFormatError, match=message):
            load_sequence(path)
    place = SequenceStep(kind=StepKind.PLACE, goal='go to the dock', place='dock')
    with pytest.raises(ValueError, match='before any MARK'):
        TaskSequence.model_validate(data | {'steps': [place.model_dump(mode='json')]})
    with pytest.raises(ValueError, match='needs target'):
        SequenceStep(kind=StepKind.SIGN, goal='go to the bank sign')


def test_photos_render_from_their_viewpoints(tmp_path, small, sequences):
    world = small[0]
    photos = [s for s in sequences[0].steps if s.kind is StepKind.PHOTO]
    assert photos
    written = render_photos(sequences[0], world, tmp_path, width=64, height=48)
    assert sorted(written) == sorted({tmp_path / s.image for s in photos})
    with Image.open(written[0]) as image:
        assert image.size == (64, 48)


# --- scoring in two hand-built rooms ------------------------------------------------------


def _two_rooms() -> World:
    west, east = Room('west', 0.0, 0.0, 5.0, 5.0), Room('east', 5.0, 0.0, 10.0, 5.0)
    door = make_doorway(('west', 'east'), (5.0, 1.0), horizontal=False)
    walls = [w for room in (west, east) for w in room_faces(room, [door], (150, 150, 150))]
    walls += jambs(door)
    rng = np.random.default_rng(0)
    sign = place_sign(rng, 'BANK', 'east', (10.0, 3.5), math.pi)
    return World('two-rooms', 0, (west, east), (door,), tuple(walls), (sign,), size='test')


@pytest.fixture(scope='module')
def scorer() -> TaskScorer:
    return TaskScorer(_two_rooms())


def _sequence(*steps: SequenceStep, start=(2.5, 4.0, 0.0)) -> TaskSequence:
    return TaskSequence(
        id='two-rooms-s0', world='two-rooms', world_seed=0, size='test', seed=0,
        start=start, steps=list(steps),
    )  # fmt: skip


SIGN = SequenceStep(kind=StepKind.SIGN, goal='go to the BANK sign', target='sign-0')


def test_stop_near_a_viewpoint_but_facing_away_fails(scorer):
    stop = (7.0, 3.5, math.pi)  # 3 m in front of the sign, looking back west
    near, seen = scorer.stop_succeeds('sign-0', stop, (math.pi,))
    assert near and not seen
    (task,) = scorer.score_run(_sequence(SIGN), [TaskOutcome.single_shot(stop, 5.0, 1)]).tasks
    assert not task.success and task.spl == 0.0
    # Single-shot turns in place for the runner's four views too, and one of them faces it.
    assert TaskOutcome.single_shot(stop, 5.0).stop_headings == pytest.approx(
        (math.pi, 1.5 * math.pi, 2.0 * math.pi, 2.5 * math.pi)
    )
    (turned,) = scorer.score_run(_sequence(SIGN), [TaskOutcome.single_shot(stop, 5.0)]).tasks
    assert turned.success


def test_a_task_that_took_no_stop_views_fails_where_ever_it_stood(scorer):
    # The runner stopped for want of a candidate, standing by chance in front of the sign.
    standing = TaskOutcome((7.0, 3.5, 0.0), (), 0.0, LedgerStatus.STOPPED)
    (task,) = scorer.score_run(_sequence(SIGN), [standing]).tasks
    assert task.near_view and not task.in_view and not task.success and not task.stopped


def test_a_photo_shows_writing_only_with_a_sign_in_its_view(scorer):
    def photo(yaw: float) -> SequenceStep:
        return SequenceStep(
            kind=StepKind.PHOTO, target='sign-0', pose=(7.0, 3.5, yaw), image='images/p.png'
        )

    assert scorer.goal_kind(photo(0.0)) is GoalKind.PHOTO_WRITING  # facing the BANK sign
    assert scorer.goal_kind(photo(math.pi)) is GoalKind.PHOTO_PLAIN  # facing the bare wall
    assert scorer.goal_kind(SIGN) is GoalKind.SIGN
    (task,) = scorer.score_run(
        _sequence(photo(math.pi)), [TaskOutcome.single_shot(None, 0.0)]
    ).tasks
    assert task.kind is GoalKind.PHOTO_PLAIN and not task.stopped


def test_stop_facing_the_target_succeeds_and_a_turn_in_place_finds_it(scorer):
    facing = TaskOutcome.single_shot((7.0, 3.5, 0.0), 6.0)
    (task,) = scorer.score_run(_sequence(SIGN), [facing]).tasks
    assert task.success and task.near_view and task.in_view
    turned = TaskOutcome((7.0, 3.5, math.pi), (math.pi, -math.pi / 2, 0.0, math.pi / 2), 6.0)
    assert scorer.score_run(_sequence(SIGN), [turned]).tasks[0].success


def test_sign_is_not_seen_from_the_other_room_or_from_under_it(scorer):
    assert scorer.stop_succeeds('sign-0', (4.0, 3.5, 0.0), (0.0,)) == (False, False)
    # A metre under the sign it is above the field of view, and no viewpoint is that close.
    assert nearest_distance(scorer.views_of('sign-0'), 8.9, 3.5) > 0.2
    assert not scorer.stop_succeeds('sign-0', (8.9, 3.5, 0.0), (0.0,))[1]


def test_named_place_succeeds_within_the_radius(scorer):
    mark = SequenceStep(kind=StepKind.MARK, place='dock', pose=(2.0, 2.0, 0.0))
    goal = SequenceStep(kind=StepKind.PLACE, goal='go to the dock', place='dock')
    sequence = _sequence(mark, SIGN, goal)
    facing = TaskOutcome.single_shot((7.0, 3.5, 0.0), 8.0)
    for offset, success in ((0.9, True), (1.1, False)):
        back = TaskOutcome.single_shot((2.0 + offset, 2.0, 0.0), 9.0)
        run = scorer.score_run(sequence, [facing, back])
        assert [t.success for t in run.tasks] == [True, success]


def test_spl_uses_the_shortest_free_path_through_the_door(scorer):
    straight = nearest_distance(scorer.views_of('sign-0'), 2.5, 4.0)
    (task,) = scorer.score_run(
        _sequence(SIGN), [TaskOutcome.single_shot((7.0, 3.5, 0.0), 20.0)]
    ).tasks
    # The sign is seen through the door from the west room too, but not from the start:
    # the way to the nearest viewpoint bends round the wall, longer than the straight line.
    assert task.shortest_m > straight + 0.3
    assert task.spl == pytest.approx(task.shortest_m / 20.0)
    short = TaskOutcome.single_shot((7.0, 3.5, 0.0), 1.0)  # odometry shorter than possible
    assert scorer.score_run(_sequence(SIGN), [short]).tasks[0].spl == 1.0


def test_chained_start_is_the_previous_stop(scorer):
    stop = (7.0, 3.5, 0.0)
    outcomes = [TaskOutcome.single_shot(stop, 10.0), TaskOutcome.single_shot(stop, 0.0)]
    first, second = scorer.score_run(_sequence(SIGN, SIGN), outcomes).tasks
    assert first.shortest_m > 3.0 and second.shortest_m < 0.3
    assert (first.revisit, second.revisit) == (False, True)
    assert second.spl == 1.0


def test_a_wrong_first_stop_then_a_right_one_is_a_converted_failure(scorer):
    away, facing = (4.0, 3.5, 0.0), (7.0, 3.5, 0.0)  # the other room, then the sign's
    turn = (0.0, math.pi / 2, math.pi, -math.pi / 2)
    later = TaskOutcome(facing, turn, 9.0, LedgerStatus.CERTIFIED, first_stop=away, attempts=2)
    at_once = TaskOutcome(facing, turn, 6.0, LedgerStatus.CERTIFIED, first_stop=facing)
    in_vain = TaskOutcome(away, turn, 9.0, LedgerStatus.NOT_DONE, first_stop=away, attempts=3)
    runs = [scorer.score_run(_sequence(SIGN), [o]).tasks[0] for o in (later, at_once, in_vain)]
    assert [t.first_success for t in runs] == [False, True, False]
    assert [t.first_attempt_failed for t in runs] == [True, False, True]
    assert [t.converted for t in runs] == [True, False, False]  # with no controller recovery
    assert summarise([RunScore('a', tuple(runs))]).extra_attempts == 3


def test_outcomes_must_match_the_sequence(scorer):
    with pytest.raises(ValueError, match='1 tasks, got 2'):
        scorer.score_run(_sequence(SIGN), [TaskOutcome.single_shot(None, 0.0)] * 2)
    with pytest.raises(ValueError, match='no landmark'):
        scorer.views_of('sign-9')


def test_spl_arithmetic():
    assert spl(True, 4.0, 8.0) == 0.5
    assert spl(False, 4.0, 4.0) == 0.0
    assert spl(True, math.inf, 4.0) == 0.0
    assert spl(True, 0.0, 0.0) == 1.0


# --- aggregates ---------------------------------------------------------------------------


def _task(
    success,
    status=None,
    revisit=False,
    recoveries=0,
    first_success=None,
    attempts=1,
    stopped=True,
    kind=GoalKind.SIGN,
) -> TaskScore:
    return TaskScore(
        number=1, kind=kind, revisit=revisit, success=success, near_view=success,
        in_view=success, shortest_m=2.0, path_m=4.0, spl=spl(success, 2.0, 4.0),
        status=status, recoveries=recoveries, first_success=first_success, attempts=attempts,
        stopped=stopped,
    )  # fmt: skip


def test_judge_precision_recall_and_recovery_conversion():
    certified, not_done = LedgerStatus.CERTIFIED, LedgerStatus.NOT_DONE
    run = RunScore(
        'a',
        (
            _task(True, certified),
            _task(True, certified, recoveries=1, first_success=False, attempts=2),  # converted
            _task(True, certified, first_success=False, attempts=2),  # next candidate: converted
            _task(False, certified),  # a false certificate
            _task(True, not_done),  # a success the judge missed
            _task(False, not_done, recoveries=2, first_success=False, attempts=3),  # in vain
            _task(True, LedgerStatus.UNRESOLVED, recoveries=1, first_success=True, attempts=2),
            _task(False, LedgerStatus.STOPPED, stopped=False),  # nothing recalled: no stop
        ),
    )
    summary = summarise([run])
    assert (summary.judge_precision.hits, summary.judge_precision.total) == (3, 4)
    assert (summary.judge_recall.hits, summary.judge_recall.total) == (3, 5)
    assert summary.statuses == {'CERTIFIED': 4, 'NOT DONE': 2, 'STOPPED': 1, 'UNRESOLVED': 1}
    assert summary.recoveries == 4 and summary.extra_attempts == 5
    # Failed first attempts: the two converted, the false certificate, the vain recovery and
    # the task that never stopped; a first stop that succeeded is no failure, whatever came
    # after it.
    assert (summary.conversion.hits, summary.conversion.total) == (2, 5)
    assert summary.stopless == 1
    assert summary.spl == pytest.approx(5 * 0.5 / 8)
    assert summary.chain_success.hits == 0


def test_revisit_split_and_chain_success():
    runs = [
        RunScore('a', (_task(True), _task(True, revisit=True))),
        RunScore('b', (_task(False), _task(True, revisit=True), _task(False, revisit=True))),
    ]
    summary = summarise(runs)
    assert (summary.revisit_success.hits, summary.revisit_success.total) == (2, 3)
    assert (summary.first_visit_success.hits, summary.first_visit_success.total) == (1, 2)
    assert (summary.chain_success.hits, summary.chain_success.total) == (1, 2)
    assert (summary.success.hits, summary.success.total) == (3, 5)


def test_comparison_table_puts_flows_side_by_side():
    layer = summarise([RunScore('a', (_task(True, LedgerStatus.CERTIFIED), _task(False)))])
    single = summarise([RunScore('a', (_task(True), _task(False)))])
    table = comparison_table({'task layer': layer, 'single-shot Ask -> GoTo': single})
    lines = table.splitlines()
    assert lines[0] == '| metric | task layer | single-shot Ask -> GoTo |'
    assert '| success | 50.0 % (1/2) | 50.0 % (1/2) |' in lines
    assert '| CERTIFIED | 1 | - |' in lines
    # Single-shot has no ledger, so no judge: a dash, not a recall of 0 %.
    assert '| judge precision (CERTIFIED and true) | 100.0 % (1/1) | \u2013 |' in lines
    assert '| judge recall (true and CERTIFIED) | 100.0 % (1/1) | \u2013 |' in lines
    assert '| attempts beyond the first | 0 | 0 |' in lines
    assert '| of which never stopped (nothing recalled) | 0 | 0 |' in lines
    assert all(line.count('|') == 4 for line in lines)
    with pytest.raises(ValueError):
        comparison_table({})


def _kinds_run(name: str, *tasks: TaskScore) -> RunScore:
    return RunScore(name, tasks)


def test_summaries_by_kind_leave_places_out_and_count_chains_by_those_tasks():
    place, plain = GoalKind.PLACE, GoalKind.PHOTO_PLAIN
    runs = [
        _kinds_run('a', _task(True, kind=place), _task(False, first_success=False)),
        _kinds_run('b', _task(True, kind=place), _task(True, kind=plain)),
        _kinds_run('c', _task(True, kind=place)),  # no searched task: no chain to count
    ]
    searched = summarise(runs, SEARCHED_KINDS)
    assert (searched.success.hits, searched.success.total) == (1, 2)
    assert (searched.chain_success.hits, searched.chain_success.total) == (1, 2)
    places = summarise(runs, (place,))
    assert (places.success.hits, places.success.total) == (3, 3)
    assert summarise(runs).tasks == 5  # every kind by default


def test_kind_table_gives_each_kind_and_flow_a_row():
    certified = LedgerStatus.CERTIFIED
    layer = [
        _kinds_run(
            'a',
            _task(True, certified, first_success=False, attempts=2),  # converted
            _task(False, LedgerStatus.STOPPED, stopped=False, kind=GoalKind.PHOTO_PLAIN),
            _task(True, certified, kind=GoalKind.PLACE),
        )
    ]
    single = [
        _kinds_run(
            'a',
            _task(False),
            _task(False, stopped=False, kind=GoalKind.PHOTO_PLAIN),
            _task(True, kind=GoalKind.PLACE),
        )
    ]
    lines = kind_table({TASK_LAYER: layer, SINGLE_SHOT: single}).splitlines()
    assert lines[0].startswith('| kind | flow | n | success | CERTIFIED and true |')
    assert lines[2:] == [
        '| sign | task-layer | 1 | 100.0 % (1/1) | 100.0 % (1/1) | 100.0 % (1/1) '
        '| 100.0 % (1/1) | 0 |',
        '| sign | single-shot | 1 | 0.0 % (0/1) | \u2013 | \u2013 | 0.0 % (0/1) | 0 |',
        '| photo without writing | task-layer | 1 | 0.0 % (0/1) | - | - | 0.0 % (0/1) | 1 |',
        '| photo without writing | single-shot | 1 | 0.0 % (0/1) | \u2013 | \u2013 '
        '| 0.0 % (0/1) | 1 |',
        '| place | task-layer | 1 | 100.0 % (1/1) | 100.0 % (1/1) | 100.0 % (1/1) | - | 0 |',
        '| place | single-shot | 1 | 100.0 % (1/1) | \u2013 | \u2013 | - | 0 |',
    ]  # no instance or photo-with-writing task: no row
    with pytest.raises(ValueError):
        kind_table({})


def test_task_table_lists_each_task_under_every_flow(scorer):
    sequence = _sequence(SIGN, SIGN)
    turn = (0.0, math.pi / 2, math.pi, -math.pi / 2)
    refused = TaskOutcome(
        (4.0, 3.5, 0.0), turn, 9.0, LedgerStatus.NOT_DONE, first_stop=(7.0, 3.5, 0.0), attempts=3
    )
    layer = scorer.score_run(sequence, [refused, refused])
    single = scorer.score_run(sequence, [TaskOutcome.single_shot((7.0, 3.5, 0.0), 6.0)] * 2)
    lines = task_table(sequence, {TASK_LAYER: layer, SINGLE_SHOT: single}).splitlines()
    assert lines[0] == (
        '| task | kind | goal | task-layer success | first stop | status | attempts '
        '| single-shot success | first stop | status | attempts |'
    )
    # A right first stop the judge refused, then a wrong last one: the task a flow lost.
    assert lines[2] == (
        '| 1 | sign | go to the BANK sign | no | yes | NOT DONE | 3 | yes | - | - | 1 |'
    )
    assert len(lines) == 4


def test_acceptance_figures_are_on_equal_terms():
    certified = LedgerStatus.CERTIFIED
    suite = SuiteScores()
    suite.add(
        TASK_LAYER,
        _kinds_run(
            'a',
            _task(True, certified, first_success=False, attempts=2),  # sign, converted
            _task(False, LedgerStatus.NOT_DONE, first_success=False, kind=GoalKind.INSTANCE),
            _task(True, certified, kind=GoalKind.PLACE),
            _task(True, certified, kind=GoalKind.PLACE),
        ),
    )
    suite.add(
        SINGLE_SHOT,
        _kinds_run(
            'a',
            _task(False),
            _task(False, kind=GoalKind.INSTANCE),
            _task(True, kind=GoalKind.PLACE),
            _task(True, kind=GoalKind.PLACE),
        ),
    )
    lines = done_when(suite)
    # Places apart: 1/2 against 0/2 is +50 points, not 3/4 against 2/4 (+25).
    assert lines[0].startswith('task layer minus single-shot success (places apart): +50.0 points')
    assert lines[1] == 'P(true success | CERTIFIED): 100.0 % (1/1) (wanted >= 95 %)'
    # The instance goal's failed first attempt is not among the kinds a CPU judge decides.
    assert GoalKind.INSTANCE not in CPU_JUDGED_KINDS
    assert lines[2].startswith('failed first attempts converted (sign, photo with writing')
    assert '100.0 % (1/1)' in lines[2]


def test_camera_rejects_a_bad_field_of_view():
    with pytest.raises(ValueError):
        Camera(hfov_deg=0.0)
