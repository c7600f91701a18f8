# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The task drills: a node dies while a task runs, and the task is still in the ledger.

The whole chain runs for real: task_node recalls through reasoner_node (no LLM: it answers
from memory alone) and drives through navigator_node, safety_node and sim_base_node in the
open hall of the safety drills. Memory holds a few keyframes of a printed sign at the
hall's far end and each task asks for the sign by its text (memory reads it; the reasoner
finds it without a model), so every task drives a long way and the fault lands while it
drives. A killed task_node must
find its task at restart and record it STOPPED/INTERRUPTED; a killed navigator must leave
the task with an explicit status that is never CERTIFIED. Either way the next task runs.
"""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Callable

from PIL import Image, ImageDraw, ImageFont

from waymark_interfaces.action import RunTask
from waymark_interfaces.msg import TaskSummary
from waymark_interfaces.srv import GetTask
from waymark_ros.nodes.task.task_msgs import status_from_constant, termination_from_constant
from waymark_ros.tools.drill.drills import (
    T0,
    Settings,
    finish,
    keyframe,
    memory_params,
    publish_keyframes,
    reasoner_params,
)
from waymark_ros.tools.drill.driving import Odometer, released_driver, start_driving
from waymark_ros.tools.drill.report import DrillResult
from waymark_ros.tools.drill.stack import Stack, wait_until

FAR_END = (22.0, 3.0)  # where the seeded keyframes were taken: a long drive from the start
SEED_FRAMES = 4
SIGN = 'PHARMACY'
TASK_TIME_BUDGET_S = 240.0
TASK_TIMEOUT_S = TASK_TIME_BUDGET_S + 60.0
DRIVING_SPEED_MPS = 0.2  # the fault is injected once the base drives at least this fast
DRIVE_WAIT_S = 120.0
GET_TASK_TRIES = 3
GET_TASK_TIMEOUT_S = 20.0


def described(status: int, termination: int) -> str:
    """A task's status and termination constants as the ledger words them (RunTask.Result
    and TaskSummary share the values); a refused goal has no ledger status."""
    try:
        word = str(status_from_constant(status))
        reason = str(termination_from_constant(termination))
    except ValueError:
        return f'status {status} (termination {termination})'
    return f'{word} ({reason})'


class RunningTask:
    """One RunTask goal sent in the background, its feedback and its result kept."""

    def __init__(self, stack: Stack, text: str, timeout_s: float) -> None:
        self.task_id = ''
        self.phases: list[int] = []
        self.outcome: tuple[str, RunTask.Result | None] = ('unanswered', None)
        goal = RunTask.Goal(modality=RunTask.Goal.MODALITY_TEXT, text=text)
        goal.time_budget_s = TASK_TIME_BUDGET_S
        self._thread = threading.Thread(
            target=lambda: setattr(
                self, 'outcome', stack.run_task(goal, timeout_s, self._on_feedback)
            ),
            daemon=True,
        )
        self._thread.start()

    def _on_feedback(self, feedback: RunTask.Feedback) -> None:
        self.task_id = self.task_id or feedback.task_id
        self.phases.append(feedback.phase)

    def driving(self) -> bool:
        return bool(self.task_id) and RunTask.Feedback.PHASE_DRIVE in self.phases

    def wait(self, timeout_s: float) -> tuple[str, RunTask.Result | None]:
        self._thread.join(timeout_s)
        return self.outcome


def sign_jpeg(text: str) -> bytes:
    """A printed sign that memory's OCR reads."""
    image = Image.new('RGB', (640, 480), (190, 200, 210))
    draw = ImageDraw.Draw(image)
    draw.rectangle((40, 160, 600, 300), fill=(250, 250, 245))
    font = ImageFont.load_default(size=72)
    draw.text((320, 230), text, font=font, fill=(15, 15, 15), anchor='mm', stroke_width=2)
    encoded = io.BytesIO()
    image.save(encoded, format='JPEG', quality=90)
    return encoded.getvalue()


def start_task_stack(stack: Stack, settings: Settings) -> Odometer:
    """The driving chain of the safety drills, memory seeded at the far end, the reasoner
    without a model, and task_node on its own ledger."""
    odometer = start_driving(stack, released_driver(settings))
    stack.start('memory_node', **(memory_params(stack) | {'ocr': True}))
    stack.wait_ready('memory_node')
    frames = []
    for index in range(SEED_FRAMES):
        image = sign_jpeg(SIGN)
        frame = keyframe(index, T0 + index * 10**9, image, x=FAR_END[0] + 0.5 * index)
        frame.pose.pose.position.y = FAR_END[1]
        frames.append(frame)
    publish_keyframes(stack, frames)
    wait_until(
        lambda: stack.stats.get('memory_node', {}).get('frames', 0) >= SEED_FRAMES,
        120,
        'memory to store the seed keyframes',
    )
    stack.start('reasoner_node', **reasoner_params(stack, Settings()))
    stack.wait_ready('reasoner_node')
    stack.start('task_node', data_dir=str(stack.root / 'tasks'))
    stack.wait_ready('task_node')
    return odometer


def drive_task(stack: Stack, odometer: Odometer) -> RunningTask:
    """A task, once task_node drives it and the base moves."""
    running = RunningTask(stack, SIGN, TASK_TIMEOUT_S)
    wait_until(
        lambda: running.driving() and odometer.speed() >= DRIVING_SPEED_MPS,
        DRIVE_WAIT_S,
        'task_node to drive its task',
    )
    return running


def recorded(stack: Stack, task_id: str) -> TaskSummary | None:
    """The ledger's summary of `task_id`, through task_node's get_task; None if missing.

    A request left unanswered is sent again: just after task_node restarts, its response
    writer may not yet have matched this client's reader, and DDS drops a reply sent
    before that (rmw promises nothing about it), more often on a busy machine. No answer
    after `GET_TASK_TRIES` is an error of the drill, not a task missing from the ledger."""
    request = GetTask.Request(task_id=task_id)
    for _ in range(GET_TASK_TRIES):
        response = stack.call(GetTask, 'get_task', request, GET_TASK_TIMEOUT_S)
        if response is not None:
            return response.summary if response.found else None
    raise TimeoutError(f'get_task gave no answer for {task_id} in {GET_TASK_TRIES} tries')


def next_task_runs(result: DrillResult, stack: Stack, judge: Callable[[RunTask.Result], str]):
    """One more task: it must end with an explicit result that `judge` finds right
    (judge returns '' when it is, else why not)."""
    result.requests += 1
    outcome, answer = RunningTask(stack, SIGN, TASK_TIMEOUT_S).wait(TASK_TIMEOUT_S + 30.0)
    if answer is None:
        result.note(f'the next task: {outcome}')
        return
    result.answered += 1
    why = judge(answer)
    result.wrong += bool(why)
    result.note(
        f'the next task: {described(answer.status, answer.termination)}: {answer.message}'
        + (f'; {why}' if why else '')
    )


def an_ending(answer: RunTask.Result) -> str:
    """Any explicit ending with a ledger id is right for a task after a fault."""
    if answer.status == RunTask.Result.STATUS_REFUSED or not answer.task_id:
        return 'refused, not run'
    return ''


def kill_task_node_mid_task(stack: Stack, settings: Settings) -> DrillResult:
    """task_node dies while it drives: the task is recorded STOPPED/INTERRUPTED at restart."""
    result = DrillResult('kill -9 task_node mid-task')
    odometer = start_task_stack(stack, settings)
    running = drive_task(stack, odometer)
    stack.kill('task_node')
    result.injected += 1
    stack.start('task_node')
    stack.wait_ready('task_node')
    result.requests += 1
    summary = recorded(stack, running.task_id)
    if summary is None:
        result.lost += 1
        result.note(f'task {running.task_id} is not in the ledger after the restart')
    else:
        result.answered += 1
        interrupted = (
            summary.status == TaskSummary.STATUS_STOPPED
            and summary.termination == TaskSummary.TERMINATION_INTERRUPTED
        )
        result.wrong += not interrupted
        result.note(
            f'the killed task {running.task_id}: {described(summary.status, summary.termination)}'
        )
    next_task_runs(result, stack, an_ending)
    finish(stack, result)
    return result


def kill_navigator_mid_task(stack: Stack, settings: Settings) -> DrillResult:
    """The navigator dies under a task: the task ends explicitly, never certified, and once
    the navigator is back the next task runs."""
    result = DrillResult('kill -9 navigator_node mid-task')
    odometer = start_task_stack(stack, settings)
    running = drive_task(stack, odometer)
    stack.kill('navigator_node')
    result.injected += 1
    result.requests += 1
    outcome, answer = running.wait(TASK_TIMEOUT_S + 30.0)
    if answer is None:
        result.note(f'the task driven at the kill: {outcome}')
    else:
        result.answered += 1
        certified = answer.status == RunTask.Result.STATUS_CERTIFIED
        result.wrong += certified or an_ending(answer) != ''
        result.note(
            f'the task driven at the kill: '
            f'{described(answer.status, answer.termination)}: {answer.message}'
        )
        result.lost += recorded(stack, answer.task_id) is None
    stack.start('navigator_node')
    stack.wait_ready('navigator_node')
    time.sleep(1.0)
    next_task_runs(result, stack, an_ending)
    finish(stack, result)
    return result
