# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""In-process stand-ins for the stack's services and actions, for client tests.

Every answer is a position goal at ANSWER_GOAL; an Ask or Query that navigates publishes
its drive's outcome record on navigation/outcome as reasoner_node does; GoTo reaches its
target (or, with `hold`, drives until canceled). `delay_s` makes every answer late.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Collection

import rclpy
from rclpy.action import ActionServer, CancelResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from std_msgs.msg import String

from waymark.geometry import Pose
from waymark_interfaces.action import Ask, GoTo
from waymark_interfaces.msg import Answer, SessionInfo
from waymark_interfaces.srv import DeleteSession, ListSessions, Query
from waymark_ros.ros import qos
from waymark_ros.ros.conversions import pose_to_msg

ANSWER_GOAL = (2.0, 1.0, 0.5)  # x, y, yaw
SESSION = 'run-1'
SESSION_FRAMES = 4
ALL = ('query', 'ask', 'go_to', 'list_sessions', 'delete_session')


class FakeStack:
    """The servers named in `serve`, under `namespace`, on a node spun in a thread."""

    def __init__(self, namespace: str, serve: Collection[str] = ALL, delay_s: float = 0.0):
        self.delay_s = delay_s
        self.hold = False  # GoTo drives until canceled
        self.cancelled = threading.Event()  # an Ask or GoTo saw its cancel
        self.questions: list[str] = []
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node('fake_stack', namespace=namespace, context=self.context)
        group = ReentrantCallbackGroup()
        self._outcomes = self.node.create_publisher(String, 'navigation/outcome', qos.latched(10))
        services = {
            'query': (Query, self._on_query),
            'list_sessions': (ListSessions, self._on_list),
            'delete_session': (DeleteSession, self._on_delete),
        }
        for name in set(serve) & set(services):
            srv_type, callback = services[name]
            self.node.create_service(srv_type, name, callback, callback_group=group)
        actions = {'ask': (Ask, self._on_ask), 'go_to': (GoTo, self._on_go_to)}
        self._servers = [
            ActionServer(
                self.node,
                actions[name][0],
                name,
                execute_callback=actions[name][1],
                cancel_callback=lambda _request: CancelResponse.ACCEPT,
                callback_group=group,
            )
            for name in set(serve) & set(actions)
        ]
        self.executor = MultiThreadedExecutor(num_threads=8, context=self.context)
        self.executor.add_node(self.node)
        self._thread = threading.Thread(target=self.executor.spin, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.executor.shutdown()
        for server in self._servers:
            server.destroy()
        self.node.destroy_node()
        self.context.try_shutdown()
        self._thread.join(timeout=5.0)

    # -- reasoner ------------------------------------------------------------------------

    def _answer(self, question: str, navigate: bool) -> tuple[Answer, str]:
        self.questions.append(question)
        x, y, yaw = ANSWER_GOAL
        answer = Answer(kind=Answer.KIND_POSITION, text=f'seen near ({x}, {y})', has_goal=True)
        answer.goal.header.frame_id = 'map'
        answer.goal.pose = pose_to_msg(Pose.from_xyz_yaw(x, y, 0.0, yaw))
        answer.trace_id = uuid.uuid4().hex
        message = 'embedder-only fallback (no LLM)'
        if navigate:
            record = {
                'question': question,
                'trace_id': answer.trace_id,
                'outcome': 'reached',
                'message': 'reached the goal',
                'seconds': 0.5,
                'final': [x, y, yaw],
            }
            self._outcomes.publish(String(data=json.dumps(record)))
            message += '; goal sent to the navigator'
        return answer, message

    def _on_query(self, request: Query.Request, response: Query.Response) -> Query.Response:
        time.sleep(self.delay_s)
        response.answer, response.message = self._answer(request.question, request.navigate)
        response.success, response.status = True, Query.Response.STATUS_ANSWERED
        return response

    def _on_ask(self, handle) -> Ask.Result:
        handle.publish_feedback(Ask.Feedback(step=1, tool='search_text', hits=3))
        if self._wait_or_cancel(handle, self.delay_s):
            handle.canceled()
            return Ask.Result(status=Ask.Result.STATUS_CANCELLED, message='cancelled')
        answer, message = self._answer(handle.request.question, handle.request.navigate)
        handle.succeed()
        return Ask.Result(
            success=True, message=message, answer=answer, status=Ask.Result.STATUS_ANSWERED
        )

    # -- navigator -----------------------------------------------------------------------

    def _on_go_to(self, handle) -> GoTo.Result:
        target = handle.request.target
        handle.publish_feedback(GoTo.Feedback(distance_remaining=1.0))
        if self._wait_or_cancel(handle, 3600.0 if self.hold else self.delay_s):
            handle.canceled()
            return GoTo.Result(outcome=GoTo.Result.OUTCOME_CANCELED, message='canceled')
        if target.header.frame_id != 'map':
            handle.abort()
            return GoTo.Result(
                outcome=GoTo.Result.OUTCOME_REFUSED,
                message=f'goal in frame {target.header.frame_id!r}, not map',
            )
        handle.succeed()
        return GoTo.Result(
            outcome=GoTo.Result.OUTCOME_REACHED, message='reached', final_pose=target
        )

    def _wait_or_cancel(self, handle, seconds: float) -> bool:
        """Sleep `seconds`; True when a cancel came first."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if handle.is_cancel_requested:
                self.cancelled.set()
                return True
            time.sleep(0.02)
        return False

    # -- memory --------------------------------------------------------------------------

    def _on_list(self, _request, response: ListSessions.Response) -> ListSessions.Response:
        info = SessionInfo(name=SESSION, frames=SESSION_FRAMES, frames_with_pose=SESSION_FRAMES)
        info.end_stamp.sec = 10
        response.success, response.message, response.sessions = True, '1 sessions', [info]
        return response

    def _on_delete(self, request, response: DeleteSession.Response) -> DeleteSession.Response:
        if request.confirm != request.session:
            response.success, response.message = False, 'not deleted: confirm differs'
            return response
        frames = SESSION_FRAMES if request.session == SESSION else 0
        response.success, response.frames_deleted = True, frames
        response.message = f'deleted {frames} frames and 0 segments of {request.session}'
        return response
