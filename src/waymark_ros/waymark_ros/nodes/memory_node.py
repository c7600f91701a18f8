# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""memory_node: the single owner of the memory database.

Keyframes are journaled to disk, queued, and ingested on a worker thread (OCR and
embedding take far longer than a DDS callback should), so searches are served while
ingestion runs. A keyframe leaves the journal only once it is in the database: a killed
process, a Milvus server that is away, or a shutdown with a full queue loses nothing
that was accepted, and the next start ingests what is left.

Each keyframe is acknowledged on `keyframes/ack` once journaled (or refused for good),
so the sender can forget it; until then the sender keeps it and sends it again. A resend
of a keyframe still journaled is acknowledged again and not queued twice. Keyframes the
queue has no room for, and those a previous run left in the journal, form the backlog:
read back from the journal in stamp order after the queue, while new keyframes keep
being journaled and acknowledged behind it.

Only this process opens the database: Milvus Lite allows one process per file, and a
single writer keeps each session's entries in order and the in-process indexes exact.
"""

from __future__ import annotations

import json
import os
import queue
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass
from pathlib import Path

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from std_msgs.msg import String
from visualization_msgs.msg import MarkerArray

from waymark.memory.entries import FRAME, LEVELS, SEGMENT, Hit, Keyframe
from waymark.memory.factory import MemoryConfig, load_models, open_memory
from waymark.memory.ingest.admission import (
    RefusedError,
    check_index_range,
    check_interval,
    check_position,
    check_search_image,
    check_search_radius,
    check_search_sessions,
    check_search_text,
    check_stamp,
    shown,
)
from waymark.memory.ingest.journal import JournalFullError, KeyframeJournal
from waymark.memory.ingest.prepare_pool import PreparePool
from waymark.memory.service import PreparedKeyframe
from waymark.memory.storage.image_codec import decode_image
from waymark.memory.views.captioner import CaptionerConfig
from waymark.parameters.memory import MB, MemoryParameters
from waymark_interfaces.msg import Keyframe as KeyframeMsg
from waymark_interfaces.msg import KeyframeAck, SessionInfo
from waymark_interfaces.srv import DeleteSession, ListSessions, SearchMemory
from waymark_ros.ros import qos
from waymark_ros.ros.conversions import hit_to_msg, keyframe_from_msg, ns_to_stamp
from waymark_ros.ros.memory_markers import hit_markers, memory_markers
from waymark_ros.ros.params import declare_settings
from waymark_ros.ros.spin import run_node

Request = SearchMemory.Request


@dataclass(frozen=True)
class _Job:
    keyframe: Keyframe
    journal_path: Path | None


class MemoryNode(Node):
    def __init__(self) -> None:
        super().__init__('memory_node')
        params = declare_settings(self, MemoryParameters, on_change=self._on_parameters)
        self._on_parameters(params)
        data_dir = Path(params.data_dir).expanduser()
        self._prepare_workers = params.prepare_workers
        self._frame_id = params.map_frame
        self._keyframe_rules = params.keyframe_rules()
        self._allow_delete = params.allow_delete
        window_s, caption = params.segments.window_s, params.captioner

        captioner = None
        if caption.base_url and window_s > 0:
            captioner = CaptionerConfig(
                base_url=caption.base_url,
                model=caption.model,
                api_key=os.environ.get(caption.api_key_env, 'EMPTY'),
                timeout_s=caption.timeout_s,
                max_tokens=caption.max_tokens,
            )
        config = MemoryConfig(
            data_dir=data_dir,
            uri=params.uri,
            collection_prefix=params.collection_prefix,
            segment_window_s=window_s,
            images_max_bytes=int(params.images_max_gb * 1e9),
            index_params=params.index,
            keep_indexes=True,
            image_limits=params.image_limits,
            captioner=captioner,
            caption_queue_size=caption.queue_size,
        )
        self._memory = open_memory(
            config,
            load_models(params),
        )
        self._store = self._memory.store
        segments = self._memory.segments
        self._caption_worker = segments.captions if segments is not None else None
        self._journal = KeyframeJournal(data_dir / 'journal', max_bytes=params.journal_max_mb * MB)
        self.counts: Counter[str] = Counter()
        self._queue: queue.Queue[_Job] = queue.Queue(maxsize=params.ingest_queue_size)
        # Journaled keyframes waiting behind the queue, oldest first; bounded by the
        # journal's cap (only their paths are held).
        self._backlog: deque[Path] = deque()
        self._backlog_lock = threading.Lock()
        self._stop = threading.Event()
        self._deadline = float('inf')  # set at shutdown: when the worker must give up
        self._last_keyframe = time.monotonic()
        self._segments_open = False
        self._markers_dirty = True
        self._last_hits: tuple[list[Hit], str] | None = None
        self._report_recovery()

        ingest_group = MutuallyExclusiveCallbackGroup()
        depth = params.input_queue_depth
        self._ack_publisher = self.create_publisher(
            KeyframeAck, 'keyframes/ack', qos.keyframes(depth)
        )
        self.create_subscription(
            KeyframeMsg,
            'keyframes',
            self._on_keyframe,
            qos.keyframes(depth),
            callback_group=ingest_group,
        )
        services = MutuallyExclusiveCallbackGroup()
        self.create_service(SearchMemory, 'search_memory', self._on_search, callback_group=services)
        self.create_service(
            ListSessions, 'list_sessions', self._on_list_sessions, callback_group=services
        )
        self.create_service(
            DeleteSession, 'delete_session', self._on_delete_session, callback_group=services
        )
        self._stats_publisher = self.create_publisher(String, 'memory/stats', qos.latched())
        self._diagnostics = self.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self._marker_publisher = self.create_publisher(MarkerArray, 'memory/markers', qos.latched())
        self._hit_publisher = self.create_publisher(MarkerArray, 'memory/hits', qos.latched())
        self.create_timer(
            1.0, self._publish_status, callback_group=MutuallyExclusiveCallbackGroup()
        )
        self._worker = threading.Thread(target=self._ingest_loop, name='ingest', daemon=True)
        self._worker.start()

    def _on_parameters(self, params: MemoryParameters) -> None:
        """Live parameters: request limits and waits, from the next request or wait on."""
        self._search_rules = params.search_rules()
        self._default_k, self._max_k = params.default_top_k, params.max_top_k
        self._put_timeout = params.ingest_wait_s
        self._shutdown_wait = params.shutdown_wait_s
        self._max_backoff = params.store_retry_max_s
        self._markers_max = params.markers_max
        self._idle_close_s = params.segments.idle_close_s

    def _report_recovery(self) -> None:
        """Say what memory holds at start, and put what a previous run left unfinished in
        the backlog (all of it, oldest first)."""
        load = self._store.load_report
        pending = self._journal.paths()
        self._backlog.extend(pending)
        self.counts['keyframes_recovered_from_journal'] = len(pending)
        recaptioning = self._memory.segments.caption_missing() if self._memory.segments else 0
        self.get_logger().info(
            f'memory at {self._store.uri}: {load.entries.get(FRAME, 0)} frames, '
            f'{load.entries.get(SEGMENT, 0)} segments in {len(self._store.sessions())} sessions '
            f'(indexes ready in {load.seconds:.1f} s, {len(load.loaded)} loaded from the last '
            f'clean shutdown); views {self._store.views(FRAME)} / '
            f'segments {self._store.views(SEGMENT)}; {len(pending)} keyframes recovered from '
            f'the journal; {recaptioning} segments queued for captions'
        )

    # Ingestion -----------------------------------------------------------------------
    def _on_keyframe(self, msg: KeyframeMsg) -> None:
        self.counts['keyframes_received'] += 1
        self._last_keyframe = time.monotonic()
        name = f'{shown(msg.session)}/{msg.index}'
        try:
            keyframe = keyframe_from_msg(msg, self._keyframe_rules)
        except RefusedError as error:
            self.counts['keyframes_rejected'] += 1
            self.counts[f'keyframes_refused_{error.reason}'] += 1
            self.get_logger().warning(f'rejected keyframe {name}: {error}')
            self._acknowledge(msg.session, msg.index, refused=True)
            return
        try:
            stored = self._memory.stored_as(keyframe)
        except RefusedError as error:  # another keyframe is stored at its stamp
            self.counts['keyframes_rejected'] += 1
            self.counts['keyframes_conflicting'] += 1
            self.get_logger().warning(f'rejected keyframe {name}: {error}')
            self._acknowledge(keyframe.session, keyframe.index, refused=True)
            return
        if stored is not None:  # sent again after it was stored: nothing to write
            self.counts['keyframes_duplicate'] += 1
            self._acknowledge(keyframe.session, keyframe.index)
            return
        if self._journal.holds(keyframe):
            # Sent again (our acknowledgement was lost, or the sender restarted): it is
            # queued or in the backlog already.
            self.counts['keyframes_resent_while_journaled'] += 1
            self._acknowledge(keyframe.session, keyframe.index)
            return
        if self._journal.path_of(keyframe).exists():
            self.counts['keyframes_rejected'] += 1
            self.counts['keyframes_conflicting'] += 1
            self.get_logger().warning(
                f'rejected keyframe {name}: another keyframe with its session and stamp is '
                'journaled'
            )
            self._acknowledge(keyframe.session, keyframe.index, refused=True)
            return
        path = None
        try:
            path = self._journal.write(keyframe)
        except (JournalFullError, OSError) as error:
            # Still ingested if the process lives; not acknowledged, so the sender keeps it.
            self.counts['keyframes_not_journaled'] += 1
            self.get_logger().warning(f'keyframe {name} not journaled: {error}')
        if path is not None:
            self._acknowledge(keyframe.session, keyframe.index)
            with self._backlog_lock:
                if self._backlog:  # behind the backlog, to stay in order
                    self._backlog.append(path)
                    self.counts['keyframes_behind_backlog'] += 1
                    return
        try:
            self._queue.put(_Job(keyframe, path), timeout=self._put_timeout)
        except queue.Full:
            # Journaled keyframes wait in the backlog; the rest are refused (unacknowledged,
            # so the sender sends them again).
            if path is not None:
                with self._backlog_lock:
                    self._backlog.append(path)
            self.counts['keyframes_deferred_queue_full' if path else 'keyframes_refused'] += 1
            self.get_logger().error(
                f'ingest queue full for {self._put_timeout:.1f} s: keyframe {name} '
                + ('waits in the journal backlog' if path else 'refused')
            )

    def _acknowledge(self, session: str, index: int, refused: bool = False) -> None:
        if refused:
            self._ack_publisher.publish(KeyframeAck(session=session, refused=[index]))
        else:
            self._ack_publisher.publish(KeyframeAck(session=session, durable=[index]))
        self.counts['keyframes_refused_acknowledged' if refused else 'keyframes_acknowledged'] += 1

    def _next_job(self, wait: bool) -> _Job | None:
        """The queue first, then the backlog (all newer than the queue, in order); with
        `wait`, waits a little for a keyframe when both are empty. The backlog is left to
        the next start once shutdown has begun."""
        try:
            return self._queue.get_nowait()
        except queue.Empty:
            pass
        while not self._stop.is_set():
            with self._backlog_lock:
                if not self._backlog:
                    break
                path = self._backlog.popleft()
            keyframe = self._journal.read(path)  # None: gone, or set aside as unreadable
            if keyframe is not None:
                self.counts['keyframes_from_backlog'] += 1
                return _Job(keyframe, path)
        if not wait:
            return None
        try:
            return self._queue.get(timeout=0.2)
        except queue.Empty:
            return None

    def _ingest_loop(self) -> None:
        """Prepare up to `prepare_workers` keyframes at once; store them in arrival order."""
        pool = PreparePool(self._prepare, self._prepare_workers)
        try:
            while True:
                while not pool.full:
                    # Wait for work only when nothing is in preparation.
                    job = self._next_job(wait=not pool)
                    if job is None:
                        break
                    pool.submit(job)
                if not pool:
                    if self._stop.is_set():
                        return
                    continue
                job, prepared = pool.take()
                if self._ingest(job, prepared) and job.journal_path is not None:
                    self._journal.remove(job.journal_path)
                if self._stop.is_set() and time.monotonic() > self._deadline:
                    return
        finally:
            # Keyframes still in preparation stay in the journal for the next start.
            pool.close()

    def _prepare(self, job: _Job) -> PreparedKeyframe:
        return self._memory.prepare(job.keyframe)

    def _ingest(self, job: _Job, prepared: PreparedKeyframe | Exception) -> bool:
        """Store one prepared keyframe; True when it is done with (stored, or refused for
        good)."""
        keyframe = job.keyframe
        name = f'{keyframe.session}/{keyframe.index}'
        if isinstance(prepared, ValueError):
            self.counts['keyframes_undecodable'] += 1
            self.get_logger().warning(f'skipped keyframe {name}: {prepared}')
            return True
        if isinstance(prepared, Exception):
            # A model failing on one image must not stop ingest: the keyframe stays in the
            # journal and is tried again at the next start.
            self.counts['keyframes_prepare_failed'] += 1
            self.get_logger().error(
                f'could not prepare keyframe {name}: {type(prepared).__name__}: {prepared}'
            )
            return False
        backoff = 0.5
        while True:
            try:
                self._memory.commit(prepared)
            except RefusedError as error:  # the same stamp with other content: never replaced
                self.counts['keyframes_conflicting'] += 1
                self.get_logger().warning(f'refused keyframe {name}: {error}')
                return True
            except ValueError as error:
                self.counts['keyframes_failed'] += 1
                self.get_logger().error(f'could not store keyframe {name}: {error}')
                return True
            except Exception as error:  # the database is away, the disk is full, ...
                self.counts['store_retries'] += 1
                self.get_logger().error(
                    f'could not store keyframe {name} ({type(error).__name__}: {error}); '
                    f'retrying in {backoff:.1f} s',
                    throttle_duration_sec=10.0,
                )
                if self._stop.is_set() and time.monotonic() > self._deadline:
                    return False
                time.sleep(backoff)
                backoff = min(2 * backoff, self._max_backoff)
                continue
            self.counts['keyframes_ingested'] += 1
            self._segments_open = True
            self._markers_dirty = True
            return True

    # Search --------------------------------------------------------------------------
    def _on_search(self, request: Request, response: SearchMemory.Response):
        k = min(request.top_k or self._default_k, self._max_k)
        sessions = list(request.sessions) or None
        try:
            check_search_sessions(self._search_rules, request.sessions)
            hits = self._search(request, k, sessions)
            total = self._count(sessions, request.level or FRAME)
        except ValueError as error:
            response.success = False
            response.message = str(error)
            self.counts['searches_refused'] += 1
            if isinstance(error, RefusedError):
                self.counts[f'searches_refused_{error.reason}'] += 1
            return response
        except Exception as error:  # never let one request take the service down
            response.success = False
            response.message = f'search failed: {type(error).__name__}: {error}'
            self.counts['searches_failed'] += 1
            return response
        response.success = True
        response.hits = [hit_to_msg(hit, self._frame_id) for hit in hits]
        response.total_entries = total
        response.message = f'{len(hits)} hits among {total} entries' + (
            f' (top_k capped at max_top_k={self._max_k})' if request.top_k > self._max_k else ''
        )
        self.counts['searches'] += 1
        self._last_hits = (hits, request.text or request.mode)
        return response

    def _count(self, sessions: list[str] | None, level: str) -> int:
        if not sessions:
            return self._store.count(level=level)
        return sum(self._store.count(session, level=level) for session in set(sessions))

    def _search(self, request: Request, k: int, sessions) -> list[Hit]:
        mode, level = request.mode, request.level or FRAME
        if level not in LEVELS:
            raise ValueError(f'unknown level {level!r}; use frame or segment')
        views = list(request.views) or None
        rules = self._search_rules
        check_search_text(rules, request.text)
        if mode == Request.MODE_TEXT:
            if not request.text.strip():
                raise ValueError('text search needs a non-empty text')
            return self._memory.search_text(request.text, k, sessions, level, views)
        if mode == Request.MODE_IMAGE:
            data = bytes(request.image.data)
            check_search_image(rules, data)
            try:
                image = decode_image(data)  # its limits were checked just above
            except ValueError as error:
                raise ValueError(f'image search needs a decodable image: {error}') from error
            return self._memory.search_image(image, k, sessions, level)
        if mode == Request.MODE_TIME:
            stamp = check_stamp(request.stamp.sec, request.stamp.nanosec)
            return self._memory.search_time(stamp, k, sessions, level)
        if mode == Request.MODE_INTERVAL:
            start = check_stamp(request.stamp.sec, request.stamp.nanosec)
            end = check_stamp(request.end_stamp.sec, request.end_stamp.nanosec, 'end_stamp')
            check_interval(start, end)
            return self._memory.search_interval(start, end, k, sessions, level)
        if mode == Request.MODE_INDEX_RANGE:
            if not sessions or len(set(sessions)) != 1:
                raise ValueError('index_range search needs exactly one session')
            check_index_range(request.first_index, request.last_index)
            return self._memory.search_index_range(
                sessions[0], request.first_index, request.last_index, k, level, request.text, views
            )
        p = request.position
        if mode in (Request.MODE_POSITION, Request.MODE_RANGE):
            check_position((p.x, p.y, p.z), rules.max_coordinate_m, 'search position')
        if mode == Request.MODE_POSITION:
            return self._memory.search_position(p.x, p.y, p.z, k, sessions, level)
        if mode == Request.MODE_RANGE:
            check_search_radius(rules, request.radius)
            return self._memory.search_range(p.x, p.y, float(request.radius), sessions, k, level)
        raise ValueError(
            f'unknown search mode {mode!r}; use text, image, time, interval, index_range, '
            'position or range'
        )

    # Sessions ------------------------------------------------------------------------
    def _on_list_sessions(self, request, response: ListSessions.Response):
        try:
            listed = self._memory.sessions()
        except Exception as error:
            response.success, response.message = False, f'{type(error).__name__}: {error}'
            return response
        for name, summary, segments in listed:
            response.sessions.append(
                SessionInfo(
                    name=name,
                    frames=summary.frames,
                    segments=segments,
                    frames_with_pose=summary.with_pose,
                    start_stamp=ns_to_stamp(summary.start_ns),
                    end_stamp=ns_to_stamp(summary.end_ns),
                    last_map_epoch=max(0, min(summary.last_map_epoch, 2**32 - 1)),
                )
            )
        response.success = True
        response.message = f'{len(listed)} sessions'
        return response

    def _on_delete_session(self, request, response: DeleteSession.Response):
        refusal = None
        if not self._allow_delete:
            refusal = 'deletion is disabled on this robot (memory_node allow_delete: false)'
        elif request.confirm != request.session:
            refusal = f'not deleted: confirm must repeat the session name {request.session!r}'
        if refusal is not None:
            self.counts['deletions_refused'] += 1
            response.success, response.message = False, refusal
            return response
        try:
            frames, segments = self._memory.delete_session(request.session)
        except ValueError as error:
            response.success, response.message = False, str(error)
            return response
        except Exception as error:
            response.success, response.message = False, f'{type(error).__name__}: {error}'
            return response
        response.success = True
        response.frames_deleted, response.segments_deleted = frames, segments
        response.message = f'deleted {frames} frames and {segments} segments of {request.session}'
        self.get_logger().info(response.message)
        self._markers_dirty = True
        return response

    # Status --------------------------------------------------------------------------
    def _publish_status(self) -> None:
        idle = time.monotonic() - self._last_keyframe
        idle_queue = self._queue.empty() and not self._backlog
        if self._segments_open and idle > self._idle_close_s and idle_queue:
            self._segments_open = False
            try:
                self._memory.close_segments()
            except Exception as error:
                self._segments_open = True
                self.get_logger().error(f'could not close segments: {error}')
        stats = self._stats()
        self._stats_publisher.publish(String(data=json.dumps(stats, sort_keys=True)))
        self._diagnostics.publish(self._diagnostic(stats))
        stamp = self.get_clock().now().to_msg()
        if self._markers_dirty:
            self._markers_dirty = False
            records = self._store.search_time(0, max(1, self._markers_max))
            segments = self._store.search_time(0, max(1, self._markers_max), level=SEGMENT)
            self._marker_publisher.publish(
                memory_markers(
                    [hit.record for hit in records + segments],
                    self._frame_id,
                    stamp,
                    max_points=max(1, self._markers_max),
                )
            )
        if self._last_hits is not None:
            hits, query = self._last_hits
            self._last_hits = None
            self._hit_publisher.publish(hit_markers(hits, self._frame_id, stamp, query))

    def _stats(self) -> dict:
        memory = self._memory.stats()
        stats = dict(self.counts)
        for key, count in memory.counts.items():  # both count duplicates: at arrival, at commit
            stats[key] = stats.get(key, 0) + count
        stats.update(
            frames=memory.frames,
            segments=memory.segments,
            sessions=len(memory.sessions),
            queued=self._queue.qsize(),
            backlog=len(self._backlog),
            journal_bytes=self._journal.used_bytes,
            images_bytes=self._memory.image_store.used_bytes,
            mean_ingest_ms=round(memory.mean_ingest_ms, 1),
        )
        if self._caption_worker is not None:
            stats['captions_pending'] = self._caption_worker.pending
            stats.update({f'captioner_{k}': v for k, v in self._caption_worker.counts.items()})
        return stats

    def _diagnostic(self, stats: dict) -> DiagnosticArray:
        status = DiagnosticStatus(name='waymark: memory_node', hardware_id='memory')
        status.level, status.message = DiagnosticStatus.OK, 'ok'
        if stats.get('store_retries', 0) and self._queue.qsize():
            status.level, status.message = DiagnosticStatus.ERROR, 'database unavailable'
        elif self._queue.qsize() > self._queue.maxsize // 2 or self._backlog:
            status.level, status.message = DiagnosticStatus.WARN, 'ingest falling behind'
        status.values = [
            KeyValue(key=key, value=str(value)) for key, value in sorted(stats.items())
        ]
        array = DiagnosticArray(status=[status])
        array.header.stamp = self.get_clock().now().to_msg()
        return array

    def destroy_node(self) -> None:
        """Ingest what is queued (for at most `shutdown_wait_s`), close the open segments,
        then close the database so every write is durable. Keyframes left over stay in
        the journal."""
        self._deadline = time.monotonic() + self._shutdown_wait
        self._stop.set()
        self._worker.join(timeout=self._shutdown_wait + 1.0)
        left = self._queue.qsize() + len(self._backlog)
        if left or self._worker.is_alive():
            self.get_logger().warning(
                f'{left} keyframes not ingested before shutdown_wait_s='
                f'{self._shutdown_wait:.0f} s; they stay in the journal for the next start'
            )
        try:
            self._memory.close_segments()
        except Exception as error:
            self.get_logger().error(f'could not close the open segments: {error}')
        if self._caption_worker is not None:
            unfinished = self._caption_worker.stop(timeout_s=5.0)
            if unfinished:
                self.get_logger().info(f'{unfinished} segments will be captioned at next start')
        self._store.close()
        super().destroy_node()


def main(args=None) -> None:
    run_node(MemoryNode, 'memory_node', args, threads=3)


if __name__ == '__main__':
    main()
