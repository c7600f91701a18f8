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
At most `max_concurrent_questions` run at once; the executor keeps threads beyond those
for responses and cancel requests, and a question beyond the limit is refused as busy
rather than left waiting behind the others.

A goal is sent to navigator_node (GoTo on `navigation.action`) only when the request asks
to navigate and the answer has one; the answer does not wait for the robot to get there,
and how the drive ended is published on `navigation/outcome` (see navigation_client.py).
Its map epoch is given in the response message and in the trace; whether a pose of that
epoch can be reached is the navigator's call, and nothing goes to a planner around it.
"""

from __future__ import annotations

import math
import os
import threading
import traceback
from collections.abc import Callable
from pathlib import Path

import numpy as np
from geometry_msgs.msg import Pose as PoseMsg
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.action.server import ServerGoalHandle
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from std_msgs.msg import ColorRGBA, Header
from visualization_msgs.msg import Marker, MarkerArray

from waymark.agent.agent import (
    NONE,
    POSITION,
    TEXT,
    TIME,
    YES_NO,
    Agent,
    AgentAnswer,
    AgentConfig,
    AgentQuestion,
    StepEvent,
)
from waymark.agent.bintrack import BinTrackParams
from waymark.agent.llm import ChatClient, LLMConfig
from waymark.agent.trace import TraceWriter
from waymark.agent.verifier import Verifier, VerifierConfig
from waymark.geometry import Pose, yaw_from_quaternion
from waymark.memory.entries import FRAME, LEVELS
from waymark.memory.image_codec import decode_image
from waymark_interfaces.action import Ask
from waymark_interfaces.msg import Answer
from waymark_interfaces.srv import Query
from waymark_ros import qos
from waymark_ros.conversions import hit_to_msg, ns_to_stamp, pose_to_msg
from waymark_ros.memory_client import ImageFiles, MemoryClient
from waymark_ros.navigation_client import NavigationClient
from waymark_ros.params import declare
from waymark_ros.pose_input import POSE_TYPES, subscribe_pose
from waymark_ros.spin import run_node

KINDS = {
    NONE: Answer.KIND_NONE,
    POSITION: Answer.KIND_POSITION,
    TEXT: Answer.KIND_TEXT,
    TIME: Answer.KIND_TIME,
    YES_NO: Answer.KIND_YES_NO,
}
# Questions at once are bounded by max_concurrent_questions (at most this many); the
# executor has EXECUTOR_SPARE_THREADS more, for memory's responses and for cancel and
# result requests, which must never wait behind a question.
MAX_CONCURRENT_QUESTIONS = 6
EXECUTOR_SPARE_THREADS = 2
EXECUTOR_THREADS = MAX_CONCURRENT_QUESTIONS + EXECUTOR_SPARE_THREADS
# builtin_interfaces/Time holds seconds in an int32: later times are not sent.
MAX_STAMP_NS = (2**31 - 1) * 1_000_000_000
# Tool arguments in Ask feedback are cut to this many characters.
FEEDBACK_ARGUMENT_CHARS = 2000
_MARKER_LABEL_CHARS = 60


class ReasonerNode(Node):
    def __init__(self) -> None:
        super().__init__('reasoner_node')
        self._map_frame = declare(
            self, 'map_frame', 'map', 'Frame of goals and evidence poses (memory_node map_frame).'
        )
        memory_timeout = declare(
            self,
            'memory_timeout_s',
            10.0,
            'Longest wait for one memory_node search, and for memory_node to be found.',
            low=0.1,
            high=600.0,
        )
        data_dir = declare(
            self,
            'memory.data_dir',
            '~/.waymark/memory',
            "memory_node's data_dir, where the pictures shown to the model and the verifier "
            'are read (the same directory, or a copy of it).',
        )
        self._max_concurrent = declare(
            self,
            'max_concurrent_questions',
            4,
            'Questions answered at once; more are refused as busy.',
            low=1,
            high=MAX_CONCURRENT_QUESTIONS,
        )
        odom_topic = declare(
            self,
            'robot.odom_topic',
            '',
            "Pose topic (map frame) whose latest pose the model is told as the robot's; "
            'empty: the robot pose is not given.',
        )
        pose_type = declare(
            self,
            'robot.pose_type',
            'odometry',
            'Message type on robot.odom_topic.',
            choices=POSE_TYPES,
        )
        chat = self._chat_client()
        verifier = self._verifier(chat)
        config = self._agent_config()
        traces = self._trace_writer()

        self._memory = MemoryClient(self, memory_timeout)
        self._agent = Agent(chat, self._memory, ImageFiles(data_dir), config, verifier, traces)
        self._slots = threading.BoundedSemaphore(self._max_concurrent)
        self._robot_pose: tuple[float, float, float, float] | None = None

        self._navigation = NavigationClient(
            self,
            declare(self, 'navigation.action', 'go_to', "navigator_node's GoTo action."),
            declare(
                self,
                'navigation.server_wait_s',
                2.0,
                'Longest wait for the navigator when a goal is to be sent.',
                low=0.0,
                high=60.0,
            ),
            declare(
                self,
                'navigation.accept_wait_s',
                5.0,
                'Longest wait for the navigator to accept a goal; then it is reported failed.',
                low=0.1,
                high=60.0,
            ),
            declare(
                self,
                'navigation.result_wait_s',
                360.0,
                'Longest wait for how a drive ended; then the goal is canceled and reported '
                "failed. Keep it above navigator_node's goal_timeout_s.",
                low=1.0,
                high=86400.0,
            ),
        )
        self._answer_publisher = self.create_publisher(Answer, 'answer', qos.latched())
        self._marker_publisher = self.create_publisher(MarkerArray, 'answer/markers', qos.latched())
        if odom_topic:
            subscribe_pose(
                self,
                pose_type,
                odom_topic,
                self._on_pose,
                qos.state_input(reliable=False, depth=5),
                callback_group=MutuallyExclusiveCallbackGroup(),
            )
        questions = ReentrantCallbackGroup()
        self.create_service(Query, 'query', self._on_query, callback_group=questions)
        self._ask_server = ActionServer(
            self,
            Ask,
            'ask',
            execute_callback=self._on_ask,
            goal_callback=self._on_ask_goal,
            cancel_callback=lambda _goal: CancelResponse.ACCEPT,
            callback_group=questions,
        )
        llm = f'{chat.config.model} at {chat.config.base_url}' if chat else 'none (fallback only)'
        check = f'{verifier.chat.config.model}' if verifier else 'off'
        self.get_logger().info(
            f'answering with LLM {llm}; verifier {check}; up to {config.max_steps} searches '
            f'of top {config.top_k} {config.level}s within {config.deadline_s:.0f} s; traces '
            f'{traces.directory if traces else "off"}'
        )

    # -- parameters ----------------------------------------------------------------------

    def _chat_client(self) -> ChatClient | None:
        base_url = declare(
            self,
            'llm.base_url',
            '',
            'OpenAI-compatible server of the agent (vLLM: http://localhost:8000/v1); '
            'empty: no LLM, every answer is the embedder-only fallback.',
        )
        model = declare(
            self, 'llm.model', 'Qwen/Qwen2.5-VL-7B-Instruct', 'Model name the server serves.'
        )
        key_env = declare(
            self,
            'llm.api_key_env',
            'WAYMARK_LLM_API_KEY',
            'Environment variable holding the API key (unset: no key).',
        )
        self._llm_settings = {
            'timeout_s': declare(
                self, 'llm.timeout_s', 30.0, 'Timeout of one LLM request.', low=0.1, high=600.0
            ),
            'max_tokens': declare(
                self,
                'llm.max_tokens',
                400,
                'Tokens the model may write per call.',
                low=1,
                high=32768,
            ),
            'temperature': declare(
                self, 'llm.temperature', 0.0, 'Sampling temperature.', low=0.0, high=2.0
            ),
            'max_retries': declare(
                self,
                'llm.max_retries',
                2,
                'Retries of a request the server did not answer (unreachable, timeout, 5xx).',
                low=0,
                high=10,
            ),
        }
        self._llm_key_env = key_env
        images = declare(
            self,
            'llm.accepts_images',
            True,
            'The model takes pictures (a VLM): found keyframes are shown to it.',
        )
        if not base_url:
            return None
        _check_url('llm.base_url', base_url)
        config = LLMConfig(
            base_url=base_url,
            model=model,
            api_key=_api_key(key_env),
            accepts_images=images,
            **self._llm_settings,
        )
        return ChatClient(config)

    def _verifier(self, chat: ChatClient | None) -> Verifier | None:
        """The VLM that checks candidate pictures: the LLM itself when it accepts images,
        or the one verifier.base_url / verifier.model name. Off without either."""
        enabled = declare(
            self,
            'verifier.enabled',
            True,
            'Check candidate pictures with a VLM (Binary Tracking, lock-on); needs '
            'verifier.model or an LLM that accepts images.',
        )
        base_url = declare(
            self,
            'verifier.base_url',
            '',
            'Server of the verifier VLM; empty: the LLM server (none without an LLM).',
        )
        model = declare(
            self, 'verifier.model', '', 'Verifier VLM; empty: the LLM, if it accepts images.'
        )
        key_env = declare(
            self,
            'verifier.api_key_env',
            '',
            'Environment variable holding the verifier API key; empty: llm.api_key_env.',
        )
        max_images = declare(
            self, 'verifier.max_images', 12, 'Pictures per verifier call.', low=1, high=64
        )
        if base_url:
            _check_url('verifier.base_url', base_url)
        if not enabled:
            return None
        base_url = base_url or (chat.config.base_url if chat else '')
        if not base_url:
            return None
        if not model and chat is not None and chat.config.accepts_images:
            model = chat.config.model
        if not model:
            self.get_logger().warning(
                'verifier off: no verifier.model, and the LLM does not accept images'
            )
            return None
        llm = LLMConfig(
            base_url=base_url,
            model=model,
            api_key=_api_key(key_env or self._llm_key_env),
            accepts_images=True,
            **self._llm_settings,
        )
        same = chat is not None and (llm.base_url, llm.model, llm.api_key) == (
            chat.config.base_url,
            chat.config.model,
            chat.config.api_key,
        )
        return Verifier(chat if same else ChatClient(llm), VerifierConfig(llm, max_images))

    def _agent_config(self) -> AgentConfig:
        bintrack = BinTrackParams(
            alpha=declare(
                self,
                'bintrack.alpha',
                0.5,
                'Weight of the mean hit score of a half (evid = alpha mean + beta max).',
                low=0.0,
                high=10.0,
            ),
            beta=declare(
                self,
                'bintrack.beta',
                0.5,
                'Weight of the best hit score of a half.',
                low=0.0,
                high=10.0,
            ),
            k_leaf=declare(
                self,
                'bintrack.k_leaf',
                16,
                'Halving stops at this many segments.',
                low=1,
                high=100_000,
            ),
            top_k=declare(
                self, 'bintrack.top_k', 40, 'Hits per interval search.', low=1, high=1000
            ),
            verifier_pool=declare(
                self,
                'bintrack.verifier_pool',
                12,
                'Candidates shown to the verifier in its one call.',
                low=1,
                high=64,
            ),
        )
        return AgentConfig(
            max_steps=declare(
                self, 'agent.max_steps', 3, 'Searches the model may make.', low=1, high=50
            ),
            top_k=declare(self, 'agent.top_k', 5, 'Hits per search.', low=1, high=100),
            level=declare(
                self,
                'agent.level',
                FRAME,
                'Memory level searched: frame (keyframes) or segment (1.5 s windows).',
                choices=LEVELS,
            ),
            deadline_s=declare(
                self,
                'agent.deadline_s',
                60.0,
                'Longest time for one question; then the fallback answers.',
                low=1.0,
                high=3600.0,
            ),
            max_images_per_step=declare(
                self,
                'agent.max_images_per_step',
                5,
                'Pictures of found memories shown to a model that accepts images, per step.',
                low=0,
                high=20,
            ),
            search_between=declare(
                self,
                'agent.search_between',
                True,
                'Offer the model search_between (Binary Tracking between route anchors).',
            ),
            bintrack=bintrack,
        )

    def _trace_writer(self) -> TraceWriter | None:
        directory = declare(
            self,
            'traces.dir',
            '~/.waymark/traces',
            'Directory of the JSON trace of every question; empty: no traces.',
        )
        max_files = declare(
            self, 'traces.max_files', 1000, 'Newest traces kept.', low=1, high=1_000_000
        )
        return TraceWriter(Path(directory).expanduser(), max_files) if directory else None

    # -- questions -----------------------------------------------------------------------

    def _on_query(self, request: Query.Request, response: Query.Response) -> Query.Response:
        success, message, answer = self._answer(request)
        response.success, response.message, response.answer = success, message, answer
        return response

    def _on_ask_goal(self, goal: Ask.Goal) -> GoalResponse:
        if not goal.question.strip():
            self.get_logger().warning('refused an Ask goal: empty question')
            return GoalResponse.REJECT
        return GoalResponse.ACCEPT

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

        success, message, answer = self._answer(
            goal_handle.request, on_step, lambda: goal_handle.is_cancel_requested
        )
        result = Ask.Result(success=success, message=message, answer=answer)
        if goal_handle.is_cancel_requested and not success:
            goal_handle.canceled()
        elif success:
            goal_handle.succeed()
        else:
            goal_handle.abort()
        return result

    def _answer(
        self,
        request: Query.Request | Ask.Goal,
        on_step: Callable[[StepEvent], None] | None = None,
        cancelled: Callable[[], bool] = lambda: False,
    ) -> tuple[bool, str, Answer]:
        """(success, message, answer) for a Query request or an Ask goal; never raises, so
        that no caller is left without a response."""
        question = ' '.join(request.question.split())
        if not question:
            return False, 'empty question', Answer()
        photo = None
        if request.image.data:
            try:
                photo = decode_image(bytes(request.image.data))
            except ValueError as error:
                return False, f'the photo cannot be used: {error}', Answer()
        if not self._slots.acquire(blocking=False):
            return (
                False,
                f'busy: {self._max_concurrent} questions are being answered; ask again later',
                Answer(),
            )
        try:
            # Up to the whole memory timeout: a node just started may not have discovered
            # memory_node yet, and asking the model first would be wasted if it is away.
            if not self._memory.ready(self._memory.timeout_s):
                return False, 'memory_node is not running (no search_memory service)', Answer()
            return self._run_agent(question, photo, request, on_step, cancelled)
        except Exception as error:  # a bug must cost one answer, not the node
            self.get_logger().error(
                f'{question!r}: {type(error).__name__}: {error}\n{traceback.format_exc()}'
            )
            return False, f'internal error: {type(error).__name__}: {error}', Answer()
        finally:
            self._slots.release()

    def _run_agent(
        self,
        question: str,
        photo: np.ndarray | None,
        request: Query.Request | Ask.Goal,
        on_step: Callable[[StepEvent], None] | None,
        cancelled: Callable[[], bool],
    ) -> tuple[bool, str, Answer]:
        asked = AgentQuestion(
            question=question,
            now_ns=self.get_clock().now().nanoseconds,
            sessions=tuple(request.sessions),
            image=photo,
            robot_pose=self._robot_pose,
        )
        result = self._agent.ask(asked, on_step, cancelled)
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
        return success, message, answer

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


def _check_url(name: str, url: str) -> None:
    if not url.startswith(('http://', 'https://')):
        raise ValueError(f'{name}={url!r} must be an http:// or https:// URL')


def _api_key(variable: str) -> str:
    """The key in environment variable `variable`; servers without keys (vLLM's default)
    accept any, so a missing one is sent as 'EMPTY'."""
    key = os.environ.get(variable, '') if variable else ''
    return key or 'EMPTY'


def main(args=None) -> None:
    run_node(ReasonerNode, 'reasoner_node', args, threads=EXECUTOR_THREADS)


if __name__ == '__main__':
    main()
