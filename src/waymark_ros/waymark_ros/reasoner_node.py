# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""reasoner_node: answers questions about memory and publishes the goal they imply.

This is the embedder-only answerer (the baseline every agent variant is compared
against): the question is searched as text across memory's views, the best hit with a
valid pose is the answer, and the goal is the pose from which that hit was seen. It
says so in `used_fallback`.
"""

from __future__ import annotations

import threading
import uuid

from geometry_msgs.msg import PoseStamped
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from visualization_msgs.msg import Marker, MarkerArray

from waymark_interfaces.msg import Answer
from waymark_interfaces.srv import Query, SearchMemory
from waymark_ros import qos
from waymark_ros.params import declare
from waymark_ros.spin import run_node


class MemoryUnavailableError(RuntimeError):
    pass


class ReasonerNode(Node):
    def __init__(self) -> None:
        super().__init__('reasoner_node')
        self._top_k = declare(
            self, 'top_k', 5, 'Memory hits fetched per question.', low=1, high=100
        )
        self._timeout = declare(
            self, 'memory_timeout_s', 10.0, 'Longest wait for memory_node.', low=0.1, high=600.0
        )
        self._min_score = declare(
            self,
            'min_score',
            0.0,
            'Hits scoring below this do not count as an answer.',
            low=-1.0,
            high=1.0,
        )
        self._clients_group = MutuallyExclusiveCallbackGroup()
        self._search = self.create_client(
            SearchMemory, 'search_memory', callback_group=self._clients_group
        )
        self._goal_publisher = self.create_publisher(PoseStamped, 'goal_pose', 10)
        self._answer_publisher = self.create_publisher(Answer, 'answer', qos.latched())
        self._marker_publisher = self.create_publisher(MarkerArray, 'answer/markers', qos.latched())
        self.create_service(Query, 'query', self._on_query, callback_group=ReentrantCallbackGroup())

    def _on_query(self, request: Query.Request, response: Query.Response) -> Query.Response:
        question = request.question.strip()
        if not question:
            response.success, response.message = False, 'empty question'
            return response
        try:
            hits, total = self._search_text(question, list(request.sessions))
        except MemoryUnavailableError as error:
            response.success, response.message = False, str(error)
            return response
        answer = Answer(kind=Answer.KIND_NONE, used_fallback=True, trace_id=uuid.uuid4().hex)
        answer.evidence = hits
        best = next((h for h in hits if h.pose_valid and h.score >= self._min_score), None)
        if best is None:
            response.success = False
            if total == 0:
                response.message = 'memory is empty: no keyframes stored for the requested sessions'
            elif not hits:
                response.message = f'none of the {total} memory entries matches the question'
            else:
                response.message = 'no matching memory entry has a valid position'
            response.answer = answer
            return response
        answer.kind = Answer.KIND_POSITION
        answer.goal = best.pose
        answer.has_goal = True
        answer.time = best.start_stamp
        answer.confidence = max(0.0, min(1.0, float(best.score)))
        p = best.pose.pose.position
        seen = f' (read: "{best.text}")' if best.text else ''
        answer.text = f'Seen from x={p.x:.2f}, y={p.y:.2f} in {best.pose.header.frame_id}{seen}.'
        response.success, response.message, response.answer = (
            True,
            'answered from memory search',
            answer,
        )
        self._answer_publisher.publish(answer)
        self._marker_publisher.publish(self._goal_markers(best.pose))
        if request.navigate:
            self._goal_publisher.publish(best.pose)
        return response

    def _search_text(self, text: str, sessions: list[str]):
        if not self._search.wait_for_service(timeout_sec=min(self._timeout, 2.0)):
            raise MemoryUnavailableError('memory_node is not running (no search_memory service)')
        request = SearchMemory.Request(
            mode=SearchMemory.Request.MODE_TEXT, text=text, top_k=self._top_k
        )
        request.sessions = sessions
        done = threading.Event()
        future = self._search.call_async(request)
        future.add_done_callback(lambda _: done.set())
        if not done.wait(self._timeout):
            future.cancel()
            raise MemoryUnavailableError(f'memory_node did not answer within {self._timeout:.1f} s')
        result = future.result()
        if result is None or not result.success:
            raise MemoryUnavailableError(
                f'memory search failed: {result.message if result else "no result"}'
            )
        return list(result.hits), int(result.total_entries)

    def _goal_markers(self, goal: PoseStamped) -> MarkerArray:
        arrow = Marker()
        arrow.header = goal.header
        arrow.ns = 'goal'
        arrow.type = Marker.ARROW
        arrow.pose = goal.pose
        arrow.scale.x, arrow.scale.y, arrow.scale.z = 0.8, 0.12, 0.12
        arrow.color.r, arrow.color.g, arrow.color.a = 1.0, 0.4, 1.0
        return MarkerArray(markers=[arrow])


def main(args=None) -> None:
    run_node(ReasonerNode, 'reasoner_node', args, threads=4)


if __name__ == '__main__':
    main()
