# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""memory_node: the single owner of the memory database, as a lifecycle node.

- configure: load the models, open the database and the journal, report what memory holds
  and what a previous run left unfinished.
- activate: serve. Keyframes are journaled, acknowledged and ingested on a thread
  (IngestWorker: OCR and embedding take far longer than a DDS callback should), searches
  and the session services answer, status is published.
- deactivate: stop ingest cleanly: what is queued is stored for at most `shutdown_wait_s`,
  the rest stays in the journal and is ingested at the next activation.
- cleanup, shutdown: close the database, so every write is durable.

The lesson bank (lesson_desk.py) opens in the same database at configure, closes with it,
and its services answer while memory is active.

While not active, keyframes are neither acknowledged nor kept: the sender (capture_node's
outbox) keeps every unacknowledged keyframe and sends it again, so none is lost. Services
answer success=false, "memory_node is not active"; the status topics are silent.

With `autostart` (the default) the node configures and activates itself, so a plain start
serves at once; otherwise a lifecycle manager drives it (`memory_node/change_state`): the
launch files start it with autostart false and request configure, then activate.

Each keyframe is acknowledged on `keyframes/ack` once journaled (or refused for good), so
the sender can forget it; a resend of a keyframe still journaled is acknowledged again and
not queued twice. Only this process opens the database: Milvus Lite allows one process per
file, and a single writer keeps each session's entries in order and the indexes exact.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from pathlib import Path

from diagnostic_msgs.msg import DiagnosticArray
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.lifecycle import LifecycleNode, LifecycleState, TransitionCallbackReturn
from std_msgs.msg import String
from visualization_msgs.msg import MarkerArray

from waymark.memory.entries import PLACE, SEGMENT, Hit
from waymark.memory.factory import load_models, open_memory
from waymark.memory.ingest.admission import RefusedError, shown
from waymark.memory.ingest.journal import KeyframeJournal
from waymark.memory.ingest.worker import IngestWorker
from waymark.memory.service import MemoryService
from waymark.parameters.memory import MB, MemoryParameters
from waymark_interfaces.msg import Keyframe as KeyframeMsg
from waymark_interfaces.msg import KeyframeAck
from waymark_interfaces.srv import (
    DeleteSession,
    ListSessions,
    SearchMemory,
    StorePlace,
    ThinMemory,
)
from waymark_ros.nodes.memory.lesson_desk import LessonDesk
from waymark_ros.nodes.memory.memory_markers import hit_markers, memory_markers
from waymark_ros.nodes.memory.memory_requests import (
    SearchLimits,
    answer_delete_session,
    answer_list_sessions,
    answer_search,
    answer_thin_memory,
)
from waymark_ros.nodes.memory.memory_status import (
    diagnostic,
    memory_stats,
    startup_report,
    storage_stats,
)
from waymark_ros.nodes.memory.place_requests import answer_store_place
from waymark_ros.ros import qos
from waymark_ros.ros.memory_msgs import keyframe_from_msg
from waymark_ros.ros.params import declare_settings
from waymark_ros.ros.spin import run_node

SUCCESS, FAILURE = TransitionCallbackReturn.SUCCESS, TransitionCallbackReturn.FAILURE
NOT_ACTIVE = 'memory_node is not active'


class MemoryNode(LifecycleNode):
    def __init__(self) -> None:
        super().__init__('memory_node')
        self.counts: Counter[str] = Counter()
        self._memory: MemoryService | None = None
        self._worker: IngestWorker | None = None
        self._active = False
        self._gate = threading.Lock()  # a keyframe's arrival vs. (de)activation
        self._status_lock = threading.Lock()  # a status tick vs. deactivation
        self._timer = None
        self._failure = ''
        self._last_keyframe = time.monotonic()
        self._segments_open = False
        self._markers_dirty = True
        self._last_hits: tuple[list[Hit], str] | None = None
        self._storage: dict[str, int] = {}  # disk use by part, measured now and then
        self._storage_due = 0.0
        self._lessons = LessonDesk(self, self.counts, self._refused_inactive)
        params = declare_settings(self, MemoryParameters, on_change=self._on_parameters)
        self._on_parameters(params)
        self._keyframe_rules = params.keyframe_rules()

        # Services share the default group with the lifecycle services, so that no request
        # is served while a transition opens or closes memory.
        depth = params.input_queue_depth
        self._ack_publisher = self.create_lifecycle_publisher(
            KeyframeAck, 'keyframes/ack', qos.keyframes(depth)
        )
        self.create_subscription(
            KeyframeMsg,
            'keyframes',
            self._on_keyframe,
            qos.keyframes(depth),
            callback_group=MutuallyExclusiveCallbackGroup(),
        )
        self.create_service(SearchMemory, 'search_memory', self._on_search)
        self.create_service(ListSessions, 'list_sessions', self._on_list_sessions)
        self.create_service(DeleteSession, 'delete_session', self._on_delete_session)
        self.create_service(ThinMemory, 'thin_memory', self._on_thin_memory)
        self.create_service(StorePlace, 'store_place', self._on_store_place)
        latched = qos.latched()
        self._stats_publisher = self.create_lifecycle_publisher(String, 'memory/stats', latched)
        self._diagnostics = self.create_lifecycle_publisher(DiagnosticArray, '/diagnostics', 10)
        self._markers = self.create_lifecycle_publisher(MarkerArray, 'memory/markers', latched)
        self._hits = self.create_lifecycle_publisher(MarkerArray, 'memory/hits', latched)
        if params.autostart:
            for transition in (self.trigger_configure, self.trigger_activate):
                if transition() != SUCCESS:
                    raise RuntimeError(self._failure or 'lifecycle transition failed')

    def _on_parameters(self, params: MemoryParameters) -> None:
        """Live parameters: request limits and waits, from the next request or wait on."""
        self.params = params
        self._limits = SearchLimits(params.search_rules(), params.default_top_k, params.max_top_k)
        self._lessons.use(params)
        if self._worker is not None:
            self._worker.put_timeout_s = params.ingest_wait_s
            self._worker.retry_max_s = params.store_retry_max_s

    # Lifecycle -----------------------------------------------------------------------
    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        params = self.params
        try:
            models = load_models(params)
            self._memory = open_memory(params.memory_config(), models)
            journal = KeyframeJournal(
                Path(params.data_dir).expanduser() / 'journal',
                max_bytes=params.journal_max_mb * MB,
            )
            segments = self._memory.segments
            recaptioning = segments.caption_missing() if segments is not None else 0
            self._lessons.open(params, self._memory.store.uri, models)
        except Exception as error:
            self._release()
            return self._failed('configure', error)
        self.get_logger().info(startup_report(self._memory, len(journal.paths()), recaptioning))
        self._worker = IngestWorker(
            self._memory,
            journal,
            lambda keyframe, refused: self._acknowledge(keyframe.session, keyframe.index, refused),
            self.get_logger(),
            queue_size=params.ingest_queue_size,
            prepare_workers=params.prepare_workers,
            put_timeout_s=params.ingest_wait_s,
            retry_max_s=params.store_retry_max_s,
            counts=self.counts,
            on_stored=self._on_stored,
        )
        return SUCCESS

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        try:
            self._worker.start()
        except Exception as error:
            return self._failed('activate', error)
        self._markers_dirty = True
        self._last_keyframe = time.monotonic()
        self._timer = self.create_timer(
            1.0, self._publish_status, callback_group=MutuallyExclusiveCallbackGroup()
        )
        result = super().on_activate(state)  # the lifecycle publishers publish from now on
        with self._gate:
            self._active = True
        # The first status at once, not on the timer: on simulated time the timer waits for
        # a clock, and a replay starts its clock only once it has heard memory is open.
        self._publish_status()
        return result

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._stop_serving()
        return super().on_deactivate(state)

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        try:
            self._release()
        except Exception as error:
            return self._failed('cleanup', error)
        return SUCCESS

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._shut_down()
        return SUCCESS

    def on_error(self, state: LifecycleState) -> TransitionCallbackReturn:
        """A transition raised: release everything and go back to unconfigured."""
        self.get_logger().error(f'a transition from {state.label} raised; memory is closed')
        self._shut_down()
        return SUCCESS

    def destroy_node(self) -> None:
        """Shut down as the shutdown transition does (the process is ending, perhaps after
        ROS itself, when no transition can be published)."""
        self._shut_down()
        super().destroy_node()

    def _failed(self, transition: str, error: Exception) -> TransitionCallbackReturn:
        self._failure = ' '.join(str(error).split()) or type(error).__name__
        self.get_logger().error(f'{transition} failed: {self._failure}')
        return FAILURE

    def _stop_serving(self) -> None:
        """Refuse keyframes and requests, stop status, then ingest what is queued for at
        most `shutdown_wait_s` (the rest stays in the journal)."""
        with self._gate:
            self._active = False
        if self._timer is not None:
            self.destroy_timer(self._timer)
            self._timer = None
        with self._status_lock:  # a status tick in progress ends first
            pass
        if self._worker is not None:
            self._worker.stop(self.params.shutdown_wait_s)

    def _shut_down(self) -> None:
        if self._active:
            self._stop_serving()
        self._release()

    def _release(self) -> None:
        """Close the open segments, stop captioning, close the database."""
        memory, self._memory, self._worker = self._memory, None, None
        self._lessons.close()
        if memory is None:
            return
        try:
            memory.close_segments()
        except Exception as error:
            self.get_logger().error(f'could not close the open segments: {error}')
        captions = memory.segments.captions if memory.segments is not None else None
        if captions is not None:
            unfinished = captions.stop(timeout_s=5.0)
            if unfinished:
                self.get_logger().info(f'{unfinished} segments will be captioned at next start')
        memory.store.close()

    # Ingestion -----------------------------------------------------------------------
    def _on_keyframe(self, msg: KeyframeMsg) -> None:
        with self._gate:
            if not self._active:  # not acknowledged: the sender sends it again
                self.counts['keyframes_ignored_inactive'] += 1
                return
            self.counts['keyframes_received'] += 1
            self._last_keyframe = time.monotonic()
            try:
                keyframe = keyframe_from_msg(msg, self._keyframe_rules)
            except RefusedError as error:
                self.counts['keyframes_rejected'] += 1
                self.counts[f'keyframes_refused_{error.reason}'] += 1
                name = f'{shown(msg.session)}/{msg.index}'
                self.get_logger().warning(f'rejected keyframe {name}: {error}')
                self._acknowledge(msg.session, msg.index, refused=True)
                return
            self._worker.accept(keyframe)

    def _acknowledge(self, session: str, index: int, refused: bool = False) -> None:
        if refused:
            self._ack_publisher.publish(KeyframeAck(session=session, refused=[index]))
        else:
            self._ack_publisher.publish(KeyframeAck(session=session, durable=[index]))
        self.counts['keyframes_refused_acknowledged' if refused else 'keyframes_acknowledged'] += 1

    def _on_stored(self) -> None:
        self._segments_open = True
        self._markers_dirty = True

    # Services ------------------------------------------------------------------------
    def _refused_inactive(self, response) -> bool:
        if self._active:
            return False
        response.success, response.message = False, NOT_ACTIVE
        self.counts['requests_refused_inactive'] += 1
        return True

    def _on_search(self, request: SearchMemory.Request, response: SearchMemory.Response):
        if self._refused_inactive(response):
            return response
        frame = self.params.map_frame
        hits = answer_search(self._memory, self._limits, request, response, frame, self.counts)
        if hits is not None:
            self._last_hits = (hits, request.text or request.mode)
        return response

    def _on_list_sessions(self, request, response: ListSessions.Response):
        if not self._refused_inactive(response):
            answer_list_sessions(self._memory, response)
        return response

    def _on_delete_session(self, request, response: DeleteSession.Response):
        if self._refused_inactive(response):
            return response
        allowed = self.params.allow_delete
        if answer_delete_session(self._memory, allowed, request, response, self.counts):
            self.get_logger().info(response.message)
            self._markers_dirty = True
        return response

    def _on_thin_memory(self, request, response: ThinMemory.Response):
        if self._refused_inactive(response):
            return response
        policy, allowed = self.params.retention.policy(), self.params.allow_delete
        now_ns = self.get_clock().now().nanoseconds
        if answer_thin_memory(self._memory, policy, allowed, request, response, now_ns):
            self.get_logger().info(response.message)
            self.counts['frames_thinned'] += response.frames
            self._markers_dirty = True
            self._storage_due = 0.0  # measure again at the next status
        return response

    def _on_store_place(self, request, response: StorePlace.Response):
        if self._refused_inactive(response):
            return response
        rules, frame = self._limits.rules, self.params.map_frame
        if answer_store_place(self._memory, rules, frame, request, response, self.counts):
            self.get_logger().info(response.message)
            self._markers_dirty = True
        return response

    # Status --------------------------------------------------------------------------
    def _publish_status(self) -> None:
        with self._status_lock:
            if self._active:
                self._close_idle_segments()
                self._publish_stats_and_markers()

    def _close_idle_segments(self) -> None:
        idle = time.monotonic() - self._last_keyframe
        if self._segments_open and idle > self.params.segments.idle_close_s and self._worker.idle:
            self._segments_open = False
            try:
                self._memory.close_segments()
            except Exception as error:
                self._segments_open = True
                self.get_logger().error(f'could not close segments: {error}')

    def _publish_stats_and_markers(self) -> None:
        retention = self.params.retention
        if time.monotonic() >= self._storage_due:
            self._storage = self._memory.storage()
            self._storage_due = time.monotonic() + retention.check_period_s
        stats = memory_stats(self.counts, self._memory, self._worker, self._lessons.bank)
        stats.update(storage_stats(self._storage, stats, retention.policy().budget_bytes))
        self._lessons.report(stats)
        self._stats_publisher.publish(String(data=json.dumps(stats, sort_keys=True)))
        stamp = self.get_clock().now().to_msg()
        self._diagnostics.publish(diagnostic(stats, self._worker, stamp, self.get_name()))
        frame, most = self.params.map_frame, max(1, self.params.markers_max)
        if self._markers_dirty:
            self._markers_dirty = False
            store = self._memory.store
            entries = [
                *store.search_time(0, most),
                *store.search_time(0, most, level=SEGMENT),
                *store.search_time(0, most, level=PLACE),
            ]
            records = [hit.record for hit in entries]
            self._markers.publish(memory_markers(records, frame, stamp, max_points=most))
        if self._last_hits is not None:
            hits, query = self._last_hits
            self._last_hits = None
            self._hits.publish(hit_markers(hits, frame, stamp, query))


def main(args=None) -> None:
    # Its shutdown ingests what is queued for up to shutdown_wait_s: that is its own bound.
    run_node(
        MemoryNode,
        'memory_node',
        args,
        threads=3,
        shutdown_s=lambda node: node.params.shutdown_wait_s,
    )


if __name__ == '__main__':
    main()
