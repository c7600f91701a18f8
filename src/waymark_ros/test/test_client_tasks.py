# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The client's task calls against the real task_node (and reasoner_node for feedback)
over DDS: the robot task_node drives is played by waymark_testing.task_robot, the judge is
the real OCR judge."""

from __future__ import annotations

import threading

import pytest
import rclpy

from waymark_interfaces.action import RunTask
from waymark_ros.client import NO_REPLY, REFUSED, SERVER_MISSING, Waymark
from waymark_ros.client_results import phase_name
from waymark_testing.ros_harness import wait_until
from waymark_testing.task_robot import GOAL_XY, SIGN, TASK_NODE_SETTINGS, StandIns

pytestmark = pytest.mark.dds


@pytest.fixture
def user():
    """The caller's node, in no executor: each call spins it."""
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node('user', context=context)
    yield node
    node.destroy_node()
    context.try_shutdown()


@pytest.fixture
def robot(ros):
    return StandIns(ros)


def start_tasks(launch, user, tmp_path) -> Waymark:
    launch('task_node', data_dir=str(tmp_path / 'tasks'), **TASK_NODE_SETTINGS)
    waymark = Waymark(user, server_wait_s=30.0)
    ready = waymark.wait_until_ready(timeout_s=60.0, servers=('task',))
    assert ready.ready, ready.message
    return waymark


def test_a_certified_task_its_record_and_a_mark(launch, robot, user, tmp_path):
    waymark = start_tasks(launch, user, tmp_path)
    seen: list[RunTask.Feedback] = []

    result = waymark.run_task(
        text=f'the sign that says "{SIGN}"', timeout_s=120.0, on_progress=seen.append
    )

    assert result.ok and result.status == 'certified', (result.message, result.evidence)
    assert (result.termination, result.verdict) == ('closed', 'complete')
    assert SIGN.lower() in result.evidence.lower() and result.task_id
    assert result.stop is not None and result.stop[:2] == pytest.approx(GOAL_XY, abs=0.01)
    assert result.map_epoch == 2 and result.result.verdict_source == 'ocr'
    assert 'drive' in {phase_name(step) for step in result.progress}
    assert len(seen) == len(result.progress)

    listed = waymark.tasks(limit=10)
    assert listed.ok, listed.message
    [task] = listed.tasks
    assert (task.task_id, task.status, task.verdict) == (result.task_id, 'certified', 'complete')
    assert task.modality == 'text' and SIGN in task.goal_text and not listed.truncated
    assert task.ended_ns >= task.started_ns > 0
    record = waymark.task(result.task_id)
    assert record.ok, record.message
    assert record.task == task and record.record['task_id'] == result.task_id
    assert record.stop == pytest.approx(result.stop) and SIGN.lower() in record.evidence.lower()
    unknown = waymark.task('t999999-0000')
    assert unknown.status == 'failed' and unknown.message and unknown.task is None

    marked = waymark.mark('pharmacy door')
    assert marked.ok, marked.message
    assert marked.pose[:2] == pytest.approx(GOAL_XY, abs=0.01)
    assert marked.views >= 1 and not marked.replaced and marked.map_epoch == 2
    assert waymark.mark('Pharmacy Door').replaced
    bad = waymark.mark('a/b')
    assert bad.status == 'failed' and bad.message and bad.pose is None
    waymark.close()


def test_refused_stopped_cancelled_and_timed_out_tasks_and_feedback(launch, robot, user, tmp_path):
    early = Waymark(user, server_wait_s=0.5)
    missing = early.run_task(text='the kitchen', timeout_s=2.0)
    assert missing.status == SERVER_MISSING and 'run_task' in missing.message
    assert early.feedback(True, task_id='t1').status == SERVER_MISSING
    for unsent in (early.run_task(), early.run_task(text='x', place='hall')):
        assert unsent.status == REFUSED and unsent.message.startswith('not sent')
    early.close()

    robot.go_to_mode = 'refuse'
    waymark = start_tasks(launch, user, tmp_path)
    refused = waymark.run_task(text='the kitchen', timeout_s=60.0)
    assert (refused.status, refused.termination) == ('stopped', 'drive_refused'), refused
    assert refused.verdict == 'none' and refused.task_id and not refused.ok
    nowhere = waymark.run_task(place='the attic', timeout_s=60.0)
    assert (nowhere.status, nowhere.termination) == ('stopped', 'no_goal'), nowhere

    robot.go_to_mode = 'hold'
    drives = robot.go_to_goals
    results = {}
    first = threading.Thread(
        target=lambda: results.update(first=waymark.run_task(text='the hall', timeout_s=60.0))
    )
    first.start()
    wait_until(lambda: robot.go_to_goals > drives, 30, 'the drive never started')
    second = waymark.run_task(text='the porch', timeout_s=30.0)
    assert second.status == REFUSED and 'another task is running' in second.message
    assert second.task_id == '' and second.termination == 'none'
    assert waymark.cancel()
    first.join(timeout=60.0)
    assert (results['first'].status, results['first'].termination) == ('stopped', 'canceled')

    late = waymark.run_task(text='the garden', timeout_s=8.0)
    assert late.status == NO_REPLY and 'canceled' in late.message
    late_id = late.progress[-1].task_id  # the progress names the task the ledger holds
    wait_until(
        lambda: (
            [(t.task_id, t.termination) for t in waymark.tasks(limit=1).tasks]
            == [(late_id, 'canceled')]
        ),
        30,
        'the timed-out task was not canceled',
    )
    listed = waymark.tasks(limit=3)
    assert listed.truncated and len(listed.tasks) == 3  # four tasks in the ledger
    assert not waymark.cancel()  # nothing in flight

    launch('reasoner_node', **{'memory.data_dir': str(tmp_path / 'm'), 'traces.dir': ''})
    said = waymark.feedback(False, task_id=refused.task_id, true_position=(1.0, 2.0, 0.5))
    assert said.ok and said.calibrated == 0, said.message  # the task was given no lessons
    unknown = waymark.feedback(True, task_id='no-such-task')
    assert unknown.status == 'failed' and 'no task' in unknown.message
    both = waymark.feedback(True, query_id='q', task_id='t')
    assert both.status == 'failed' and both.message.startswith('not sent')
    waymark.close()
