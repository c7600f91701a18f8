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

A position answer carries two places: the target (where the thing itself is, with its
1-sigma uncertainty and how it was found) and the goal (a pose facing it to drive to).
Both are in the map frame; a target from another session or map epoch than its goal is
not sent, and the response's message says so. With `free_space.map_topic` the node keeps
the latest occupancy grid, inflated by `free_space.robot_radius_m`, as `free_space`, so
that goals can be placed on free cells (free_space.py); without it goals stay at the
viewpoint. Markers of the answer (target, goal, evidence) go on `answer/markers`.

A goal is sent to navigator_node (GoTo on `navigation.action`) only when the request asks
to navigate and the answer has one; the answer does not wait for the robot to get there,
and how the drive ended is published on `navigation/outcome` (see ros/navigation_client.py).
Its map epoch is given in the response message and in the trace; whether a pose of that
epoch can be reached is the navigator's call, and nothing goes to a planner around it.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable

from rclpy.action import ActionServer, CancelResponse
from rclpy.action.server import ServerGoalHandle
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from visualization_msgs.msg import MarkerArray

from waymark.agent.admission import ADMITTED, BUSY, CANCELLED, Admission
from waymark.agent.agent import Agent, AgentAnswer, AgentQuestion, StepEvent
from waymark.agent.exclusions import Exclusions
from waymark.agent.llm import ChatClient
from waymark.agent.verifier import Verifier
from waymark.lessons.cards import MAX_TASK_CHARS
from waymark.lessons.prompt import lesson_task
from waymark.memory.storage.image_store import ImageStoreReader
from waymark.parameters.reasoner import ReasonerParameters
from waymark_interfaces.action import Ask
from waymark_interfaces.msg import Answer
from waymark_interfaces.srv import Feedback, Query, ReflectOnTask
from waymark_ros.nodes.reasoner.answer_markers import answer_markers
from waymark_ros.nodes.reasoner.answers import (
    Reply,
    answer_message,
    answer_status,
    answer_to_msg,
    step_feedback,
)
from waymark_ros.nodes.reasoner.feedback import FeedbackDesk
from waymark_ros.nodes.reasoner.free_space import FreeSpace
from waymark_ros.nodes.reasoner.lesson_client import LessonClient
from waymark_ros.nodes.reasoner.reflector import reflector_for
from waymark_ros.nodes.reasoner.robot_pose import RobotPose
from waymark_ros.ros import qos
from waymark_ros.ros.exclusion_msgs import exclusions_from_goal
from waymark_ros.ros.input_monitor import InputMonitor
from waymark_ros.ros.lesson_calibration import LessonCalibrator
from waymark_ros.ros.memory_client import MemoryClient, memory_deadline
from waymark_ros.ros.navigation_client import NavigationClient
from waymark_ros.ros.params import declare_settings
from waymark_ros.ros.spin import run_node

# The executor has a thread for each running and each waiting question and
# EXECUTOR_SPARE_THREADS more, for memory's responses, refusals and cancel and result
# requests, which must never wait behind one.
EXECUTOR_SPARE_THREADS = 3
# The status of a question that was not admitted; any other outcome is a timeout.
REFUSED = {BUSY: Query.Response.STATUS_BUSY, CANCELLED: Query.Response.STATUS_CANCELLED}


class ReasonerNode(Node):
    def __init__(self, **kwargs) -> None:
        """`kwargs` go to rclpy's Node (a context, parameter overrides)."""
        super().__init__('reasoner_node', **kwargs)
        params = declare_settings(self, ReasonerParameters, on_change=self._on_parameters)
        self._params = params
        self._map_frame = params.map_frame
        self._limits = params.limits.input_limits()
        llm = params.llm_config()
        chat = ChatClient(llm) if llm else None
        checker = params.verifier_config(note=self.get_logger().warning)
        verifier = Verifier.sharing(checker, chat) if checker else None
        config = params.agent_config()
        traces = params.traces.writer()

        self._memory = MemoryClient(self, params.memory_timeout_s, robots=params.memory.robot_ids)
        images = ImageStoreReader(params.memory.data_dir).image_of
        free = params.free_space
        self.free_space = (
            FreeSpace(
                self,
                free.map_topic,
                params.map_frame,
                free.robot_radius_m,
                free.map_transient_local,
            )
            if free.map_topic
            else None
        )
        free_space = self.free_space.is_free if self.free_space is not None else None
        self._lessons = (
            LessonClient(self, params.lessons.timeout_s) if params.lessons.enabled else None
        )
        self._agent = Agent(
            chat,
            self._memory,
            images,
            config,
            verifier,
            traces,
            free_space=free_space,
            lessons=self._lessons,
        )
        max_concurrent, queue_length = params.max_concurrent_questions, params.question_queue_length
        self._admission = Admission(max_concurrent, queue_length)
        self.executor_threads = max_concurrent + queue_length + EXECUTOR_SPARE_THREADS

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
        diagnostics = params.diagnostics
        self._monitor = InputMonitor(self, diagnostics.input_timeout_s, diagnostics.repeat_s)
        self._robot_pose: RobotPose | None = None
        if params.robot.enabled:
            self._robot_pose = RobotPose(self, params.robot, params.map_frame, self._monitor)
            self._monitor.start()
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
        lessons = params.lessons
        self._reflector = reflector_for(self, lessons, chat)
        self._feedback = FeedbackDesk(
            self,
            lambda: self._agent.traces,
            LessonCalibrator(self, lessons.calibrate_service, lessons.timeout_s),
            lessons.get_task_service,
            lessons.timeout_s,
            self._reflector,
        )
        outcomes = MutuallyExclusiveCallbackGroup()
        self.create_service(
            Feedback,
            'feedback',
            self._feedback.answer,
            qos_profile=qos.requests(10),
            callback_group=outcomes,
        )
        self.create_service(
            ReflectOnTask,
            lessons.reflect_task_service,
            self._feedback.reflect_on_task,
            qos_profile=qos.requests(10),
            callback_group=outcomes,
        )
        llm_name = f'{llm.model} at {llm.base_url}' if llm else 'none (fallback only)'
        check = checker.llm.model if checker else 'off'
        self.get_logger().info(
            f'answering with LLM {llm_name}; verifier {check}; up to {config.max_steps} '
            f'searches of top {config.top_k} {config.level}s within {config.deadline_s:.0f} s; '
            f'{max_concurrent} at once, {queue_length} waiting; traces '
            f'{traces.directory if traces else "off"}; free space from '
            f'{free.map_topic or "no map"}; lessons '
            f'{"from memory_node" if self._lessons else "off"}; reflection '
            f'{f"queued in {self._reflector.queue.directory}" if self._reflector else "off"}'
        )

    def destroy_node(self) -> None:
        if self._reflector is not None:
            self._reflector.stop()  # a reflection cut short stays queued on disk
        super().destroy_node()

    def _on_parameters(self, params: ReasonerParameters) -> None:
        """Live parameters: for the questions that start from now on."""
        self._limits = params.limits.input_limits()
        self._monitor.use(params.diagnostics.input_timeout_s, params.diagnostics.repeat_s)
        self._agent.config = params.agent_config()
        if self._lessons is not None:
            self._lessons.timeout_s = params.lessons.timeout_s
        self._feedback.timeout_s = params.lessons.timeout_s
        if params.traces != self._params.traces:
            self._agent.traces = params.traces.writer()
        self._params = params

    # -- questions -----------------------------------------------------------------------

    def _on_query(self, request: Query.Request, response: Query.Response) -> Query.Response:
        return self._answer(request).fill(response)

    def _on_ask(self, goal_handle: ServerGoalHandle) -> Ask.Result:
        def on_step(event: StepEvent) -> None:
            goal_handle.publish_feedback(step_feedback(event))

        reply = self._answer(goal_handle.request, on_step, lambda: goal_handle.is_cancel_requested)
        if goal_handle.is_cancel_requested and not reply.success:
            goal_handle.canceled()
        elif reply.success:
            goal_handle.succeed()
        else:
            goal_handle.abort()
        return reply.ask_result()

    def _answer(
        self,
        request: Query.Request | Ask.Goal,
        on_step: Callable[[StepEvent], None] | None = None,
        cancelled: Callable[[], bool] = lambda: False,
    ) -> Reply:
        """The reply to a Query request or an Ask goal, by its deadline; never raises, so
        that no caller is left without a response."""
        deadline_s = self._agent.config.deadline_s
        deadline = time.monotonic() + deadline_s
        try:
            problem = self._limits.problem(
                request.question, request.sessions, bytes(request.image.data)
            )
        except Exception as error:  # a bug must cost one answer, not the node
            return self._failed(request.question[:80], error)
        if not problem and len(request.lesson_task) > MAX_TASK_CHARS:
            problem = f'lesson_task is over {MAX_TASK_CHARS} characters'
        if problem:
            self.get_logger().warning(f'refused a question: {problem}')
            return Reply(Query.Response.STATUS_REFUSED, problem)
        with self._admission.slot(deadline, cancelled) as ticket:
            if ticket.outcome != ADMITTED:
                status = REFUSED.get(ticket.outcome, Query.Response.STATUS_TIMEOUT)
                message = self._admission.refusal(ticket, deadline_s)
                return Reply(status, message, queue_length=ticket.queue_length)
            question = ' '.join(request.question.split())
            try:
                reply = self._admitted(question, request, deadline, on_step, cancelled)
            except Exception as error:  # a bug must cost one answer, not the node
                reply = self._failed(question, error)
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
        try:
            if request.image.data:
                photo = self._limits.decode_photo(bytes(request.image.data))
            # A Query has no exclusions; an Ask from a task may.
            exclusions = (
                exclusions_from_goal(request) if isinstance(request, Ask.Goal) else Exclusions()
            )
        except ValueError as error:
            return Reply(Query.Response.STATUS_REFUSED, str(error))
        with memory_deadline(deadline):
            # Up to the whole memory timeout: a node just started may not have discovered
            # memory_node yet, and asking the model first would be wasted if it is away.
            wait = min(self._memory.timeout_s, deadline - time.monotonic())
            if not self._memory.ready(wait):
                return Reply(
                    Query.Response.STATUS_UNAVAILABLE,
                    'memory_node is not running (no search_memory service)',
                )
            asked = AgentQuestion(
                question=question,
                now_ns=self.get_clock().now().nanoseconds,
                sessions=tuple(request.sessions),
                image=photo,
                robot_pose=self._robot_pose.planar if self._robot_pose else None,
                exclusions=exclusions,
                lesson_task=lesson_task(request.question, request.lesson_task),
            )
            result = self._agent.ask(asked, on_step, cancelled, deadline)
            return self._publish(question, result, request)

    def _publish(
        self, question: str, result: AgentAnswer, request: Query.Request | Ask.Goal
    ) -> Reply:
        """The reply of an agent answer; a usable one is published, with its markers,
        and its goal sent to the navigator when the request asks to navigate."""
        now = self.get_clock().now().nanoseconds
        answer = answer_to_msg(result, self._map_frame, now)
        status = answer_status(result)
        message = answer_message(result, lambda: self._memory_is_empty(list(request.sessions)))
        self.get_logger().info(
            f'{question!r}: {result.kind}{" (fallback)" if result.used_fallback else ""} in '
            f'{result.latency_s:.1f} s, {result.steps} steps, {result.llm_calls} LLM calls; '
            f'trace {result.trace_id}; {message}'
            + (f'; {result.lessons_note}' if result.lessons_note else '')
        )
        if status == Query.Response.STATUS_ANSWERED:
            self._answer_publisher.publish(answer)
            self._marker_publisher.publish(answer_markers(answer, self._map_frame, now))
            if request.navigate and answer.has_goal:
                tag = {'question': question, 'trace_id': result.trace_id}
                evidence = (result.goal.session, result.goal.map_epoch)
                message += '; ' + self._navigation.send(answer.goal, tag, *evidence)
        return Reply(status, message, answer)

    def _failed(self, question: str, error: Exception) -> Reply:
        self.get_logger().error(
            f'{question!r}: {type(error).__name__}: {error}\n{traceback.format_exc()}'
        )
        return Reply(
            Query.Response.STATUS_ERROR, f'internal error: {type(error).__name__}: {error}'
        )

    def _memory_is_empty(self, sessions: list[str]) -> bool:
        try:
            return self._memory.count(sessions or None, self._agent.config.level) == 0
        except (ValueError, RuntimeError):
            return False


def main(args=None) -> None:
    run_node(ReasonerNode, 'reasoner_node', args, threads=lambda node: node.executor_threads)


if __name__ == '__main__':
    main()
