# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""What the client's task calls return (run_task, mark, tasks, task, feedback), read from
task_node's and reasoner_node's messages into frozen dataclasses with names for the
messages' constants, so that a script compares strings and never the numbers."""

from __future__ import annotations

import json
from dataclasses import dataclass

from geometry_msgs.msg import PoseStamped

from waymark.geometry import yaw_from_quaternion
from waymark_interfaces.action import RunTask
from waymark_interfaces.msg import TaskSummary
from waymark_interfaces.srv import GetTask, ListTasks, Mark
from waymark_ros.ros.conversions import stamp_to_ns

OK = 'ok'
FAILED = 'failed'
# RunTask.Result's and TaskSummary's constants, by name.
TASK_STATUSES = {
    RunTask.Result.STATUS_CERTIFIED: 'certified',
    RunTask.Result.STATUS_NOT_DONE: 'not_done',
    RunTask.Result.STATUS_UNRESOLVED: 'unresolved',
    RunTask.Result.STATUS_CLAIMED: 'claimed',
    RunTask.Result.STATUS_STOPPED: 'stopped',
    RunTask.Result.STATUS_REFUSED: 'refused',
}
TERMINATIONS = {
    RunTask.Result.TERMINATION_NONE: 'none',
    RunTask.Result.TERMINATION_CLOSED: 'closed',
    RunTask.Result.TERMINATION_TIME_BUDGET: 'time_budget',
    RunTask.Result.TERMINATION_DISTANCE_BUDGET: 'distance_budget',
    RunTask.Result.TERMINATION_STEP_BUDGET: 'step_budget',
    RunTask.Result.TERMINATION_CANCELED: 'canceled',
    RunTask.Result.TERMINATION_NO_GOAL: 'no_goal',
    RunTask.Result.TERMINATION_DRIVE_REFUSED: 'drive_refused',
    RunTask.Result.TERMINATION_INTERRUPTED: 'interrupted',
    RunTask.Result.TERMINATION_ERROR: 'error',
}
CLAIMS = {
    RunTask.Result.CLAIM_NONE: 'none',
    RunTask.Result.CLAIM_COMPLETE: 'complete',
    RunTask.Result.CLAIM_INCOMPLETE: 'incomplete',
}
VERDICTS = {
    RunTask.Result.VERDICT_NONE: 'none',
    RunTask.Result.VERDICT_COMPLETE: 'complete',
    RunTask.Result.VERDICT_INCOMPLETE: 'incomplete',
    RunTask.Result.VERDICT_UNKNOWN: 'unknown',
}
PHASES = {
    RunTask.Feedback.PHASE_RECALL: 'recall',
    RunTask.Feedback.PHASE_DRIVE: 'drive',
    RunTask.Feedback.PHASE_VERIFY: 'verify',
    RunTask.Feedback.PHASE_RECOVER: 'recover',
    RunTask.Feedback.PHASE_CLOSE: 'close',
}


@dataclass(frozen=True)
class TaskResult:
    """How a task ended. `status`: the ledger's certified (the only success), not_done,
    unresolved, claimed or stopped; refused (task_node refused the goal, or this client
    did not send it: nothing in the ledger, no task_id); or this client's server_missing,
    rejected or no_reply (the goal was canceled). `termination`, `verdict`: RunTask's
    TERMINATION_* and VERDICT_* by name; `stop`: x, y, yaw where the base stopped, in the
    map frame of `map_epoch`. `result` is the whole message (claim, handover, what the
    task spent); `progress` the task's feedback as it came."""

    status: str
    message: str
    task_id: str = ''
    termination: str = 'none'
    verdict: str = 'none'
    evidence: str = ''
    stop: tuple[float, float, float] | None = None
    map_epoch: int = 0
    result: RunTask.Result | None = None
    progress: tuple[RunTask.Feedback, ...] = ()

    @property
    def ok(self) -> bool:
        return self.status == 'certified'

    @classmethod
    def of(cls, result: RunTask.Result, progress: tuple[RunTask.Feedback, ...]) -> TaskResult:
        return cls(
            _name(TASK_STATUSES, result.status),
            result.message,
            result.task_id,
            _name(TERMINATIONS, result.termination),
            _name(VERDICTS, result.verdict),
            result.evidence,
            xy_yaw(result.stop_pose) if result.has_stop else None,
            result.map_epoch,
            result,
            progress,
        )


@dataclass(frozen=True)
class MarkResult:
    """`status`: ok, failed (task_node's message says why: a bad name, no pose yet, the
    place book full), server_missing or no_reply. `pose`: x, y, yaw of the place in the map
    frame of `map_epoch`; `views`: views stored with it; `replaced`: an older place of
    that name was."""

    status: str
    message: str
    pose: tuple[float, float, float] | None = None
    map_epoch: int = 0
    views: int = 0
    replaced: bool = False

    @property
    def ok(self) -> bool:
        return self.status == OK

    @classmethod
    def of(cls, response: Mark.Response) -> MarkResult:
        if not response.success:
            return cls(FAILED, response.message)
        return cls(
            OK,
            response.message,
            xy_yaw(response.pose),
            response.map_epoch,
            response.views,
            response.replaced,
        )


@dataclass(frozen=True)
class TaskInfo:
    """One task of the ledger in brief (TaskSummary), with its constants by name."""

    task_id: str
    run_id: str
    sequence: int
    modality: str  # text, photo or place
    goal_text: str
    status: str
    termination: str
    claim: str
    verdict: str
    places: tuple[str, ...]
    attempts: int
    recoveries: int
    agent_steps: int
    elapsed_s: float
    distance_m: float
    started_ns: int
    ended_ns: int

    @classmethod
    def of(cls, summary: TaskSummary) -> TaskInfo:
        return cls(
            summary.task_id,
            summary.run_id,
            summary.sequence,
            summary.modality,
            summary.goal_text,
            _name(TASK_STATUSES, summary.status),
            _name(TERMINATIONS, summary.termination),
            _name(CLAIMS, summary.claim),
            _name(VERDICTS, summary.verdict),
            tuple(summary.places),
            summary.attempts,
            summary.recoveries,
            summary.agent_steps,
            summary.elapsed_s,
            summary.distance_m,
            stamp_to_ns(summary.started),
            stamp_to_ns(summary.ended),
        )


@dataclass(frozen=True)
class TasksResult:
    """`status`: ok, failed (the ledger cannot be read), server_missing or no_reply.
    `tasks`: newest first; `truncated`: the ledger holds older ones; `unreadable`: ledger
    files that could not be read, as "file: reason"."""

    status: str
    message: str
    tasks: tuple[TaskInfo, ...] = ()
    truncated: bool = False
    unreadable: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.status == OK

    @classmethod
    def of(cls, response: ListTasks.Response) -> TasksResult:
        return cls(
            OK if response.success else FAILED,
            response.message,
            tuple(TaskInfo.of(summary) for summary in response.tasks),
            response.truncated,
            tuple(response.unreadable),
        )


@dataclass(frozen=True)
class TaskRecordResult:
    """One task's record. `status`: ok, failed (no such task, or its record cannot be
    read), server_missing or no_reply. `record`: the record as the ledger keeps it
    (versioned JSON, parsed); `stop`: x, y, yaw in the map frame of `map_epoch`."""

    status: str
    message: str
    task: TaskInfo | None = None
    record: dict | None = None
    claim_evidence: str = ''
    evidence: str = ''
    handover: str = ''
    stop: tuple[float, float, float] | None = None
    map_epoch: int = 0

    @property
    def ok(self) -> bool:
        return self.status == OK

    @classmethod
    def of(cls, response: GetTask.Response) -> TaskRecordResult:
        if not response.found:
            return cls(FAILED, response.message)
        try:
            record = json.loads(response.record_json)
        except ValueError as error:
            return cls(FAILED, f'the record is not JSON: {error}')
        return cls(
            OK,
            response.message,
            TaskInfo.of(response.summary),
            record,
            response.claim_evidence,
            response.evidence,
            response.handover,
            xy_yaw(response.stop_pose) if response.has_stop else None,
            response.map_epoch,
        )


@dataclass(frozen=True)
class FeedbackResult:
    """`status`: ok (counted: `calibrated` lessons, 0 when the answer or task was given
    none or was counted before), failed (the reasoner's message says why: an unknown id,
    memory away; nothing counted), server_missing or no_reply. `reflection_queued`: this
    feedback queued a reflection."""

    status: str
    message: str
    calibrated: int = 0
    reflection_queued: bool = False

    @property
    def ok(self) -> bool:
        return self.status == OK


def xy_yaw(pose: PoseStamped) -> tuple[float, float, float]:
    """x, y, yaw of a pose."""
    p, q = pose.pose.position, pose.pose.orientation
    return p.x, p.y, yaw_from_quaternion((q.x, q.y, q.z, q.w))


def phase_name(feedback: RunTask.Feedback) -> str:
    """The feedback's phase by name."""
    return _name(PHASES, feedback.phase)


def _name(names: dict[int, str], value: int) -> str:
    return names.get(value, f'unknown ({value})')
