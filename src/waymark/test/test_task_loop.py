# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The closed-loop task evaluation: the simulated clock, the sim base's drive, and one
short sequence run end to end through the task runner and single-shot in two hand-built
rooms (one BANK sign on the east room's far wall), with real OCR and embeddings."""

from __future__ import annotations

import math
import threading
import time

import cv2
import numpy as np
import pytest

from waymark.agent.exclusions import Exclusions
from waymark.evaluation.task_geometry import FreeSpace
from waymark.evaluation.task_loop import (
    MemoryRecall,
    Setting,
    SimBase,
    SimClock,
    SimParams,
    SimTimeJudge,
    build_tour_memory,
    memory_relocator,
    run_single_shot,
    run_task_layer,
)
from waymark.evaluation.task_scoring import TaskScorer
from waymark.evaluation.task_sequences import SequenceStep, StepKind, TaskSequence
from waymark.geometry import Pose
from waymark.localisation.params import LocalisationParams
from waymark.memory.views.registry import ViewSettings
from waymark.sim.render import render
from waymark.sim.world import Room, World, jambs, make_doorway, place_sign, room_faces
from waymark.tasks.attempts import DriveOutcome, RecallQuery, RunGoal
from waymark.tasks.judge import OcrJudge
from waymark.tasks.outcomes import LedgerStatus, TerminationReason
from waymark.tasks.places import PlacePose
from waymark.tasks.records import GoalModality, TaskGoal
from waymark.tasks.runner import RunnerParams

START = (2.5, 4.0, 0.0)


def _two_rooms() -> World:
    west, east = Room('west', 0.0, 0.0, 5.0, 5.0), Room('east', 5.0, 0.0, 10.0, 5.0)
    door = make_doorway(('west', 'east'), (5.0, 1.0), horizontal=False)
    walls = [w for room in (west, east) for w in room_faces(room, [door], (150, 150, 150))]
    walls += jambs(door)
    sign = place_sign(np.random.default_rng(0), 'BANK', 'east', (10.0, 3.5), math.pi)
    return World('two-rooms', 0, (west, east), (door,), tuple(walls), (sign,), size='test')


@pytest.fixture(scope='module')
def rooms():
    world = _two_rooms()
    return world, FreeSpace(world)


def _base(rooms, params: SimParams | None = None) -> tuple[SimBase, SimClock]:
    world, space = rooms
    clock = SimClock(origin_ns=1_000)
    return SimBase(world, space, clock, START, params), clock


def test_clock_moves_only_when_advanced():
    clock = SimClock(origin_ns=5)
    assert (clock.monotonic(), clock.time_ns()) == (0.0, 5)
    clock.advance(1.5)
    assert clock.monotonic() == 1.5 and clock.time_ns() == 5 + 1_500_000_000
    for bad in (-1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match='forward'):
            clock.advance(bad)
    assert clock.monotonic() == 1.5


def test_drive_through_the_door_takes_simulated_time(rooms):
    base, clock = _base(rooms, SimParams(speed_mps=0.5))
    goal = Pose.from_xyz_yaw(7.0, 3.5, 0.0, 0.0)
    result = base.drive(goal, deadline=1_000.0, cancel=threading.Event())
    assert result.outcome is DriveOutcome.REACHED
    # The wall between the rooms has its door near the south wall: the way bends round it.
    assert result.distance_m > math.dist(START[:2], (7.0, 3.5)) + 0.5
    assert clock.monotonic() == pytest.approx(result.distance_m / 0.5)
    assert math.dist((base.x, base.y), (7.0, 3.5)) < 0.1 and base.yaw == 0.0
    assert base.frames_since(0) >= int(result.distance_m) - 1
    assert base.signals().first_visit  # nothing was explored before this drive


def test_drive_stops_at_the_deadline_with_what_it_drove(rooms):
    base, clock = _base(rooms, SimParams(speed_mps=0.5))
    goal = Pose.from_xyz_yaw(7.0, 3.5, 0.0, 0.0)
    result = base.drive(goal, deadline=4.0, cancel=threading.Event())
    assert result.outcome is DriveOutcome.FAILED
    assert result.distance_m == pytest.approx(2.0)
    assert clock.monotonic() == pytest.approx(4.0)


def test_drive_refuses_goals_the_map_rules_out(rooms):
    base, clock = _base(rooms, SimParams(goal_tolerance_m=0.0))
    for x, y, why in ((20.0, 2.0, 'no free ground'), (5.0, 4.0, 'no free ground')):
        result = base.drive(Pose.from_xyz_yaw(x, y, 0.0, 0.0), 100.0, threading.Event())
        assert result.outcome is DriveOutcome.REFUSED and why in result.message
        assert result.distance_m == 0.0
    assert (base.x, base.y) == START[:2] and clock.monotonic() == 0.0
    cancel = threading.Event()
    cancel.set()
    result = base.drive(Pose.from_xyz_yaw(7.0, 3.5, 0.0, 0.0), 100.0, cancel)
    assert result.outcome is DriveOutcome.CANCELED


def test_exploring_drives_to_the_nearest_unseen_ground_until_none_is_left(rooms):
    base, _ = _base(rooms)
    seen = base.signals().explored_area_m2
    result = base.explore(3.0, deadline=1_000.0, cancel=threading.Event())
    assert result.outcome is DriveOutcome.REACHED and result.distance_m > 0.0
    assert base.signals().explored_area_m2 > seen
    for _ in range(200):  # the two rooms hold a bounded amount of ground to see
        if base.explore(100.0, 1e9, threading.Event()).outcome is DriveOutcome.REFUSED:
            break
    last = base.explore(100.0, 1e9, threading.Event())
    assert last.outcome is DriveOutcome.REFUSED and 'no unseen ground' in last.message


def test_stop_views_turn_a_full_circle(rooms):
    base, clock = _base(rooms, SimParams(turn_s_per_view=2.0, view_width=64, view_height=48))
    views = base.stop_views(4, deadline=100.0)
    headings = [view.heading for view in views]
    assert headings == pytest.approx([0.0, math.pi / 2, math.pi, 3 * math.pi / 2])
    assert clock.monotonic() == pytest.approx(8.0)
    assert base.stops == [START]
    assert len(base.stop_views(4, deadline=clock.monotonic() + 5.0)) == 2  # 2 s a view


@pytest.fixture(scope='module')
def setting(rooms, tmp_path_factory, text_reader):
    world, space = rooms
    folder = tmp_path_factory.mktemp('task_loop')
    settings = ViewSettings(text_model='default', image_model='')
    memory = build_tour_memory(world, folder / 'memory', settings, rate_hz=0.5)
    # A metre from this wall sign the camera looks under it: stand two metres off.
    yield Setting(
        world, space, memory, OcrJudge(text_reader), photos={}, explored=[START[:2]],
        localisation=LocalisationParams(standoff_m=2.0),
    )  # fmt: skip
    memory.store.close()


def test_recall_honours_exclusions(setting):
    clock = SimClock()
    recall = MemoryRecall(setting.memory, setting.space, clock)
    goal = RunGoal(TaskGoal(GoalModality.TEXT, 'go to the bank sign'))
    query = RecallQuery(goal, Pose.from_xyz_yaw(*START[:2], 0.0, 0.0), max_candidates=3)
    found = recall.recall(query, 100.0).candidates
    assert found and clock.monotonic() > 0.0
    assert math.dist(found[0].target, (10.0, 3.5)) < 2.0  # memory read the sign
    again = RecallQuery(
        goal, query.origin, 3, exclusions=Exclusions(positions=(found[0].target,), radius_m=3.0)
    )
    assert all(
        math.dist(c.target, found[0].target) > 3.0 for c in recall.recall(again, 100.0).candidates
    )


def test_a_photo_is_recalled_by_its_writing_when_memory_has_no_image_view(setting, text_reader):
    eye = Pose.from_xyz_yaw(6.5, 3.5, 0.45, 0.0)  # facing the BANK sign from 3.5 m
    pixels = render(setting.world, eye, 320, 240, SimParams().hfov_deg)
    photo = cv2.imencode('.png', cv2.cvtColor(np.asarray(pixels), cv2.COLOR_RGB2BGR))[1]
    goal = RunGoal(TaskGoal(GoalModality.PHOTO, photo_ref='bank.png'), photo.tobytes())
    query = RecallQuery(goal, Pose.from_xyz_yaw(*START[:2], 0.0, 0.0), max_candidates=3)
    blind = MemoryRecall(setting.memory, setting.space, SimClock())
    assert blind.recall(query, 100.0).candidates == ()
    reading = MemoryRecall(setting.memory, setting.space, SimClock(), reader=text_reader)
    found = reading.recall(query, 100.0).candidates
    assert found and math.dist(found[0].target, (10.0, 3.5)) < 2.0


def test_a_short_sequence_runs_end_to_end(setting, tmp_path, monkeypatch):
    depths = []
    recall = MemoryRecall.recall

    def recording(self, query, deadline):
        depths.append(query.max_candidates)
        return recall(self, query, deadline)

    monkeypatch.setattr(MemoryRecall, 'recall', recording)
    sequence = TaskSequence(
        id='two-rooms-s0', world='two-rooms', world_seed=0, size='test', seed=0, start=START,
        steps=[
            SequenceStep(kind=StepKind.SIGN, goal='go to the BANK sign', target='sign-0'),
            SequenceStep(kind=StepKind.MARK, place='dock', pose=(2.0, 2.0, 0.0)),
            SequenceStep(kind=StepKind.PLACE, goal='go to the dock', place='dock'),
            SequenceStep(kind=StepKind.SIGN, goal='find the "BANK" sign', target='sign-0'),
        ],
    )  # fmt: skip
    scorer = TaskScorer(setting.world, space=setting.space)
    layer = run_task_layer(setting, sequence, tmp_path / 'layer')
    assert len(layer.records) == len(layer.outcomes) == 3
    assert [r.goal.modality for r in layer.records] == [
        GoalModality.TEXT, GoalModality.PLACE, GoalModality.TEXT
    ]  # fmt: skip
    run = scorer.score_run(sequence, layer.outcomes)
    sign, dock, again = run.tasks
    assert sign.success and layer.records[0].status is LedgerStatus.CERTIFIED
    # The first stop is recorded, and it is scored: this one was right at once.
    assert layer.outcomes[0].first_stop is not None and sign.first_success
    assert not sign.first_attempt_failed and sign.attempts == layer.records[0].spent.attempts
    assert dock.success  # the stop is where the place was marked, whatever the judge says
    assert again.revisit and again.success
    # The robot was brought to the dock to mark it, so only the signs cost a drive.
    assert sign.path_m > 0.0 and dock.path_m == 0.0 and again.path_m > 0.0
    layer_depths, depths[:] = list(depths), []
    single = run_single_shot(setting, sequence, tmp_path / 'single')
    assert single.records == [] and len(single.outcomes) == 3
    # Equal terms: single-shot recalls as deep as the runner, from the same start it stops
    # where the runner first stopped, and it is scored on as many stop views.
    assert set(depths) == set(layer_depths) == {setting.runner.max_candidates}
    assert single.outcomes[0].stop == pytest.approx(layer.outcomes[0].first_stop)
    views = setting.runner.stop_view_count
    assert all(len(outcome.stop_headings) == views for outcome in single.outcomes)
    assert scorer.score_run(sequence, single.outcomes).tasks[0].success


# -- kidnap and relocation ---------------------------------------------------------------


def _signed_room() -> World:
    """One room with a sign on each wall: something to recognise whichever way it faces."""
    room = Room('hall', 0.0, 0.0, 8.0, 6.0)
    rng = np.random.default_rng(3)
    signs = (
        place_sign(rng, 'BANK', 'hall', (8.0, 3.0), math.pi),
        place_sign(rng, 'CAFE 12', 'hall', (4.0, 6.0), -math.pi / 2),
        place_sign(rng, 'POST', 'hall', (0.0, 3.0), 0.0),
        place_sign(rng, 'GYM 7', 'hall', (4.0, 0.0), math.pi / 2),
    )
    walls = tuple(room_faces(room, [], (150, 150, 150)))
    return World('signed-room', 0, (room,), (), walls, signs, size='test')


def _photo_memory(world: World, folder):
    settings = ViewSettings(text_model='default', image_model='', photo_view=True)
    return build_tour_memory(world, folder / 'memory', settings, rate_hz=0.5)


@pytest.fixture(scope='module')
def signed(tmp_path_factory, text_reader):
    world = _signed_room()
    memory = _photo_memory(world, tmp_path_factory.mktemp('signed'))
    yield Setting(
        world, FreeSpace(world), memory, OcrJudge(text_reader), photos={}, explored=[(4.0, 3.0)],
        localisation=LocalisationParams(standoff_m=2.0),
    )  # fmt: skip
    memory.store.close()


@pytest.fixture(scope='module')
def plain(rooms, tmp_path_factory, text_reader):
    """The two rooms, whose only texture is one sign, remembered with the photo view."""
    world, space = rooms
    memory = _photo_memory(world, tmp_path_factory.mktemp('plain'))
    yield Setting(
        world, space, memory, OcrJudge(text_reader), photos={}, explored=[START[:2]],
        localisation=LocalisationParams(standoff_m=2.0),
    )  # fmt: skip
    memory.store.close()


def test_a_kidnapped_base_starts_a_new_map_epoch_where_it_was_set_down(rooms):
    """As a LIO restarted on the spot: a new epoch whose origin is where the robot stands;
    its pose, views and goals are in that frame from then on."""
    base, _ = _base(rooms)
    base.pending_kidnap = (7.5, 2.5, math.pi / 2)
    far = Pose.from_xyz_yaw(8.0, 4.0, 0.0, 0.0)
    result = base.drive(far, deadline=1_000.0, cancel=threading.Event())
    assert result.outcome is DriveOutcome.FAILED and 'picked up' in result.message
    assert base.epoch == ('tour', 1) and base.kidnaps == 1
    here = base.pose()
    assert (here.session, here.map_epoch) == ('tour', 1)
    assert here.pose.position[:2] == pytest.approx((0.0, 0.0), abs=1e-9)
    # One metre ahead in the new frame is one metre north in the world.
    ahead = Pose.from_xyz_yaw(1.0, 0.0, 0.0, 0.0)
    assert base.drive(ahead, 1_000.0, threading.Event()).outcome is DriveOutcome.REACHED
    assert (base.x, base.y) == pytest.approx((7.5, 3.5), abs=0.05)
    view = base.stop_views(1, deadline=1e9)[0]
    assert view.pose.position[:2] == pytest.approx((1.0, 0.0), abs=0.05)


def test_memory_relocation_aligns_a_kidnapped_base_within_its_tolerance(signed):
    relocator = memory_relocator(signed.memory)
    for pose in ((4.0, 3.0, 0.0), (2.5, 2.0, 2.5)):
        base = SimBase(signed.world, signed.space, SimClock(), (4.0, 3.0, 0.0))
        base.pending_kidnap = pose
        base.drive(Pose.from_xyz_yaw(6.0, 3.0, 0.0, 0.0), 1_000.0, threading.Event())
        relocation = relocator.relocalise(base.stop_views(4, 1e9), base.epoch)
        alignment = relocation.alignment
        assert alignment.aligned, alignment.reason
        assert alignment.target_epoch == ('tour', 0)
        found = alignment.transform.apply(PlacePose(0.0, 0.0, 0.0))  # the set-down pose
        # Each pair agrees within 1.5 m and 25 degrees; the fit over them stays near that.
        assert math.dist((found.x, found.y), pose[:2]) <= 2.0
        assert abs(math.remainder(found.yaw - pose[2], math.tau)) <= math.radians(30.0)


def test_one_textured_thing_seen_from_one_heading_does_not_align(plain, rooms):
    base, _ = _base(rooms)
    base.pending_kidnap = (7.5, 2.5, math.pi)
    base.drive(Pose.from_xyz_yaw(8.0, 4.0, 0.0, 0.0), 1_000.0, threading.Event())
    relocation = memory_relocator(plain.memory).relocalise(base.stop_views(4, 1e9), base.epoch)
    assert relocation.matches  # the sign is recognised ...
    assert not relocation.alignment.aligned  # ... but from one heading it proves nothing
    assert '1 heading' in relocation.alignment.reason


def test_memory_without_a_photo_view_cannot_relocalise(setting):
    assert memory_relocator(setting.memory) is None


def _kidnap_sequence(world: str) -> TaskSequence:
    return TaskSequence(
        id=f'{world}-kidnap', world=world, world_seed=0, size='test', seed=0,
        start=(2.0, 1.5, 0.0),
        steps=[SequenceStep(kind=StepKind.SIGN, goal='go to the BANK sign', target='sign-0')],
    )  # fmt: skip


def test_a_kidnapped_task_relocalises_and_is_certified_at_the_right_sign(signed, tmp_path):
    run = run_task_layer(signed, _kidnap_sequence('signed-room'), tmp_path, kidnap=True)
    (record,), (kidnap,) = run.records, run.kidnaps
    notes = ' | '.join(record.recovery_notes)
    assert 'map epoch changed' in notes and 'aligned to epoch' in notes, notes
    assert kidnap.relocalised and kidnap.old_epoch_goals == 0
    assert record.status is LedgerStatus.CERTIFIED, record.handover
    scorer = TaskScorer(signed.world, space=signed.space)
    assert scorer.score_run(_kidnap_sequence('signed-room'), run.outcomes).tasks[0].success


def test_without_an_alignment_a_kidnapped_task_stops_rather_than_drive_a_stale_pose(
    plain, tmp_path
):
    run = run_task_layer(plain, _kidnap_sequence('two-rooms'), tmp_path, kidnap=True)
    (record,), (kidnap,) = run.records, run.kidnaps
    assert record.status is LedgerStatus.STOPPED
    assert record.stop_reason is TerminationReason.DRIVE_REFUSED
    assert 'not driving to' in record.handover and 'relocation failed' in record.handover
    tries = [line for line in record.recovery_notes if line.startswith('relocation')]
    assert len(tries) == RunnerParams().max_relocations  # a step away between tries
    assert not kidnap.relocalised and kidnap.old_epoch_goals == 0


def test_a_judge_in_the_sim_gets_its_deadline_in_wall_seconds():
    """The runner's deadlines are on the sim clock; a judge times its own work on the wall
    clock, so a sim deadline read as a wall time has always passed."""
    seen = []

    class Recording:
        def judge(self, task, deadline=None):
            seen.append(deadline)

    clock = SimClock()
    clock.advance(30.0)
    judge = SimTimeJudge(Recording(), clock)
    before = time.monotonic()
    judge.judge(None, 90.0)
    judge.judge(None, None)
    assert before + 60.0 <= seen[0] <= time.monotonic() + 60.0 and seen[1] is None
