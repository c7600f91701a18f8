# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""reasoner_node: answers questions about memory and publishes the goal they imply.

Questions come through the `query` service (Query) or the `ask` action (Ask, with one
feedback message per agent step, cancellable between steps). Each is answered by the
reasoning agent (`waymark.agent`): a tool-calling loop on an OpenAI-compatible server
(vLLM in production) over memory_node's SearchMemory service. Without `llm.base_url`,
or when the model is unreachable or spends its budget without a usable answer, the
answer is the agent's fallback (the best verified candidate, else the embedder-only top
hit), flagged `used_fallback`. Every question writes a JSON trace named by the answer's
`trace_id` under `traces.dir`.

A question takes seconds to a minute, so it never holds the executor: the node spins a
MultiThreadedExecutor, questions run in a reentrant callback group, and the memory client
has a group of its own, so memory's responses are taken while questions wait for them.
Every question gets a response by its deadline (`agent.deadline_s` from its arrival):
input over a limit is refused before anything is decoded or queued; at most
`max_concurrent_questions` agent loops run, at most `question_queue_length` more wait for
one in arrival order, and any other is refused at once as busy with the queue's length. A
waiting question whose deadline passes is answered with STATUS_TIMEOUT. The executor has
a thread for each running and each waiting question plus spare ones, so a refusal, a
memory response or a cancel request never waits behind questions, and the request
readers keep `request_history_depth` requests, so a burst is taken, not overwritten
(with the default depth of 10, a burst of 20 questions lost 7 without a word).

A goal is sent to navigator_node (GoTo on `navigation.action`) only when the request asks
to navigate and the answer has one; the answer does not wait for the robot to get there,
and how the drive ended is published on `navigation/outcome` (see navigation_client.py).
Its map epoch is given in the response message and in the trace; whether a pose of that
epoch can be reached is the navigator's call, and nothing goes to a planner around it.
"""

from __future__ import annotations

import math
import os
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from geometry_msgs.msg import Pose as PoseMsg
from rclpy.action import ActionServer, CancelResponse
from rclpy.action.server import ServerGoalHandle
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from std_msgs.msg import ColorRGBA, Header
from visualization_msgs.msg import Marker, MarkerArray

from waymark.agent.admission import ADMITTED, BUSY, CANCELLED, Admission
from waymark.agent.agent import (
    NONE,
    POSITION,
    TEXT,
    TIME,
    YES_NO,
    Agent,
    AgentAnswer,
    AgentQuestion,
    StepEvent,
)
from waymark.agent.llm import ChatClient, LLMConfig
from waymark.agent.trace import TraceWriter
from waymark.agent.verifier import Verifier, VerifierConfig
from waymark.geometry import Pose, yaw_from_quaternion
from waymark.memory.entries import is_session_name
from waymark.memory.storage.image_codec import ImageLimits, check_image_limits, decode_image
from waymark.memory.storage.image_store import ImageStoreReader
from waymark.parameters.reasoner import (
    LimitsParameters,
    LLMParameters,
    ReasonerParameters,
    TracesParameters,
    VerifierParameters,
)
from waymark_interfaces.action import Ask
from waymark_interfaces.msg import Answer
from waymark_interfaces.srv import Query
from waymark_ros.ros import qos
from waymark_ros.ros.conversions import hit_to_msg, ns_to_stamp, pose_to_msg
from waymark_ros.ros.memory_client import MemoryClient, memory_deadline
from waymark_ros.ros.navigation_client import NavigationClient
from waymark_ros.ros.params import declare_settings
from waymark_ros.ros.pose_input import subscribe_pose
from waymark_ros.ros.spin import run_node

KINDS = {
    NONE: Answer.KIND_NONE,
    POSITION: Answer.KIND_POSITION,
    TEXT: Answer.KIND_TEXT,
    TIME: Answer.KIND_TIME,
    YES_NO: Answer.KIND_YES_NO,
}
# The executor has a thread for each running and each waiting question and
# EXECUTOR_SPARE_THREADS more, for memory's responses, refusals and cancel and result
# requests, which must never wait behind one.
EXECUTOR_SPARE_THREADS = 3
# builtin_interfaces/Time holds seconds in an int32: later times are not sent.
MAX_STAMP_NS = (2**31 - 1) * 1_000_000_000
# Tool arguments in Ask feedback are cut to this many characters.
FEEDBACK_ARGUMENT_CHARS = 2000
_MARKER_LABEL_CHARS = 60


class ReasonerNode(Node):
    def __init__(self) -> None:
        super().__init__('reasoner_node')
        params = declare_settings(self, ReasonerParameters, on_change=self._on_parameters)
        self._params = params
        self._map_frame = params.map_frame
        self._limits = input_limits(params.limits)
        chat = self._chat_client(params.llm)
        verifier = self._verifier(params.verifier, params.llm, chat)
        config = params.agent_config()
        traces = trace_writer(params.traces)

        self._memory = MemoryClient(self, params.memory_timeout_s)
        images = ImageStoreReader(params.memory.data_dir).image_of
        self._agent = Agent(chat, self._memory, images, config, verifier, traces)
        max_concurrent, queue_length = params.max_concurrent_questions, params.question_queue_length
        self._admission = Admission(max_concurrent, queue_length)
        self.executor_threads = max_concurrent + queue_length + EXECUTOR_SPARE_THREADS
        self._robot_pose: tuple[float, float, float, float] | None = None

        navigation = params.navigation
        self._navigation = NavigationClient(
            self,
            navigation.action,
            navigation.server_wait_s,
            navigation.accept_wait_s,
            navigation.result_wait_s,
        )
        self._answer_publisher = self.create_publisher(Answer, 'answer', qos.latched())
        self._marker_publisher = self.create_publisher(MarkerArray, 'answer/markers', qos.latched())
        if params.robot.odom_topic:
            subscribe_pose(
                self,
                params.robot.pose_type,
                params.robot.odom_topic,
                self._on_pose,
                qos.state_input(reliable=False, depth=5),
                callback_group=MutuallyExclusiveCallbackGroup(),
            )
        questions = ReentrantCallbackGroup()
        requests = qos.requests(params.request_history_depth)
        self.create_service(
            Query, 'query', self._on_query, qos_profile=requests, callback_group=questions
        )
        self._ask_server = ActionServer(
            self,
            Ask,
            'ask',
            execute_callback=self._on_ask,
            cancel_callback=lambda _goal: CancelResponse.ACCEPT,
            callback_group=questions,
            goal_service_qos_profile=requests,
            result_service_qos_profile=requests,
            cancel_service_qos_profile=requests,
        )
        llm = f'{chat.config.model} at {chat.config.base_url}' if chat else 'none (fallback only)'
        check = f'{verifier.chat.config.model}' if verifier else 'off'
        self.get_logger().info(
            f'answering with LLM {llm}; verifier {check}; up to {config.max_steps} searches '
            f'of top {config.top_k} {config.level}s within {config.deadline_s:.0f} s; '
            f'{max_concurrent} at once, {queue_length} waiting; traces '
            f'{traces.directory if traces else "off"}'
        )

    # -- parameters ----------------------------------------------------------------------

    def _on_parameters(self, params: ReasonerParameters) -> None:
        """Live parameters: for the questions that start from now on."""
        self._limits = input_limits(params.limits)
        self._agent.config = params.agent_config()
        if params.traces != self._params.traces:
            self._agent.traces = trace_writer(params.traces)
        self._params = params

    def _chat_client(self, llm: LLMParameters) -> ChatClient | None:
        if not llm.base_url:
            return None
        _check_url('llm.base_url', llm.base_url)
        return ChatClient(_llm_config(llm, llm.base_url, llm.model, llm.api_key_env))

    def _verifier(
        self, verifier: VerifierParameters, llm: LLMParameters, chat: ChatClient | None
    ) -> Verifier | None:
        """The VLM that checks candidate pictures: the LLM itself when it accepts images,
        or the one verifier.base_url / verifier.model name. Off without either."""
        if verifier.base_url:
            _check_url('verifier.base_url', verifier.base_url)
        if not verifier.enabled:
            return None
        base_url = verifier.base_url or (chat.config.base_url if chat else '')
        if not base_url:
            return None
        model = verifier.model
        if not model and chat is not None and chat.config.accepts_images:
            model = chat.config.model
        if not model:
            self.get_logger().warning(
                'verifier off: no verifier.model, and the LLM does not accept images'
            )
            return None
        config = _llm_config(llm, base_url, model, verifier.api_key_env or llm.api_key_env)
        config = replace(config, accepts_images=True)
        same = chat is not None and (config.base_url, config.model, config.api_key) == (
            chat.config.base_url,
            chat.config.model,
            chat.config.api_key,
        )
        return Verifier(
            chat if same else ChatClient(config), VerifierConfig(config, verifier.max_images)
        )

    # -- questions -----------------------------------------------------------------------

    def _on_query(self, request: Query.Request, response: Query.Response) -> Query.Response:
        reply = self._answer(request)
        response.success, response.message, response.answer = (
            reply.success,
            reply.message,
            reply.answer,
        )
        response.status, response.queue_length = reply.status, reply.queue_length
        return response

    def _on_ask(self, goal_handle: ServerGoalHandle) -> Ask.Result:
        def on_step(event: StepEvent) -> None:
            feedback = Ask.Feedback(
                step=event.step,
                tool=event.tool,
                arguments=event.arguments[:FEEDBACK_ARGUMENT_CHARS],
                hits=event.hits,
                elapsed=float(event.elapsed_s),
            )
            goal_handle.publish_feedback(feedback)

        reply = self._answer(goal_handle.request, on_step, lambda: goal_handle.is_cancel_requested)
        result = Ask.Result(
            success=reply.success,
            message=reply.message,
            answer=reply.answer,
            status=reply.status,
            queue_length=reply.queue_length,
        )
        if goal_handle.is_cancel_requested and not reply.success:
            goal_handle.canceled()
        elif reply.success:
            goal_handle.succeed()
        else:
            goal_handle.abort()
        return result

    def _answer(
        self,
        request: Query.Request | Ask.Goal,
        on_step: Callable[[StepEvent], None] | None = None,
        cancelled: Callable[[], bool] = lambda: False,
    ) -> Reply:
        """The reply to a Query request or an Ask goal, by its deadline; never raises, so
        that no caller is left without a response."""
        deadline = time.monotonic() + self._agent.config.deadline_s
        try:
            problem = self._limits.problem(request)
        except Exception as error:  # a bug must cost one answer, not the node
            return self._failed(request.question[:80], error)
        if problem:
            self.get_logger().warning(f'refused a question: {problem}')
            return Reply(Query.Response.STATUS_REFUSED, problem)
        ticket = self._admission.enter(deadline, cancelled)
        if ticket.outcome == BUSY:
            running, _ = self._admission.load()
            return Reply(
                Query.Response.STATUS_BUSY,
                f'busy: {running} questions are being answered and {ticket.queue_length} '
                'wait; ask again later',
                queue_length=ticket.queue_length,
            )
        if ticket.outcome == CANCELLED:
            return Reply(
                Query.Response.STATUS_CANCELLED,
                f'cancelled after {ticket.waited_s:.1f} s in the queue',
                queue_length=ticket.queue_length,
            )
        if ticket.outcome != ADMITTED:
            return Reply(
                Query.Response.STATUS_TIMEOUT,
                f'timeout: waited {ticket.waited_s:.1f} s for a free agent loop, '
                f'{ticket.queue_length} in the queue, until the deadline of '
                f'{self._agent.config.deadline_s:g} s passed',
                queue_length=ticket.queue_length,
            )
        question = ' '.join(request.question.split())
        try:
            reply = self._admitted(question, request, deadline, on_step, cancelled)
        except Exception as error:  # a bug must cost one answer, not the node
            reply = self._failed(question, error)
        finally:
            self._admission.release()
        reply.queue_length = ticket.queue_length
        return reply

    def _admitted(
        self,
        question: str,
        request: Query.Request | Ask.Goal,
        deadline: float,
        on_step: Callable[[StepEvent], None] | None,
        cancelled: Callable[[], bool],
    ) -> Reply:
        photo = None
        if request.image.data:
            try:
                photo = decode_image(bytes(request.image.data), self._limits.photo)
            except ValueError as error:
                return Reply(Query.Response.STATUS_REFUSED, f'the photo cannot be used: {error}')
        with memory_deadline(deadline):
            # Up to the whole memory timeout: a node just started may not have discovered
            # memory_node yet, and asking the model first would be wasted if it is away.
            wait = min(self._memory.timeout_s, deadline - time.monotonic())
            if not self._memory.ready(wait):
                return Reply(
                    Query.Response.STATUS_UNAVAILABLE,
                    'memory_node is not running (no search_memory service)',
                )
            return self._run_agent(question, photo, request, deadline, on_step, cancelled)

    def _failed(self, question: str, error: Exception) -> Reply:
        self.get_logger().error(
            f'{question!r}: {type(error).__name__}: {error}\n{traceback.format_exc()}'
        )
        return Reply(
            Query.Response.STATUS_ERROR, f'internal error: {type(error).__name__}: {error}'
        )

    def _run_agent(
        self,
        question: str,
        photo: np.ndarray | None,
        request: Query.Request | Ask.Goal,
        deadline: float,
        on_step: Callable[[StepEvent], None] | None,
        cancelled: Callable[[], bool],
    ) -> Reply:
        asked = AgentQuestion(
            question=question,
            now_ns=self.get_clock().now().nanoseconds,
            sessions=tuple(request.sessions),
            image=photo,
            robot_pose=self._robot_pose,
        )
        result = self._agent.ask(asked, on_step, cancelled, deadline)
        now = self.get_clock().now().nanoseconds
        answer = answer_to_msg(result, self._map_frame, now)
        success = result.kind != NONE and not result.cancelled
        message = self._message(result, list(request.sessions))
        self.get_logger().info(
            f'{question!r}: {result.kind}{" (fallback)" if result.used_fallback else ""} in '
            f'{result.latency_s:.1f} s, {result.steps} steps, {result.llm_calls} LLM calls; '
            f'trace {result.trace_id}; {message}'
        )
        if success:
            self._answer_publisher.publish(answer)
            self._marker_publisher.publish(answer_markers(answer, self._map_frame, now))
            if request.navigate and answer.has_goal:
                tag = {'question': question, 'trace_id': result.trace_id}
                evidence = (result.goal.session, result.goal.map_epoch)
                message += '; ' + self._navigation.send(answer.goal, tag, *evidence)
        if success:
            status = Query.Response.STATUS_ANSWERED
        elif result.cancelled:
            status = Query.Response.STATUS_CANCELLED
        elif result.fallback_reason.startswith('memory unavailable'):
            status = Query.Response.STATUS_UNAVAILABLE
        else:
            status = Query.Response.STATUS_NO_ANSWER
        return Reply(status, message, answer)

    def _message(self, answer: AgentAnswer, sessions: list[str]) -> str:
        if answer.cancelled:
            return f'cancelled after {answer.steps} step{"" if answer.steps == 1 else "s"}'
        if answer.kind == NONE:
            if answer.fallback_reason.startswith('memory unavailable'):
                return answer.fallback_reason
            if not answer.evidence and self._memory_is_empty(sessions):
                return 'memory is empty: no keyframes stored for the requested sessions'
            return answer.text or answer.fallback_reason or 'no answer'
        if answer.used_fallback:
            source = f'embedder-only fallback ({answer.fallback_reason})'
        else:
            source = f'answered by the agent in {answer.steps} steps ({answer.llm_calls} LLM calls)'
        if answer.goal is not None:
            source += f'; goal in map epoch {answer.goal.map_epoch}'
        return source

    def _memory_is_empty(self, sessions: list[str]) -> bool:
        try:
            return self._memory.count(sessions or None, self._agent.config.level) == 0
        except (ValueError, RuntimeError):
            return False

    def _on_pose(self, header: Header, pose: PoseMsg, _covariance) -> None:
        if header.frame_id and header.frame_id != self._map_frame:
            self.get_logger().warning(
                f'robot pose ignored: in {header.frame_id!r}, not {self._map_frame!r}',
                throttle_duration_sec=60.0,
            )
            return
        p, q = pose.position, pose.orientation
        planar = (p.x, p.y, p.z, yaw_from_quaternion((q.x, q.y, q.z, q.w)))
        if all(map(math.isfinite, planar)):
            self._robot_pose = planar


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


@dataclass(frozen=True)
class InputLimits:
    """What a question may bring; checked before it is queued or anything is decoded."""

    question_chars: int
    sessions: int
    photo: ImageLimits

    def problem(self, request: Query.Request | Ask.Goal) -> str:
        """Why `request` is refused, in one line; '' when it is within the limits."""
        if len(request.question) > self.question_chars:
            return (
                f'the question is {len(request.question)} characters, over the limit of '
                f'{self.question_chars}'
            )
        if not request.question.strip():
            return 'empty question'
        if len(request.sessions) > self.sessions:
            return f'{len(request.sessions)} sessions named, over the limit of {self.sessions}'
        bad = next((name for name in request.sessions if not is_session_name(name)), None)
        if bad is not None:
            return (
                f'invalid session name {bad[:70]!r}: use 1-64 letters, digits, "_", "." or '
                '"-", starting with a letter or digit'
            )
        if request.image.data:
            try:
                check_image_limits(bytes(request.image.data), self.photo)
            except ValueError as error:
                return f'the photo cannot be used: {error}'
        return ''


def answer_to_msg(answer: AgentAnswer, frame_id: str, stamp_ns: int) -> Answer:
    """The Answer message of an agent answer; the goal is stamped `stamp_ns`."""
    msg = Answer(
        kind=KINDS.get(answer.kind, Answer.KIND_NONE),
        text=answer.text,
        yes=bool(answer.yes),
        confidence=float(min(1.0, max(0.0, answer.confidence))),
        used_fallback=answer.used_fallback,
        trace_id=answer.trace_id,
    )
    if answer.goal is not None:
        g = answer.goal
        msg.goal.header.frame_id = frame_id
        msg.goal.header.stamp = ns_to_stamp(stamp_ns)
        msg.goal.pose = pose_to_msg(Pose.from_xyz_yaw(g.x, g.y, g.z, g.yaw))
        msg.has_goal = True
    if answer.time_ns is not None and 0 <= answer.time_ns <= MAX_STAMP_NS:
        msg.time = ns_to_stamp(answer.time_ns)
    msg.evidence = [hit_to_msg(hit, frame_id) for hit in answer.evidence]
    return msg


def answer_markers(answer: Answer, frame_id: str, stamp_ns: int) -> MarkerArray:
    """RViz markers of an answer: the goal as an arrow under the answer's text, and each
    piece of evidence with a position as a sphere labelled with its id, score and view
    (sized by rank, best first). The array starts with a DELETEALL, so the markers of the
    previous answer go."""
    header = Header(frame_id=frame_id, stamp=ns_to_stamp(stamp_ns))
    placed = [hit for hit in answer.evidence if hit.pose_valid]
    markers = [Marker(header=header, action=Marker.DELETEALL)]
    if answer.has_goal:
        arrow = _marker(header, 'goal', 0, Marker.ARROW)
        arrow.pose = answer.goal.pose
        arrow.scale.x, arrow.scale.y, arrow.scale.z = 0.8, 0.12, 0.12
        arrow.color = ColorRGBA(r=1.0, g=0.4, b=1.0, a=1.0)
        label = _marker(header, 'goal', 1, Marker.TEXT_VIEW_FACING)
        label.pose.position.x = answer.goal.pose.position.x
        label.pose.position.y = answer.goal.pose.position.y
        label.pose.position.z = answer.goal.pose.position.z + 0.8
        label.scale.z = 0.25
        label.color = ColorRGBA(r=1.0, g=1.0, b=1.0, a=1.0)
        label.text = _clip(answer.text or 'goal')
        markers += [arrow, label]
    for rank, hit in enumerate(placed):
        fraction = rank / max(1, len(placed) - 1)
        sphere = _marker(header, 'evidence', rank, Marker.SPHERE)
        sphere.pose.position = hit.pose.pose.position
        size = 0.5 - 0.25 * fraction
        sphere.scale.x = sphere.scale.y = sphere.scale.z = size
        sphere.color = ColorRGBA(r=1.0, g=0.85 - 0.5 * fraction, b=0.1, a=0.9)
        label = _marker(header, 'evidence_labels', rank, Marker.TEXT_VIEW_FACING)
        label.pose.position.x = hit.pose.pose.position.x
        label.pose.position.y = hit.pose.pose.position.y
        label.pose.position.z = hit.pose.pose.position.z + 0.5
        label.scale.z = 0.2
        label.color = ColorRGBA(r=1.0, g=1.0, b=1.0, a=1.0)
        label.text = _clip(f'[{hit.id}] {hit.score:.2f} {hit.view}')
        markers += [sphere, label]
    return MarkerArray(markers=markers)


def _marker(header: Header, namespace: str, marker_id: int, kind: int) -> Marker:
    marker = Marker(header=header, ns=namespace, id=marker_id, type=kind, action=Marker.ADD)
    marker.pose.orientation.w = 1.0
    return marker


def _clip(text: str) -> str:
    return text if len(text) <= _MARKER_LABEL_CHARS else text[: _MARKER_LABEL_CHARS - 3] + '...'


def input_limits(limits: LimitsParameters) -> InputLimits:
    return InputLimits(
        question_chars=limits.max_question_chars,
        sessions=limits.max_sessions,
        photo=ImageLimits(max_bytes=limits.max_photo_bytes, max_pixels=limits.max_photo_pixels),
    )


def trace_writer(traces: TracesParameters) -> TraceWriter | None:
    return TraceWriter(Path(traces.dir).expanduser(), traces.max_files) if traces.dir else None


def _llm_config(llm: LLMParameters, base_url: str, model: str, key_env: str) -> LLMConfig:
    return LLMConfig(
        base_url=base_url,
        model=model,
        api_key=_api_key(key_env),
        timeout_s=llm.timeout_s,
        max_tokens=llm.max_tokens,
        temperature=llm.temperature,
        max_retries=llm.max_retries,
        accepts_images=llm.accepts_images,
    )


def _check_url(name: str, url: str) -> None:
    if not url.startswith(('http://', 'https://')):
        raise ValueError(f'{name}={url!r} must be an http:// or https:// URL')


def _api_key(variable: str) -> str:
    """The key in environment variable `variable`; servers without keys (vLLM's default)
    accept any, so a missing one is sent as 'EMPTY'."""
    key = os.environ.get(variable, '') if variable else ''
    return key or 'EMPTY'


def main(args=None) -> None:
    run_node(ReasonerNode, 'reasoner_node', args, threads=lambda node: node.executor_threads)


if __name__ == '__main__':
    main()
