# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Agent answers as reasoner_node's messages: the Answer, Ask feedback, and the status
and one-line message every Query response and Ask result carries."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from waymark.agent.agent import (
    MEMORY_UNAVAILABLE,
    NONE,
    POSITION,
    TEXT,
    TIME,
    YES_NO,
    AgentAnswer,
    StepEvent,
)
from waymark.geometry import Pose
from waymark_interfaces.action import Ask
from waymark_interfaces.msg import Answer
from waymark_interfaces.srv import Query
from waymark_ros.ros.conversions import ns_to_stamp, pose_to_msg
from waymark_ros.ros.memory_msgs import hit_to_msg

KINDS = {
    NONE: Answer.KIND_NONE,
    POSITION: Answer.KIND_POSITION,
    TEXT: Answer.KIND_TEXT,
    TIME: Answer.KIND_TIME,
    YES_NO: Answer.KIND_YES_NO,
}
# builtin_interfaces/Time holds seconds in an int32: later times are not sent.
MAX_STAMP_NS = (2**31 - 1) * 1_000_000_000
# Tool arguments in Ask feedback are cut to this many characters.
FEEDBACK_ARGUMENT_CHARS = 2000
# A target's sigma is sent as float32: a larger one says no more and is sent as this.
MAX_SIGMA_M = 1.0e6


@dataclass
class Reply:
    """What a Query response and an Ask result carry; every path sets a status."""

    status: int
    message: str
    answer: Answer = field(default_factory=Answer)
    queue_length: int = 0

    @property
    def success(self) -> bool:
        return self.status == Query.Response.STATUS_ANSWERED

    def fill(self, response: Query.Response) -> Query.Response:
        response.success, response.message, response.answer = (
            self.success,
            self.message,
            self.answer,
        )
        response.status, response.queue_length = self.status, self.queue_length
        return response

    def ask_result(self) -> Ask.Result:
        return Ask.Result(
            success=self.success,
            message=self.message,
            answer=self.answer,
            status=self.status,
            queue_length=self.queue_length,
        )


def answer_to_msg(answer: AgentAnswer, frame_id: str, stamp_ns: int) -> Answer:
    """The Answer message of an agent answer; the goal is stamped `stamp_ns`."""
    msg = Answer(
        kind=KINDS.get(answer.kind, Answer.KIND_NONE),
        text=answer.text,
        yes=bool(answer.yes),
        confidence=float(min(1.0, max(0.0, answer.confidence))),
        used_fallback=answer.used_fallback,
        trace_id=answer.trace_id,
        lessons_shown=list(answer.lessons_shown),
        lesson_ids=list(answer.lesson_ids),
        lessons_note=answer.lessons_note,
    )
    if answer.goal is not None:
        g = answer.goal
        msg.goal.header.frame_id = frame_id
        msg.goal.header.stamp = ns_to_stamp(stamp_ns)
        msg.goal.pose = pose_to_msg(Pose.from_xyz_yaw(g.x, g.y, g.z, g.yaw))
        msg.has_goal = True
        msg.goal_session, msg.goal_map_epoch = g.session, g.map_epoch
    target = answer.target
    if target is not None and not target_mismatch(answer):
        msg.target_position.header.frame_id = frame_id
        msg.target_position.header.stamp = ns_to_stamp(stamp_ns)
        p = msg.target_position.point
        p.x, p.y, p.z = target.x, target.y, target.z
        msg.target_sigma_m = min(target.sigma_m, MAX_SIGMA_M)
        msg.target_method = target.method
        msg.has_target = True
    if answer.time_ns is not None and 0 <= answer.time_ns <= MAX_STAMP_NS:
        msg.time = ns_to_stamp(answer.time_ns)
    msg.evidence = [hit_to_msg(hit, frame_id) for hit in answer.evidence]
    return msg


def target_mismatch(answer: AgentAnswer) -> str:
    """Why the answer's target is not sent: it lies in another map than its goal (a pose
    of another session or map epoch is not comparable). Empty when it is sent."""
    target, goal = answer.target, answer.goal
    if target is None or goal is None:
        return ''
    if (target.session, target.map_epoch) == (goal.session, goal.map_epoch):
        return ''
    return (
        f'target dropped: in map epoch {target.map_epoch} of {target.session!r}, '
        f'the goal in map epoch {goal.map_epoch} of {goal.session!r}'
    )


def step_feedback(event: StepEvent) -> Ask.Feedback:
    """Ask feedback of one agent step; long tool arguments are cut."""
    return Ask.Feedback(
        step=event.step,
        tool=event.tool,
        arguments=event.arguments[:FEEDBACK_ARGUMENT_CHARS],
        hits=event.hits,
        elapsed=float(event.elapsed_s),
    )


def answer_status(answer: AgentAnswer) -> int:
    if answer.kind != NONE and not answer.cancelled:
        return Query.Response.STATUS_ANSWERED
    if answer.cancelled:
        return Query.Response.STATUS_CANCELLED
    if answer.fallback_reason.startswith(MEMORY_UNAVAILABLE):
        return Query.Response.STATUS_UNAVAILABLE
    return Query.Response.STATUS_NO_ANSWER


def answer_message(answer: AgentAnswer, memory_is_empty: Callable[[], bool]) -> str:
    """How the answer came about, in one line; `memory_is_empty` is asked only when
    nothing was found, to tell an empty memory from a failed search."""
    if answer.cancelled:
        return f'cancelled after {answer.steps} step{"" if answer.steps == 1 else "s"}'
    if answer.kind == NONE:
        if answer.fallback_reason.startswith(MEMORY_UNAVAILABLE):
            return answer.fallback_reason
        if not answer.evidence and memory_is_empty():
            return 'memory is empty: no keyframes stored for the requested sessions'
        return answer.text or answer.fallback_reason or 'no answer'
    if answer.used_fallback:
        source = f'embedder-only fallback ({answer.fallback_reason})'
    else:
        source = f'answered by the agent in {answer.steps} steps ({answer.llm_calls} LLM calls)'
    if answer.goal is not None:
        source += f'; goal in map epoch {answer.goal.map_epoch}'
    target = answer.target
    if target is not None:
        located = f'target by {target.method}, +/- {target.sigma_m:.2f} m'
        source += '; ' + (target_mismatch(answer) or located)
    return source
