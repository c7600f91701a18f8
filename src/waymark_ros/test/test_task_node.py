# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""task_node over real DDS: tasks, marks and the ledger's services.

The test process stands in for what cannot run here: the reasoner's Ask (an LLM agent)
answers with one place, and the navigator's GoTo (Nav2) reaches, refuses or holds a goal
until it is canceled. It also plays the robot's odometry, moved to each reached goal, and
a camera that shows a printed sign. The judge is the real OCR judge.
"""

from __future__ import annotations

import json
import math
import struct
import threading
import time
import zlib

import cv2
import numpy as np
import pytest
from rclpy.action import ActionClient

from waymark.agent.exclusions import Exclusions
from waymark.geometry import Pose
from waymark.tasks.attempts import DriveOutcome, RecallQuery, RunGoal
from waymark.tasks.ledger import TaskLedger
from waymark.tasks.records import GoalModality, TaskGoal
from waymark_interfaces.action import RunTask
from waymark_interfaces.msg import TaskSummary
from waymark_interfaces.srv import Consolidate, GetTask, ListTasks, Mark
from waymark_ros.nodes.task.action_call import ActionWaits
from waymark_ros.nodes.task.explore import FrontierExplore
from waymark_ros.nodes.task.recall import question_text
from waymark_testing.actions import connect, result_of, send
from waymark_testing.ros_harness import wait_until
from waymark_testing.task_robot import GOAL_XY, SIGN, TASK_NODE_SETTINGS, Sighting, StandIns

pytestmark = pytest.mark.dds


@pytest.fixture
def robot(ros):
    stand_ins = StandIns(ros)
    yield stand_ins
    stand_ins.release.set()


def start_tasks(ros, launch, data_dir, **parameters):
    settings = {'data_dir': str(data_dir), **TASK_NODE_SETTINGS, **parameters}
    launch('task_node', **settings)
    with ros.paused() as node:
        client = ActionClient(node, RunTask, 'run_task')
    connect(client)
    return client


def read(ros, srv_type, name: str, request):
    """A read of the task node's: sent again when unanswered (a request sent before the
    node has matched this client back is dropped), which changes nothing."""
    return ros.call(srv_type, name, request, resend_after_s=5.0)


def text_goal(text: str) -> RunTask.Goal:
    return RunTask.Goal(modality=RunTask.Goal.MODALITY_TEXT, text=text)


def test_an_open_task_left_by_a_crash_is_recorded_interrupted_at_start(ros, launch, tmp_path):
    data = tmp_path / 'tasks'
    left = TaskLedger(data / 'ledger').begin(TaskGoal(GoalModality.TEXT, 'the kitchen'))
    start_tasks(ros, launch, data)
    listed = read(ros, ListTasks, 'list_tasks', ListTasks.Request(limit=10))
    assert listed.success, listed.message
    [summary] = listed.tasks
    assert summary.task_id == left
    assert summary.status == TaskSummary.STATUS_STOPPED
    assert summary.termination == TaskSummary.TERMINATION_INTERRUPTED


def test_a_refused_drive_stops_the_task_and_the_ledger_serves_it(ros, launch, robot, tmp_path):
    robot.go_to_mode = 'refuse'
    client = start_tasks(ros, launch, tmp_path / 'tasks')
    result = result_of(send(client, text_goal(f'the {SIGN} sign')), timeout=60)
    assert result.status == RunTask.Result.STATUS_STOPPED, result.message
    assert result.termination == RunTask.Result.TERMINATION_DRIVE_REFUSED
    assert result.verdict == RunTask.Result.VERDICT_NONE
    got = read(ros, GetTask, 'get_task', GetTask.Request(task_id=result.task_id))
    assert got.found, got.message
    assert got.summary.status == TaskSummary.STATUS_STOPPED
    assert 'no path' in got.handover
    listed = read(ros, ListTasks, 'list_tasks', ListTasks.Request(limit=10))
    assert [task.task_id for task in listed.tasks] == [result.task_id]
    missing = read(ros, GetTask, 'get_task', GetTask.Request(task_id='t999999-0000'))
    assert not missing.found and missing.message

    notes = ros.call(Consolidate, 'consolidate', Consolidate.Request())
    assert notes.success, notes.message
    assert notes.method == Consolidate.Response.METHOD_MECHANICAL
    assert set(notes.notes_written) == {'index', 'overview', 'rooms', 'skills'}

    marked = ros.call(Mark, 'mark', Mark.Request(name='charging spot'))
    assert marked.success, marked.message
    assert (marked.views, marked.replaced, marked.map_epoch) == (1, False, 2)
    assert 'not in memory yet (no store_place service' in marked.message  # no memory_node here
    again = ros.call(Mark, 'mark', Mark.Request(name='Charging Spot'))
    assert again.success and again.replaced
    bad = ros.call(Mark, 'mark', Mark.Request(name='   '))
    assert not bad.success and bad.message


def test_cancel_during_the_drive_is_recorded_and_a_second_goal_is_refused(
    ros, launch, robot, tmp_path
):
    robot.go_to_mode = 'hold'
    client = start_tasks(ros, launch, tmp_path / 'tasks')
    phases: list[int] = []
    first = send(client, text_goal('the kitchen'), lambda msg: phases.append(msg.feedback.phase))
    wait_until(lambda: robot.go_to_goals == 1, 30, 'the drive never started')
    second = result_of(send(client, text_goal('the hall')), timeout=30)
    assert second.status == RunTask.Result.STATUS_REFUSED
    assert 'another task is running' in second.message
    assert second.task_id == ''
    first.cancel_goal_async()
    result = result_of(first, timeout=30)
    assert result.status == RunTask.Result.STATUS_STOPPED, result.message
    assert result.termination == RunTask.Result.TERMINATION_CANCELED
    assert RunTask.Feedback.PHASE_DRIVE in phases
    listed = read(ros, ListTasks, 'list_tasks', ListTasks.Request(limit=10))
    assert [task.termination for task in listed.tasks] == [TaskSummary.TERMINATION_CANCELED]


def test_the_ocr_judge_certifies_a_stop_that_shows_the_sign(ros, launch, robot, tmp_path):
    client = start_tasks(ros, launch, tmp_path / 'tasks')
    result = result_of(send(client, text_goal(f'the sign that says "{SIGN}"')), timeout=90)
    assert result.status == RunTask.Result.STATUS_CERTIFIED, (result.message, result.evidence)
    assert result.verdict == RunTask.Result.VERDICT_COMPLETE
    assert result.verdict_source == 'ocr'
    assert SIGN.lower() in result.evidence.lower()
    assert result.has_stop
    assert result.stop_pose.pose.position.x == pytest.approx(GOAL_XY[0], abs=0.01)
    assert robot.go_to_goals == 2  # the drive, then one turn for the second stop view
    # The lessons are looked up by the goal, not by the question with its briefing.
    (asked,) = robot.asked
    assert asked.lesson_task == f'the sign that says "{SIGN}"'
    assert asked.question.startswith(f'Where is {asked.lesson_task}?')


def test_a_remembered_goal_from_another_map_epoch_is_never_driven_to(ros, launch, robot, tmp_path):
    """Memory's answer is from epoch 1, the map is now epoch 2, and no memory_node serves
    the image search a relocation needs: the task stops rather than drive the old pose."""
    robot.sightings = [Sighting('tour:7', GOAL_XY, SIGN, epoch=('tour', 1))]
    client = start_tasks(ros, launch, tmp_path / 'tasks', **{'relocation.timeout_s': 1.0})
    result = result_of(send(client, text_goal(f'the {SIGN} sign')), timeout=90)
    assert result.status == RunTask.Result.STATUS_STOPPED, result.message
    assert result.termination == RunTask.Result.TERMINATION_DRIVE_REFUSED
    assert 'not driving to' in result.message and "('tour', 1)" in result.message
    assert all(math.dist(aim, GOAL_XY) > 0.5 for aim in robot.go_to_targets)
    got = read(ros, GetTask, 'get_task', GetTask.Request(task_id=result.task_id))
    notes = json.loads(got.record_json)['recovery_notes']
    assert any(note.startswith('relocation impossible') for note in notes), notes


def test_goals_that_cannot_be_run_are_refused_or_stopped_without_a_move(
    ros, launch, robot, tmp_path
):
    data = tmp_path / 'tasks'
    client = start_tasks(ros, launch, data)
    mixed = RunTask.Goal(modality=RunTask.Goal.MODALITY_TEXT, text='the hall', place_name='x')
    refused = result_of(send(client, mixed))
    assert refused.status == RunTask.Result.STATUS_REFUSED
    assert 'does not use place_name' in refused.message
    for data_bytes, why in (
        (b'not a picture', 'cannot read the image header'),
        (jpeg_of(np.full((16, 16, 3), 90, np.uint8)), '16x16 px'),
        (png_header(20_000, 20_000), 'over the pixel limit'),
    ):
        photo = RunTask.Goal(modality=RunTask.Goal.MODALITY_PHOTO)
        photo.photo.format, photo.photo.data = 'jpeg', data_bytes
        result = result_of(send(client, photo))
        assert result.status == RunTask.Result.STATUS_REFUSED, result.message
        assert why in result.message and result.task_id == ''
    assert not (data / 'photos').exists()  # nothing of a refused photo is kept
    unknown = RunTask.Goal(modality=RunTask.Goal.MODALITY_PLACE, place_name='the attic')
    result = result_of(send(client, unknown))
    assert result.status == RunTask.Result.STATUS_STOPPED, result.message
    assert result.termination == RunTask.Result.TERMINATION_NO_GOAL
    assert robot.go_to_goals == 0
    listed = read(ros, ListTasks, 'list_tasks', ListTasks.Request(limit=10))
    assert len(listed.tasks) == 1  # refusals are not tasks


def jpeg_of(rgb: np.ndarray) -> bytes:
    return cv2.imencode('.jpg', rgb)[1].tobytes()


def png_header(width: int, height: int) -> bytes:
    """A PNG whose header claims `width` x `height` (no pixel data follows): what a
    decompression bomb shows before it is decoded."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack('>I', len(body)) + kind + body + struct.pack('>I', zlib.crc32(kind + body))
        )

    header = struct.pack('>IIBBBBB', width, height, 8, 2, 0, 0, 0)
    return b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', header) + chunk(b'IEND', b'')


def test_exploring_without_a_navigator_is_reported_and_never_fails_the_task(ros):
    """A ROOM-wide recovery explores first; no explore server is a refused exploration
    with the reason, which the runner notes and goes past."""
    with ros.paused() as node:
        explorer = FrontierExplore(node, 'explore', ActionWaits(0.5, 0.5, 0.5, 0.5), lambda: 0.0)
    result = explorer.explore(4.0, time.monotonic() + 10.0, threading.Event())
    assert result.outcome is DriveOutcome.REFUSED and 'explore' in result.message
    late = explorer.explore(4.0, time.monotonic() + 0.5, threading.Event())
    assert late.outcome is DriveOutcome.REFUSED and 'no time left' in late.message


def test_a_recall_question_carries_the_exclusions_and_keeps_the_goal_whole():
    goal = RunGoal(TaskGoal(GoalModality.TEXT, 'the red mug'))
    query = RecallQuery(
        goal,
        Pose(),
        max_candidates=3,
        exclusions=Exclusions(('tour:7',), ((1.0, 2.0),), 1.5),
        briefing='x' * 5000,
    )
    text = question_text(query, 300)
    assert text.startswith('Where is the red mug?')
    assert 'tour:7' in text and '(1.0, 2.0)' in text
    assert 'x' * 100 not in text  # the briefing did not fit and was left out
    assert len(text) <= 300


def test_a_stop_at_the_wrong_sign_is_refused_and_the_requery_converts_it(
    ros, launch, robot, tmp_path
):
    """The real task body through a failed first stop to a converted second: four stop
    views at the wrong sign (a full observation group), a refusal, a re-query that
    carries the exclusions in the Ask goal, and a certified stop at the right sign."""
    robot.sightings = [
        Sighting('tour:3', (1.5, 0.5), 'BAKERY'),
        Sighting('tour:7', (5.0, 2.0), SIGN),
    ]
    client = start_tasks(
        ros, launch, tmp_path / 'tasks', **{'runner.max_attempts': 3, 'runner.stop_view_count': 4}
    )
    result = result_of(send(client, text_goal(f'the sign that says "{SIGN}"')), timeout=120)
    assert result.status == RunTask.Result.STATUS_CERTIFIED, (result.message, result.evidence)
    assert result.stop_pose.pose.position.x == pytest.approx(5.0, abs=0.01)
    first, requery = robot.asked
    assert list(first.excluded_entry_ids) == [] and not first.excluded_positions
    assert list(requery.excluded_entry_ids) == ['tour:3']
    assert [(p.x, p.y) for p in requery.excluded_positions] == [(1.5, 0.5)]
    assert requery.exclusion_radius_m > 0.0
    got = read(ros, GetTask, 'get_task', GetTask.Request(task_id=result.task_id))
    assert got.found and 'bakery' in got.handover.lower()


def test_kill_9_mid_recovery_leaves_the_task_stopped_interrupted_at_restart(
    ros, launch, robot, tmp_path
):
    """The first stop is refused at the wrong sign; task_node dies by SIGKILL while the
    recovered attempt drives to the next candidate. The restarted node finds the task."""
    robot.sightings = [
        Sighting('tour:3', (1.5, 0.5), 'BAKERY'),
        Sighting('tour:7', (5.0, 2.0), SIGN),
    ]
    robot.hold_near = (5.0, 2.0)
    data = tmp_path / 'tasks'
    settings = {'runner.max_attempts': 3, 'runner.stop_view_count': 4}
    node = launch('task_node', data_dir=str(data), **(TASK_NODE_SETTINGS | settings))
    with ros.paused() as ros_node:
        client = ActionClient(ros_node, RunTask, 'run_task')
    connect(client)
    send(client, text_goal(f'the sign that says "{SIGN}"'))
    wait_until(robot.holding.is_set, 90, 'the recovered attempt never drove')
    assert len(robot.asked) == 2  # the re-query after the refused stop
    node.process.kill()
    node.process.wait(timeout=30)
    robot.release.set()
    start_tasks(ros, launch, data)
    listed = read(ros, ListTasks, 'list_tasks', ListTasks.Request(limit=10))
    assert listed.success, listed.message
    [summary] = listed.tasks
    assert summary.status == TaskSummary.STATUS_STOPPED
    assert summary.termination == TaskSummary.TERMINATION_INTERRUPTED
