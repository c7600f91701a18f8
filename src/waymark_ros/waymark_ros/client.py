# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The Python API of a running waymark stack: ask, query, drive, cancel, sessions, tasks.

    waymark = Waymark(node)
    waymark.wait_until_ready()
    result = waymark.ask('Where is the fire extinguisher?', go=True)
    if result.ok and result.drive is not None and result.drive.reached:
        print(result.text, 'reached in', result.drive.seconds, 's')

Every call waits at most its `timeout_s` and returns a result dataclass with a `status`
and a `message`: a server that is not there or did not reply within the timeout is a
status ('server_missing', 'no_reply'), never an exception or None.

Spinning: leave the node out of any executor and each call spins it with a private
executor while it waits (callbacks of the node's other entities run then too); or spin it
yourself in another thread (e.g. a MultiThreadedExecutor in a daemon thread), built after
the Waymark, and calls only wait for its callbacks. Do not call from one of the node's own
callbacks under a single-threaded executor: nothing would take the reply, and the call
ends 'no_reply' at its timeout. Calls may come from several threads at once.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

from rclpy.action import ActionClient
from rclpy.action.client import ClientGoalHandle
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.task import Future
from sensor_msgs.msg import CompressedImage
from std_msgs.msg import String
from unique_identifier_msgs.msg import UUID

from waymark.geometry import quaternion_from_yaw
from waymark_interfaces.action import Ask, GoTo, RunTask
from waymark_interfaces.msg import Answer
from waymark_interfaces.srv import (
    DeleteSession,
    Feedback,
    GetTask,
    ListSessions,
    ListTasks,
    Mark,
    Query,
)
from waymark_ros.client_results import (
    FAILED,
    OK,
    FeedbackResult,
    MarkResult,
    TaskRecordResult,
    TaskResult,
    TasksResult,
    xy_yaw,
)
from waymark_ros.ros import qos
from waymark_ros.ros.conversions import stamp_to_ns
from waymark_ros.ros.navigation_client import OUTCOMES

# Statuses of this client, beside the servers' own.
SERVER_MISSING = 'server_missing'  # the server did not appear within server_wait_s
NO_REPLY = 'no_reply'  # no reply within the call's timeout_s (an accepted goal is canceled)
REJECTED = 'rejected'  # the action server did not accept the goal
REFUSED = 'refused'  # run_task: the goal was refused (by task_node, or not sent)
# The reasoner's STATUS_* of Query and Ask, by name.
ANSWER_STATUSES = {
    Query.Response.STATUS_ANSWERED: 'answered',
    Query.Response.STATUS_NO_ANSWER: 'no_answer',
    Query.Response.STATUS_REFUSED: 'refused',
    Query.Response.STATUS_BUSY: 'busy',
    Query.Response.STATUS_TIMEOUT: 'timeout',
    Query.Response.STATUS_UNAVAILABLE: 'unavailable',
    Query.Response.STATUS_CANCELLED: 'cancelled',
    Query.Response.STATUS_ERROR: 'error',
}
# Which endpoints wait_until_ready looks for, by the node serving them.
SERVERS = {
    'memory': ('list_sessions', 'delete_session'),
    'reasoner': ('query', 'ask'),
    'navigator': ('go_to',),
    'task': ('run_task', 'mark', 'list_tasks', 'get_task'),
}
# What wait_until_ready waits for unless told: the stack a question and a drive need.
DEFAULT_SERVERS = ('memory', 'reasoner', 'navigator')
# A server can be discovered a moment before it has matched the client back; a request
# sent then gets no reply. A server counts as ready once it has been seen this long.
MATCH_SETTLE_S = 1.0
_POLL_S = 0.05
_DRIVES_KEPT = 256  # drive outcomes remembered by trace id


@dataclass(frozen=True)
class Drive:
    """How a drive ended. `outcome`: the navigator's reached, refused, failed, canceled or
    stale_epoch; not_sent (the reasoner found no navigator); or this client's
    server_missing, rejected or no_reply."""

    outcome: str
    message: str
    seconds: float | None = None  # from the goal being sent to its end
    final: tuple[float, float, float] | None = None  # x, y, yaw of the robot at the end

    @property
    def reached(self) -> bool:
        return self.outcome == 'reached'


@dataclass(frozen=True)
class Target:
    """Where the thing asked about is, in the map frame: `sigma_m` is the 1-sigma
    horizontal uncertainty and `method` how it was found (depth, triangulated, bearing,
    or viewpoint: only where the camera stood)."""

    x: float
    y: float
    z: float
    sigma_m: float
    method: str


@dataclass(frozen=True)
class AskResult:
    """An answer from the reasoner. `status`: answered, no_answer, refused, busy, timeout
    (the reasoner's queue deadline), unavailable, cancelled, error, or this client's
    server_missing, rejected or no_reply. `drive` is set when the answer's goal was sent
    to the navigator (ask with go=True)."""

    status: str
    message: str
    answer: Answer = field(default_factory=Answer)
    queue_length: int = 0
    steps: tuple[Ask.Feedback, ...] = ()  # the agent's steps (ask only)
    drive: Drive | None = None

    @property
    def ok(self) -> bool:
        return self.status == 'answered'

    @property
    def text(self) -> str:
        return self.answer.text

    @property
    def trace_id(self) -> str:
        return self.answer.trace_id

    @property
    def goal(self) -> tuple[float, float, float] | None:
        """x, y, yaw of the answer's goal in the map frame, if it has one."""
        return xy_yaw(self.answer.goal) if self.answer.has_goal else None

    @property
    def target(self) -> Target | None:
        """Where the answer places the thing itself, if it does (the goal is where to
        stand to see it)."""
        if not self.answer.has_target:
            return None
        p = self.answer.target_position.point
        return Target(p.x, p.y, p.z, self.answer.target_sigma_m, self.answer.target_method)


@dataclass(frozen=True)
class Session:
    """What memory holds for one recording session."""

    name: str
    frames: int
    segments: int
    frames_with_pose: int
    start_ns: int
    end_ns: int
    last_map_epoch: int


@dataclass(frozen=True)
class SessionsResult:
    """`status`: ok, failed (memory's message says why), server_missing or no_reply."""

    status: str
    message: str
    sessions: tuple[Session, ...] = ()

    @property
    def ok(self) -> bool:
        return self.status == OK


@dataclass(frozen=True)
class DeleteResult:
    """`status`: ok (an unknown session is ok with nothing deleted), failed (deletion off,
    not confirmed, bad name), server_missing or no_reply."""

    status: str
    message: str
    frames_deleted: int = 0
    segments_deleted: int = 0

    @property
    def ok(self) -> bool:
        return self.status == OK


@dataclass(frozen=True)
class ReadyResult:
    """Whether every server asked for was found; `missing` names those that were not."""

    ready: bool
    message: str
    missing: tuple[str, ...] = ()
    waited_s: float = 0.0


@dataclass
class _Goal:
    """An action goal of this client in flight, so that cancel() can reach it."""

    client: ActionClient
    goal_id: UUID
    handle: ClientGoalHandle | None = None
    cancelled: bool = False

    def cancel(self) -> None:
        handle = self.handle or ClientGoalHandle(self.client, self.goal_id, None)
        handle.cancel_goal_async()


class Waymark:
    """Clients of the stack's services and actions on `node`, with blocking calls."""

    def __init__(self, node: Node, server_wait_s: float = 5.0) -> None:
        """`server_wait_s`: how long a call waits for its server to appear (within its
        timeout) before it ends server_missing."""
        self._node = node
        self._server_wait_s = server_wait_s
        group = ReentrantCallbackGroup()
        self._query = node.create_client(
            Query, 'query', qos_profile=qos.responses(), callback_group=group
        )
        self._list = node.create_client(ListSessions, 'list_sessions', callback_group=group)
        self._delete = node.create_client(DeleteSession, 'delete_session', callback_group=group)
        self._ask = ActionClient(node, Ask, 'ask', callback_group=group)
        self._go_to = ActionClient(node, GoTo, 'go_to', callback_group=group)
        self._run_task = ActionClient(node, RunTask, 'run_task', callback_group=group)
        self._mark = node.create_client(Mark, 'mark', callback_group=group)
        self._list_tasks = node.create_client(ListTasks, 'list_tasks', callback_group=group)
        self._get_task = node.create_client(GetTask, 'get_task', callback_group=group)
        self._feedback = node.create_client(Feedback, 'feedback', callback_group=group)
        self._outcomes = node.create_subscription(
            String, 'navigation/outcome', self._on_outcome, qos.latched(10), callback_group=group
        )
        self._endpoints = {
            'query': (self._query, self._query.service_is_ready),
            'list_sessions': (self._list, self._list.service_is_ready),
            'delete_session': (self._delete, self._delete.service_is_ready),
            'ask': (self._ask, self._ask.server_is_ready),
            'go_to': (self._go_to, self._go_to.server_is_ready),
            'run_task': (self._run_task, self._run_task.server_is_ready),
        }
        for name, client in (
            ('mark', self._mark),
            ('list_tasks', self._list_tasks),
            ('get_task', self._get_task),
            ('feedback', self._feedback),
        ):
            self._endpoints[name] = (client, client.service_is_ready)
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._seen: dict[str, float] = {}  # endpoint -> when it was first seen ready
        self._drives: OrderedDict[str, Drive] = OrderedDict()  # trace id -> outcome
        self._in_flight: dict[int, _Goal] = {}
        self._drive_waits = 0  # asks waiting for the drive to their answer
        self._executor = SingleThreadedExecutor(context=node.context)
        self._spinning = threading.Lock()

    # -- the API -------------------------------------------------------------------------

    def wait_until_ready(
        self, timeout_s: float = 60.0, servers: Collection[str] = DEFAULT_SERVERS
    ) -> ReadyResult:
        """Until the services and actions of `servers` (memory, reasoner, navigator, task)
        are all up, or `timeout_s` has passed."""
        unknown = set(servers) - set(SERVERS)
        if unknown:
            raise ValueError(f'unknown servers {sorted(unknown)}; known: {list(SERVERS)}')
        started = time.monotonic()
        missing: tuple[str, ...] = ()

        def up() -> bool:
            nonlocal missing
            ready = {name: self._ready(name) for s in servers for name in SERVERS[s]}
            missing = tuple(s for s in servers if not all(ready[n] for n in SERVERS[s]))
            return not missing

        self._wait(up, started + timeout_s)
        waited = time.monotonic() - started
        if missing:
            message = f'not up after {waited:.0f} s: {", ".join(missing)}'
        else:
            message = f'{", ".join(servers)} up after {waited:.1f} s'
        return ReadyResult(not missing, message, missing, waited)

    def query(
        self,
        question: str,
        sessions: Collection[str] = (),
        image: CompressedImage | None = None,
        timeout_s: float = 90.0,
    ) -> AskResult:
        """The answer to `question` from the Query service, without driving."""
        deadline = time.monotonic() + timeout_s
        request = Query.Request(
            question=question, sessions=list(sessions), image=image or CompressedImage()
        )
        response, problem = self._call('query', request, deadline)
        if response is None:
            return AskResult(*problem)
        return AskResult(
            _answer_status(response.status),
            response.message,
            response.answer,
            response.queue_length,
        )

    def ask(
        self,
        question: str,
        go: bool = False,
        sessions: Collection[str] = (),
        image: CompressedImage | None = None,
        timeout_s: float = 90.0,
        drive_timeout_s: float = 400.0,
        on_step: Callable[[Ask.Feedback], None] | None = None,
    ) -> AskResult:
        """The answer to `question` from the Ask action, with the agent's steps (also
        given to `on_step` as they come). With `go`, the reasoner sends the answer's goal
        to the navigator, and the call also waits up to `drive_timeout_s` for how that
        drive ended (keep it above the reasoner's navigation.result_wait_s)."""
        deadline = time.monotonic() + timeout_s
        steps: list[Ask.Feedback] = []

        def on_feedback(message) -> None:
            steps.append(message.feedback)
            if on_step is not None:
                on_step(message.feedback)

        goal = Ask.Goal(
            question=question,
            sessions=list(sessions),
            navigate=go,
            image=image or CompressedImage(),
        )
        done, problem = self._run_goal('ask', goal, deadline, on_feedback)
        if done is None:
            return AskResult(*problem, steps=tuple(steps))
        result = done.result
        drive = None
        if go and result.success and result.answer.has_goal:
            drive = self._drive_of(result.answer.trace_id, drive_timeout_s)
        return AskResult(
            _answer_status(result.status),
            result.message,
            result.answer,
            result.queue_length,
            tuple(steps),
            drive,
        )

    def go_to(
        self,
        x: float,
        y: float,
        yaw: float = 0.0,
        frame_id: str = 'map',
        session: str = '',
        map_epoch: int = 0,
        timeout_s: float = 360.0,
        on_feedback: Callable[[GoTo.Feedback], None] | None = None,
    ) -> Drive:
        """Drive to (x, y, yaw) in `frame_id` with the GoTo action. A remembered pose names
        the `session` and `map_epoch` of its memory, so that the navigator can refuse it as
        stale. A drive still running at `timeout_s` is canceled and ends no_reply."""
        sent = time.monotonic()
        deadline = sent + timeout_s
        goal = GoTo.Goal(evidence_session=session, evidence_map_epoch=map_epoch)
        goal.target.header.frame_id = frame_id
        goal.target.header.stamp = self._node.get_clock().now().to_msg()
        goal.target.pose.position.x, goal.target.pose.position.y = float(x), float(y)
        o = goal.target.pose.orientation
        o.x, o.y, o.z, o.w = quaternion_from_yaw(yaw)
        feedback = None if on_feedback is None else lambda message: on_feedback(message.feedback)
        done, problem = self._run_goal('go_to', goal, deadline, feedback)
        if done is None:
            return Drive(*problem)
        result = done.result
        outcome = OUTCOMES.get(result.outcome, f'unknown ({result.outcome})')
        final = xy_yaw(result.final_pose) if result.final_pose.header.frame_id else None
        return Drive(outcome, result.message, round(time.monotonic() - sent, 2), final)

    def cancel(self) -> bool:
        """Cancel this client's Ask, GoTo and RunTask goals in flight, and the drives to
        answers that its asks wait for (the navigator's current goal). Returns at once; the
        calls cancelled end with status cancelled / outcome canceled / termination
        canceled. False: nothing to cancel."""
        with self._lock:
            goals = list(self._in_flight.values())
            for goal in goals:
                goal.cancelled = True
            drives = self._drive_waits > 0
        for goal in goals:
            goal.cancel()
        if drives:  # sent by the reasoner, so cancelled as all of the navigator's goals
            _Goal(self._go_to, UUID()).cancel()
        return bool(goals) or drives

    def sessions(self, timeout_s: float = 10.0) -> SessionsResult:
        """The recording sessions in memory."""
        response, problem = self._call(
            'list_sessions', ListSessions.Request(), time.monotonic() + timeout_s
        )
        if response is None:
            return SessionsResult(*problem)
        sessions = tuple(
            Session(
                s.name,
                s.frames,
                s.segments,
                s.frames_with_pose,
                stamp_to_ns(s.start_stamp),
                stamp_to_ns(s.end_stamp),
                s.last_map_epoch,
            )
            for s in response.sessions
        )
        return SessionsResult(OK if response.success else FAILED, response.message, sessions)

    def delete_session(
        self, name: str, confirm: bool = False, timeout_s: float = 30.0
    ) -> DeleteResult:
        """Delete session `name` from memory for good; nothing happens without `confirm`."""
        if not confirm:
            return DeleteResult(FAILED, f'not deleted: pass confirm=True to delete {name!r}')
        request = DeleteSession.Request(session=name, confirm=name)
        response, problem = self._call('delete_session', request, time.monotonic() + timeout_s)
        if response is None:
            return DeleteResult(*problem)
        return DeleteResult(
            OK if response.success else FAILED,
            response.message,
            response.frames_deleted,
            response.segments_deleted,
        )

    def run_task(
        self,
        text: str = '',
        photo: CompressedImage | None = None,
        place: str = '',
        time_budget_s: float = 0.0,
        distance_budget_m: float = 0.0,
        agent_step_budget: int = 0,
        timeout_s: float = 900.0,
        on_progress: Callable[[RunTask.Feedback], None] | None = None,
    ) -> TaskResult:
        """Run one task with task_node's RunTask action and wait for how it ended. The
        goal is a `place` marked before, a `photo` of the target (`text` its optional
        caption) or a `text` description. The budgets override task_node's defaults (0
        keeps them). Progress (phase, attempt, budget left) also goes to `on_progress` as
        it comes. A task still running at `timeout_s` (keep it above the time budget) is
        canceled and ends no_reply; cancel() stops it as a stopped, canceled task."""
        if place and (text or photo is not None):
            return TaskResult(REFUSED, 'not sent: a place goal takes no text or photo')
        if not (place or text or photo is not None):
            return TaskResult(REFUSED, 'not sent: give a text, a photo or a place')
        goal = RunTask.Goal(
            text=text,
            place_name=place,
            time_budget_s=float(time_budget_s),
            distance_budget_m=float(distance_budget_m),
            agent_step_budget=int(agent_step_budget),
        )
        if place:
            goal.modality = RunTask.Goal.MODALITY_PLACE
        elif photo is not None:
            goal.modality, goal.photo = RunTask.Goal.MODALITY_PHOTO, photo
        else:
            goal.modality = RunTask.Goal.MODALITY_TEXT
        progress: list[RunTask.Feedback] = []

        def on_feedback(message) -> None:
            progress.append(message.feedback)
            if on_progress is not None:
                on_progress(message.feedback)

        done, problem = self._run_goal('run_task', goal, time.monotonic() + timeout_s, on_feedback)
        if done is None:
            return TaskResult(*problem, progress=tuple(progress))
        return TaskResult.of(done.result, tuple(progress))

    def mark(self, name: str, timeout_s: float = 30.0) -> MarkResult:
        """Name the place where the robot stands (task_node's `mark`); marking a name
        again replaces that place."""
        response, problem = self._call(
            'mark', Mark.Request(name=name), time.monotonic() + timeout_s
        )
        return MarkResult(*problem) if response is None else MarkResult.of(response)

    def tasks(self, limit: int = 0, timeout_s: float = 10.0) -> TasksResult:
        """The newest tasks of the ledger, newest first (`limit` 0: task_node's default;
        a larger one is capped by it)."""
        response, problem = self._call(
            'list_tasks', ListTasks.Request(limit=int(limit)), time.monotonic() + timeout_s
        )
        return TasksResult(*problem) if response is None else TasksResult.of(response)

    def task(self, task_id: str, timeout_s: float = 10.0) -> TaskRecordResult:
        """One task's record from the ledger (task_node's `get_task`)."""
        response, problem = self._call(
            'get_task', GetTask.Request(task_id=task_id), time.monotonic() + timeout_s
        )
        return TaskRecordResult(*problem) if response is None else TaskRecordResult.of(response)

    def feedback(
        self,
        correct: bool,
        query_id: str = '',
        task_id: str = '',
        true_position: tuple[float, float, float] | None = None,
        frame_id: str = 'map',
        timeout_s: float = 30.0,
    ) -> FeedbackResult:
        """A person's word on an answer (`query_id`: its trace_id) or a task (`task_id`),
        sent to reasoner_node's `feedback`: it counts for the lessons they were given.
        `true_position`: where the thing really is (x, y, z in `frame_id`), when known.
        Exactly one id is sent; otherwise nothing is and the result is failed."""
        if bool(query_id) == bool(task_id):
            return FeedbackResult(FAILED, 'not sent: name exactly one of query_id and task_id')
        request = Feedback.Request(query_id=query_id, task_id=task_id, correct=bool(correct))
        if true_position is not None:
            request.has_true_position = True
            request.true_position.header.frame_id = frame_id
            point = request.true_position.point
            point.x, point.y, point.z = (float(v) for v in true_position)
        response, problem = self._call('feedback', request, time.monotonic() + timeout_s)
        if response is None:
            return FeedbackResult(*problem)
        return FeedbackResult(
            OK if response.success else FAILED,
            response.message,
            response.calibrated,
            response.reflection_queued,
        )

    def close(self) -> None:
        """Destroy the clients made on the node (the node itself stays)."""
        self._ask.destroy()
        self._go_to.destroy()
        self._run_task.destroy()
        for client in (
            self._query,
            self._list,
            self._delete,
            self._mark,
            self._list_tasks,
            self._get_task,
            self._feedback,
        ):
            self._node.destroy_client(client)
        self._node.destroy_subscription(self._outcomes)
        with self._spinning:  # a node left to this executor would never be spun again
            if self._node.executor is self._executor:
                self._node.executor = None
        self._executor.shutdown()

    # -- requests ------------------------------------------------------------------------

    def _call(self, name: str, request, deadline: float):
        """(response, None), or (None, (status, message)) when there is none."""
        client = self._endpoints[name][0]
        if not self._found(name, deadline):
            return None, (SERVER_MISSING, f'no {name} service: is the stack running?')
        future = client.call_async(request)
        if not self._wait_future(future, deadline):
            client.remove_pending_request(future)
            return None, (NO_REPLY, f'{name}: no reply within the timeout')
        return future.result(), None

    def _run_goal(self, name: str, goal, deadline: float, feedback):
        """(the result response, None), or (None, (status, message)). The goal is canceled
        when no result comes by `deadline`."""
        client = self._endpoints[name][0]
        if not self._found(name, deadline):
            return None, (SERVER_MISSING, f'no {name} action server: is the stack running?')
        tracked = _Goal(client, UUID(uuid=list(uuid.uuid4().bytes)))
        key = id(tracked)
        with self._lock:
            self._in_flight[key] = tracked
        try:
            sent = client.send_goal_async(
                goal, feedback_callback=feedback, goal_uuid=tracked.goal_id
            )
            if not self._wait_future(sent, deadline):
                tracked.cancel()  # it may still be accepted: by its id
                return None, (NO_REPLY, f'{name}: the goal was not answered in time; canceled')
            handle = sent.result()
            if not handle.accepted:
                return None, (REJECTED, f'{name}: the goal was rejected')
            with self._lock:
                tracked.handle = handle
                late_cancel = tracked.cancelled
            if late_cancel:  # cancel() came before the acceptance
                tracked.cancel()
            result = handle.get_result_async()
            if not self._wait_future(result, deadline):
                tracked.cancel()
                return None, (NO_REPLY, f'{name}: no result in time; the goal was canceled')
            return result.result(), None
        finally:
            with self._lock:
                del self._in_flight[key]

    def _drive_of(self, trace_id: str, timeout_s: float) -> Drive:
        """How the drive to the answer `trace_id` ended, from navigation/outcome."""
        with self._lock:
            self._drive_waits += 1
        try:
            self._wait(lambda: trace_id in self._drives, time.monotonic() + timeout_s)
        finally:
            with self._lock:
                self._drive_waits -= 1
        with self._lock:
            drive = self._drives.get(trace_id)
        return drive or Drive(NO_REPLY, f'no drive outcome within {timeout_s:g} s')

    def _on_outcome(self, msg: String) -> None:
        try:
            record = json.loads(msg.data)
            final = record.get('final')
            drive = Drive(
                str(record['outcome']),
                str(record.get('message', '')),
                record.get('seconds'),
                tuple(final) if final else None,
            )
            trace_id = str(record['trace_id'])
        except (ValueError, KeyError, TypeError):
            return  # not a record of an answer's drive
        with self._changed:
            self._drives[trace_id] = drive
            while len(self._drives) > _DRIVES_KEPT:
                self._drives.popitem(last=False)
            self._changed.notify_all()

    # -- waiting -------------------------------------------------------------------------

    def _ready(self, name: str) -> bool:
        """The endpoint's server is up and has been for MATCH_SETTLE_S."""
        is_ready = self._endpoints[name][1]
        now = time.monotonic()
        up = is_ready()
        with self._lock:
            if not up:
                self._seen.pop(name, None)
                return False
            return now - self._seen.setdefault(name, now) >= MATCH_SETTLE_S

    def _found(self, name: str, deadline: float) -> bool:
        wait_until = min(deadline, time.monotonic() + self._server_wait_s)
        return self._wait(lambda: self._ready(name), wait_until)

    def _wait_future(self, future: Future, deadline: float) -> bool:
        def wake(_future: Future) -> None:
            with self._changed:
                self._changed.notify_all()

        future.add_done_callback(wake)
        return self._wait(future.done, deadline)

    def _wait(self, done: Callable[[], bool], deadline: float) -> bool:
        """Until `done()` or `deadline` (monotonic s), spinning the node with the private
        executor when no other executor has it; True when done."""
        while not done():
            left = deadline - time.monotonic()
            if left <= 0 or not self._node.context.ok():
                return False
            step = min(left, _POLL_S)
            owner = self._node.executor
            if owner is not None and owner is not self._executor:
                with self._changed:
                    self._changed.wait(step)
            elif self._spinning.acquire(timeout=step):
                try:  # one thread spins; the others wait for it to take their replies
                    if self._node.executor is None:
                        self._executor.add_node(self._node)
                    if not done():
                        self._executor.spin_once(timeout_sec=step)
                finally:
                    self._spinning.release()
        return True


def _answer_status(status: int) -> str:
    return ANSWER_STATUSES.get(status, f'unknown ({status})')
