# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""task_node over real DDS: tasks, marks and the ledger's services.

The test process stands in for what cannot run here: the reasoner's Ask (an LLM agent)
answers with one place, and the navigator's GoTo (Nav2) reaches, refuses or holds a goal
until it is canceled. It also plays the robot's odometry, moved to each reached goal, and
a camera that shows a printed sign. The judge is the real OCR judge.
"""

from __future__ import annotations

import json
import threading
import time

import pytest
from nav_msgs.msg import Odometry
from rclpy.action import ActionClient, ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from sensor_msgs.msg import CompressedImage
from std_msgs.msg import String

from waymark.geometry import Pose
from waymark.tasks.attempts import RecallQuery, RunGoal
from waymark.tasks.ledger import TaskLedger
from waymark.tasks.records import GoalModality, TaskGoal
from waymark_interfaces.action import Ask, GoTo, RunTask
from waymark_interfaces.msg import MemoryHit, TaskSummary
from waymark_interfaces.srv import Consolidate, GetTask, ListTasks, Mark
from waymark_ros.nodes.task.recall import question_text
from waymark_ros.ros import qos
from waymark_testing.actions import connect, result_of, send
from waymark_testing.ros_harness import wait_until
from waymark_testing.signs import sign_jpeg

pytestmark = pytest.mark.dds

SIGN = 'PHARMACY'
GOAL_XY = (1.5, 0.5)


class StandIns:
    """Ask, GoTo, odometry and camera of the robot the task node drives."""

    def __init__(self, ros) -> None:
        self.go_to_mode = 'reach'  # reach | refuse | hold
        self.go_to_goals = 0
        self.asked: list[Ask.Goal] = []  # the recall questions, as sent
        self.pose = (0.0, 0.0, 0.0, 1.0, 0.0)  # x, y, qz, qw, unused
        self.sent = {'pose': 0, 'frame': 0}  # how many of each were published
        self._lock = threading.Lock()
        node = ros.node
        group = ReentrantCallbackGroup()
        with ros.paused():
            self.ask = ActionServer(
                node, Ask, 'ask', execute_callback=self._ask, callback_group=group
            )
            self.go_to = ActionServer(
                node,
                GoTo,
                'go_to',
                execute_callback=self._go_to,
                goal_callback=lambda _goal: GoalResponse.ACCEPT,
                cancel_callback=lambda _goal: CancelResponse.ACCEPT,
                callback_group=group,
            )
        self.odom = node.create_publisher(Odometry, 'odom', qos.state_input(True, 5))
        self.camera = node.create_publisher(
            CompressedImage, 'camera/image/compressed', qos.sensor_input(True, 2)
        )
        self.image = sign_jpeg(SIGN)
        self.stats = node.create_publisher(String, 'capture/stats', qos.latched())
        self.stats.publish(String(data=json.dumps({'session': 'tour', 'map_epoch': 2})))
        node.create_timer(0.05, self._publish_pose)
        node.create_timer(0.2, self._publish_image)

    def _ask(self, handle) -> Ask.Result:
        self.asked.append(handle.request)
        feedback = Ask.Feedback(step=1, tool='search')
        handle.publish_feedback(feedback)
        result = Ask.Result(success=True, status=Ask.Result.STATUS_ANSWERED)
        answer = result.answer
        answer.kind = answer.KIND_POSITION
        answer.text = 'the pharmacy sign'
        answer.has_goal = True
        answer.goal.header.frame_id = 'map'
        answer.goal.pose.position.x, answer.goal.pose.position.y = GOAL_XY
        answer.goal.pose.orientation.w = 1.0
        answer.evidence = [MemoryHit(id='tour:7')]
        handle.succeed()
        return result

    def _go_to(self, handle) -> GoTo.Result:
        self.go_to_goals += 1
        result = GoTo.Result()
        if self.go_to_mode == 'refuse':
            handle.abort()
            result.outcome, result.message = GoTo.Result.OUTCOME_REFUSED, 'no path'
            return result
        if self.go_to_mode == 'hold':
            deadline = time.monotonic() + 60.0
            while not handle.is_cancel_requested and time.monotonic() < deadline:
                time.sleep(0.05)
            handle.canceled()
            result.outcome = GoTo.Result.OUTCOME_CANCELED
            return result
        target = handle.request.target.pose
        with self._lock:
            q = target.orientation
            self.pose = (target.position.x, target.position.y, q.z, q.w, 0.0)
            turned = dict(self.sent)
        # Reached once a pose and a frame were sent after the turn.
        deadline = time.monotonic() + 30.0
        while time.monotonic() < deadline and any(
            self.sent[kind] <= turned[kind] for kind in turned
        ):
            time.sleep(0.05)
        handle.succeed()
        result.outcome = GoTo.Result.OUTCOME_REACHED
        return result

    def _publish_pose(self) -> None:
        msg = Odometry()
        msg.header.frame_id = 'map'
        with self._lock:
            x, y, qz, qw, _ = self.pose
        msg.pose.pose.position.x, msg.pose.pose.position.y = x, y
        msg.pose.pose.orientation.z, msg.pose.pose.orientation.w = qz, qw
        self.odom.publish(msg)
        with self._lock:
            self.sent['pose'] += 1

    def _publish_image(self) -> None:
        self.camera.publish(CompressedImage(format='jpeg', data=self.image))
        with self._lock:
            self.sent['frame'] += 1


@pytest.fixture
def robot(ros):
    return StandIns(ros)


def start_tasks(ros, launch, data_dir, **parameters):
    settings = {
        'data_dir': str(data_dir),
        'inputs.frame_period_s': 0.0,
        'runner.stop_view_count': 2,
        'runner.judge_frames': 4,
        'runner.max_attempts': 1,
        **parameters,
    }
    launch('task_node', **settings)
    with ros.paused() as node:
        client = ActionClient(node, RunTask, 'run_task')
    connect(client)
    return client


def text_goal(text: str) -> RunTask.Goal:
    return RunTask.Goal(modality=RunTask.Goal.MODALITY_TEXT, text=text)


def test_an_open_task_left_by_a_crash_is_recorded_interrupted_at_start(ros, launch, tmp_path):
    data = tmp_path / 'tasks'
    left = TaskLedger(data / 'ledger').begin(TaskGoal(GoalModality.TEXT, 'the kitchen'))
    start_tasks(ros, launch, data)
    listed = ros.call(ListTasks, 'list_tasks', ListTasks.Request(limit=10))
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
    got = ros.call(GetTask, 'get_task', GetTask.Request(task_id=result.task_id))
    assert got.found, got.message
    assert got.summary.status == TaskSummary.STATUS_STOPPED
    assert 'no path' in got.handover
    listed = ros.call(ListTasks, 'list_tasks', ListTasks.Request(limit=10))
    assert [task.task_id for task in listed.tasks] == [result.task_id]
    missing = ros.call(GetTask, 'get_task', GetTask.Request(task_id='t999999-0000'))
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
    listed = ros.call(ListTasks, 'list_tasks', ListTasks.Request(limit=10))
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


def test_goals_that_cannot_be_run_are_refused_or_stopped_without_a_move(
    ros, launch, robot, tmp_path
):
    client = start_tasks(ros, launch, tmp_path / 'tasks')
    mixed = RunTask.Goal(modality=RunTask.Goal.MODALITY_TEXT, text='the hall', place_name='x')
    refused = result_of(send(client, mixed))
    assert refused.status == RunTask.Result.STATUS_REFUSED
    assert 'does not use place_name' in refused.message
    photo = RunTask.Goal(modality=RunTask.Goal.MODALITY_PHOTO)
    photo.photo.format, photo.photo.data = 'jpeg', b'not a picture'
    unknown = RunTask.Goal(modality=RunTask.Goal.MODALITY_PLACE, place_name='the attic')
    for goal in (photo, unknown):
        result = result_of(send(client, goal))
        assert result.status == RunTask.Result.STATUS_STOPPED, result.message
        assert result.termination == RunTask.Result.TERMINATION_NO_GOAL
    assert robot.go_to_goals == 0
    listed = ros.call(ListTasks, 'list_tasks', ListTasks.Request(limit=10))
    assert len(listed.tasks) == 2  # the refusal is not a task


def test_a_recall_question_carries_the_exclusions_and_keeps_the_goal_whole():
    goal = RunGoal(TaskGoal(GoalModality.TEXT, 'the red mug'))
    query = RecallQuery(
        goal,
        Pose(),
        max_candidates=3,
        excluded_entry_ids=('tour:7',),
        excluded_positions=((1.0, 2.0),),
        exclusion_radius_m=1.5,
        briefing='x' * 5000,
    )
    text = question_text(query, 300)
    assert text.startswith('Where is the red mug?')
    assert 'tour:7' in text and '(1.0, 2.0)' in text
    assert 'x' * 100 not in text  # the briefing did not fit and was left out
    assert len(text) <= 300
