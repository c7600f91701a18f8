# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""memory_node: the single owner of the memory database.

Keyframes are queued and ingested on a worker thread (OCR and embedding take far
longer than a DDS callback should), so searches are served while ingestion runs.
Only this process opens the database: Milvus Lite allows one process per file, and a
single writer keeps each session's entries in order.
"""

from __future__ import annotations

import contextlib
import json
import queue
import threading
import time
from collections import Counter, deque
from pathlib import Path

import cv2
import numpy as np
from geometry_msgs.msg import Point
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from std_msgs.msg import ColorRGBA, String
from visualization_msgs.msg import Marker, MarkerArray

from waymark.memory.embedders import ImageTextEmbedder, SentenceEmbedder
from waymark.memory.entries import Hit, Keyframe
from waymark.memory.image_store import ImageStore
from waymark.memory.ocr import TextReader
from waymark.memory.service import MemoryService, view_dims
from waymark.memory.store import MemoryStore
from waymark_interfaces.msg import Keyframe as KeyframeMsg
from waymark_interfaces.srv import SearchMemory
from waymark_ros import qos
from waymark_ros.conversions import hit_to_msg, keyframe_from_msg, stamp_to_ns
from waymark_ros.params import declare
from waymark_ros.spin import run_node

_STOP = object()


class MemoryNode(Node):
    def __init__(self) -> None:
        super().__init__('memory_node')
        data_dir = Path(
            declare(self, 'data_dir', '~/.waymark/memory', 'Directory for the database and images.')
        ).expanduser()
        uri = declare(
            self, 'uri', '', 'Milvus URI (http://host:19530); empty: Milvus Lite file in data_dir.'
        )
        prefix = declare(
            self, 'collection_prefix', 'waymark', 'Prefix of the Milvus collection names.'
        )
        image_model = declare(
            self,
            'image_model',
            '',
            'SigLIP/CLIP model id or local path for the image view; empty: off.',
        )
        text_model = declare(
            self, 'text_model', 'default', 'Sentence embedder for the text (OCR) view; empty: off.'
        )
        ocr = declare(self, 'ocr', True, 'Read text in keyframes (OCR) for the text view.')
        ocr_min_confidence = declare(
            self, 'ocr_min_confidence', 0.5, 'Drop OCR lines below this.', low=0.0, high=1.0
        )
        self._frame_id = declare(self, 'map_frame', 'map', 'Frame of stored poses.')
        self._default_k = declare(
            self, 'default_top_k', 5, 'Hits when a request asks for 0.', low=1, high=1000
        )
        self._max_k = declare(
            self, 'max_top_k', 100, 'Most hits one request may get.', low=1, high=1000
        )
        queue_size = declare(
            self, 'ingest_queue_size', 500, 'Keyframes waiting for ingestion.', low=1, high=100_000
        )
        self._put_timeout = declare(
            self,
            'ingest_wait_s',
            5.0,
            'How long a keyframe waits for queue space before it is dropped.',
            low=0.0,
            high=600.0,
        )
        self._shutdown_wait = declare(
            self,
            'shutdown_wait_s',
            60.0,
            'On shutdown, how long queued keyframes may still be ingested.',
            low=0.0,
            high=3600.0,
        )
        depth = declare(
            self, 'input_queue_depth', 200, 'Keyframe subscription depth.', low=1, high=100_000
        )
        markers_kept = declare(
            self, 'markers_max', 5000, 'Most keyframes drawn in RViz.', low=0, high=1_000_000
        )

        data_dir.mkdir(parents=True, exist_ok=True)
        text_embedder = SentenceEmbedder(text_model) if text_model else None
        image_embedder = ImageTextEmbedder(image_model) if image_model else None
        views = view_dims(image_embedder, text_embedder)
        self._store = MemoryStore(uri or str(data_dir / 'memory.db'), views=views, prefix=prefix)
        self._memory = MemoryService(
            self._store,
            ImageStore(data_dir),
            image_embedder=image_embedder,
            text_embedder=text_embedder,
            reader=TextReader(min_confidence=ocr_min_confidence) if ocr and text_embedder else None,
        )
        self._lock = threading.Lock()
        self.counts: Counter[str] = Counter()
        self._queue: queue.Queue = queue.Queue(maxsize=queue_size)
        self._recent = deque(maxlen=markers_kept)
        self._markers_dirty = False

        ingest_group = MutuallyExclusiveCallbackGroup()
        self.create_subscription(
            KeyframeMsg,
            'keyframes',
            self._on_keyframe,
            qos.keyframes(depth),
            callback_group=ingest_group,
        )
        self.create_service(
            SearchMemory,
            'search_memory',
            self._on_search,
            callback_group=MutuallyExclusiveCallbackGroup(),
        )
        self._stats_publisher = self.create_publisher(String, 'memory/stats', qos.latched())
        self._marker_publisher = self.create_publisher(MarkerArray, 'memory/markers', qos.latched())
        self.create_timer(
            1.0, self._publish_status, callback_group=MutuallyExclusiveCallbackGroup()
        )
        self._worker = threading.Thread(target=self._ingest_loop, name='ingest', daemon=True)
        self._worker.start()
        self.get_logger().info(
            f'memory at {uri or data_dir / "memory.db"} with views {sorted(views) or "none"}; '
            f'{self._store.count()} frames stored'
        )

    # Ingestion -----------------------------------------------------------------------
    def _on_keyframe(self, msg: KeyframeMsg) -> None:
        self.counts['keyframes_received'] += 1
        try:
            keyframe = keyframe_from_msg(msg)
        except ValueError as error:
            self.counts['keyframes_rejected'] += 1
            self.get_logger().warn(f'rejected keyframe {msg.session}/{msg.index}: {error}')
            return
        try:
            self._queue.put(keyframe, timeout=self._put_timeout)
        except queue.Full:
            self.counts['keyframes_dropped_queue_full'] += 1
            self.get_logger().error(
                f'ingest queue full for {self._put_timeout:.1f} s: '
                f'dropped keyframe {keyframe.session}/{keyframe.index}'
            )

    def _ingest_loop(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is _STOP:
                    return
                self._ingest(item)
            finally:
                self._queue.task_done()

    def _ingest(self, keyframe: Keyframe) -> None:
        try:
            with self._lock:
                record = self._memory.ingest(keyframe)
        except ValueError as error:
            self.counts['keyframes_undecodable'] += 1
            self.get_logger().warn(f'skipped keyframe {keyframe.session}/{keyframe.index}: {error}')
            return
        except Exception as error:  # a full disk, an unreachable Milvus server, ...
            # The worker must outlive one bad write; the loss is counted and logged.
            self.counts['keyframes_failed'] += 1
            self.get_logger().error(
                f'could not store keyframe {keyframe.session}/{keyframe.index}: '
                f'{type(error).__name__}: {error}'
            )
            return
        self.counts['keyframes_ingested'] += 1
        if record.pose_valid:
            self._recent.append(record)
            self._markers_dirty = True

    # Search --------------------------------------------------------------------------
    def _on_search(self, request: SearchMemory.Request, response: SearchMemory.Response):
        k = min(request.top_k or self._default_k, self._max_k)
        sessions = list(request.sessions) or None
        try:
            with self._lock:
                hits = self._search(request, k, sessions)
        except ValueError as error:
            response.success = False
            response.message = str(error)
            return response
        response.success = True
        response.hits = [hit_to_msg(hit, self._frame_id) for hit in hits]
        response.total_entries = self._count(sessions)
        response.message = f'{len(hits)} hits among {response.total_entries} entries'
        self.counts['searches'] += 1
        return response

    def _count(self, sessions: list[str] | None) -> int:
        if not sessions:
            return self._store.count()
        return sum(self._store.count(session) for session in sessions)

    def _search(self, request: SearchMemory.Request, k: int, sessions) -> list[Hit]:
        mode = request.mode
        if mode == SearchMemory.Request.MODE_TEXT:
            if not request.text.strip():
                raise ValueError('text search needs a non-empty text')
            return self._memory.search_text(request.text, k, sessions)
        if mode == SearchMemory.Request.MODE_IMAGE:
            data = np.frombuffer(bytes(request.image.data), dtype=np.uint8)
            image = cv2.imdecode(data, cv2.IMREAD_COLOR) if data.size else None
            if image is None:
                raise ValueError('image search needs a decodable image')
            return self._memory.search_image(cv2.cvtColor(image, cv2.COLOR_BGR2RGB), k, sessions)
        if mode == SearchMemory.Request.MODE_TIME:
            return self._memory.search_time(stamp_to_ns(request.stamp), k, sessions)
        if mode == SearchMemory.Request.MODE_INTERVAL:
            start, end = stamp_to_ns(request.stamp), stamp_to_ns(request.end_stamp)
            if end < start:
                raise ValueError('interval search needs end_stamp >= stamp')
            return self._memory.search_interval(start, end, k, sessions)
        p = request.position
        if not all(np.isfinite([p.x, p.y, p.z])):
            raise ValueError('position search needs a finite position')
        if mode == SearchMemory.Request.MODE_POSITION:
            return self._memory.search_position(p.x, p.y, p.z, k, sessions)
        if mode == SearchMemory.Request.MODE_RANGE:
            if not (np.isfinite(request.radius) and request.radius > 0.0):
                raise ValueError('range search needs a positive radius')
            return self._memory.search_range(p.x, p.y, float(request.radius), sessions, k)
        raise ValueError(
            f'unknown search mode {mode!r}; use text, image, time, interval, position or range'
        )

    # Status --------------------------------------------------------------------------
    def _publish_status(self) -> None:
        stats = dict(
            self.counts,
            frames=self._store.count(),
            queued=self._queue.qsize(),
            mean_ingest_ms=round(self._memory.mean_ingest_ms, 1),
        )
        self._stats_publisher.publish(String(data=json.dumps(stats, sort_keys=True)))
        if self._markers_dirty:
            self._markers_dirty = False
            self._marker_publisher.publish(self._markers())

    def _markers(self) -> MarkerArray:
        marker = Marker()
        marker.header.frame_id = self._frame_id
        marker.header.stamp = self.get_clock().now().to_msg()
        marker.ns = 'keyframes'
        marker.type = Marker.SPHERE_LIST
        marker.action = Marker.ADD
        marker.pose.orientation.w = 1.0
        marker.scale.x = marker.scale.y = marker.scale.z = 0.15
        marker.color = ColorRGBA(r=0.1, g=0.6, b=1.0, a=0.8)
        marker.points = [Point(x=r.x, y=r.y, z=r.z) for r in self._recent]
        labels = []
        for i, record in enumerate(r for r in self._recent if r.text):
            label = Marker()
            label.header = marker.header
            label.ns = 'text'
            label.id = i
            label.type = Marker.TEXT_VIEW_FACING
            label.pose.position = Point(x=record.x, y=record.y, z=record.z + 0.4)
            label.pose.orientation.w = 1.0
            label.scale.z = 0.25
            label.color = ColorRGBA(r=1.0, g=1.0, b=1.0, a=1.0)
            label.text = record.text[:60]
            labels.append(label)
        return MarkerArray(markers=[marker, *labels])

    def destroy_node(self) -> None:
        """Finish queued ingestion (for at most `shutdown_wait_s`), then close the database
        so every write is durable."""
        deadline = time.monotonic() + self._shutdown_wait
        with contextlib.suppress(queue.Full):
            self._queue.put(_STOP, timeout=self._shutdown_wait)
        self._worker.join(timeout=max(0.0, deadline - time.monotonic()))
        if self._worker.is_alive():
            self.get_logger().error(
                f'shut down with {self._queue.qsize()} keyframes not ingested '
                f'(shutdown_wait_s={self._shutdown_wait:.0f})'
            )
        with self._lock:
            self._store.close()
        super().destroy_node()


def main(args=None) -> None:
    run_node(MemoryNode, 'memory_node', args, threads=3)


if __name__ == '__main__':
    main()
