# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""memory_node's parameters. What bounds a request (search limits, hit counts) and how
ingest waits are live; what shapes the database, its views and the files is fixed at
start. Each view's settings come from the view registry (its models, OCR)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from waymark.memory.factory import MemoryConfig
from waymark.memory.ingest.admission import KeyframeRules
from waymark.memory.places import DEFAULT_MAX_PLACES, MAX_PLACES_LIMIT
from waymark.memory.retention import RetentionPolicy
from waymark.memory.search_query import SearchRules
from waymark.memory.storage.hybrid_index import DEFAULT_HOT_ROWS
from waymark.memory.storage.image_codec import ImageLimits
from waymark.memory.storage.index_params import IndexParams
from waymark.memory.storage.recovery import DEFAULT_SNAPSHOT_EVERY
from waymark.memory.storage.view_index import IN_PROCESS, SEARCH_BACKENDS
from waymark.memory.views.captioner import CaptionerConfig
from waymark.memory.views.photo_match import PhotoMatchParams
from waymark.memory.views.photo_rerank import MAX_TOP, PhotoRerankParams
from waymark.memory.views.registry import ViewSettings
from waymark.parameters.common import comma_list
from waymark.parameters.lessons import LessonParameters
from waymark.settings import setting

MB = 1 << 20


@dataclass(frozen=True)
class SegmentParameters:
    window_s: float = setting(
        1.5,
        'Segment length (BinTrack: 1.5 s; 1-3 s behave alike); 0: no segments.',
        low=0.0,
        high=600.0,
    )
    idle_close_s: float = setting(
        5.0,
        'Close the open segment after this long without keyframes (wall time).',
        low=0.1,
        high=3600.0,
        live=True,
    )


@dataclass(frozen=True)
class RetentionParameters:
    thin_after_days: float = setting(
        RetentionPolicy.thin_after_days,
        'thin_memory drops the vectors of frames older than this (days; 0: never), but one '
        'in keep_every per session; records, segments and places stay.',
        low=0.0,
        high=36_500.0,
        live=True,
    )
    keep_every: int = setting(
        RetentionPolicy.keep_every,
        'Frames whose index is a multiple of this keep their vectors when thinned.',
        low=2,
        high=10_000,
        live=True,
    )
    keep_sessions: str = setting(
        '',
        'Sessions thin_memory never thins: comma-separated names or shell patterns '
        '(survey-*); empty: none.',
        live=True,
    )
    budget_gb: float = setting(
        0.0,
        'Disk this memory may use on this robot (database, snapshots, images; GB) before '
        'diagnostics warn; 0: no budget.',
        low=0.0,
        high=1e6,
        live=True,
    )
    check_period_s: float = setting(
        60.0, 'How often the disk use is measured.', low=1.0, high=86_400.0, live=True
    )

    def policy(self) -> RetentionPolicy:
        return RetentionPolicy(
            thin_after_days=self.thin_after_days,
            keep_every=self.keep_every,
            budget_bytes=int(self.budget_gb * 1e9),
            keep_sessions=comma_list(self.keep_sessions),
        )


@dataclass(frozen=True)
class CaptionerParameters:
    base_url: str = setting(
        '',
        'OpenAI-compatible VLM server for segment captions (e.g. vLLM at '
        'http://localhost:8000/v1); empty: no captions.',
    )
    model: str = setting('Qwen/Qwen2.5-VL-7B-Instruct', 'VLM that writes captions.')
    api_key_env: str = setting('WAYMARK_VLM_API_KEY', 'Variable holding the API key.')
    timeout_s: float = setting(
        CaptionerConfig.timeout_s, 'Per-request timeout.', low=1.0, high=3600.0
    )
    max_tokens: int = setting(CaptionerConfig.max_tokens, 'Tokens per caption.', low=16, high=4096)
    queue_size: int = setting(1000, 'Segments waiting for captions.', low=1, high=1_000_000)


@dataclass(frozen=True)
class PhotoRerankParameters:
    top: int = setting(
        PhotoRerankParams.top,
        'Best hits of a photo search verified against their stored pictures (ORB, RANSAC); '
        'the verified go first. About 10 ms each at 640x480; 0: none.',
        low=0,
        high=MAX_TOP,
    )
    min_inliers: int = setting(
        PhotoMatchParams.min_inliers,
        'Verified inliers for a hit to show the photographed thing.',
        low=4,
        high=1000,
    )
    max_side_px: int = setting(
        PhotoMatchParams.max_side_px,
        'Longer side pictures are shrunk to before matching.',
        low=64,
        high=4096,
    )

    def params(self) -> PhotoRerankParams:
        match = PhotoMatchParams(min_inliers=self.min_inliers, max_side_px=self.max_side_px)
        return PhotoRerankParams(top=self.top, match=match)


@dataclass(frozen=True)
class MemoryParameters(ViewSettings):
    autostart: bool = setting(
        True,
        'Configure and activate at start (a plain start); false: stay unconfigured until a '
        'lifecycle manager (the launch files, or `ros2 lifecycle set`) drives it.',
    )
    data_dir: str = setting('~/.waymark/memory', 'Directory for the database and images.')
    uri: str = setting('', 'Milvus URI (http://host:19530); empty: Milvus Lite file in data_dir.')
    collection_prefix: str = setting('waymark', 'Prefix of the Milvus collection names.')
    robot_id: str = setting(
        '',
        'Id of this robot where several share one Milvus server: it owns the sessions it '
        "writes, changes no other robot's, and searches can name robots. 1-32 letters, "
        'digits, "_", "." or "-"; empty for a memory of its own.',
    )
    search_backend: str = setting(
        IN_PROCESS,
        'Where vector searches run: in_process (indexes mirrored in this node), milvus '
        '(the server answers; for a memory shared by several robots or larger than RAM) or '
        'auto (the server answers, but searches of the sessions this node is writing run '
        'in process, up to hot_rows).',
        choices=SEARCH_BACKENDS,
    )
    hot_rows: int = setting(
        DEFAULT_HOT_ROWS,
        'search_backend auto: most view rows kept in process (the sessions written most '
        'recently; older ones are searched in Milvus).',
        low=0,
        high=100_000_000,
    )
    snapshot_every: int = setting(
        DEFAULT_SNAPSHOT_EVERY,
        'Entries written between saves of the in-process indexes: at most what a start '
        'after a crash refetches from Milvus. Writes wait while a save runs.',
        low=100,
        high=10_000_000,
    )
    prepare_workers: int = setting(
        2,
        'Keyframes decoded, read (OCR) and embedded at once, each on one thread; they are '
        'stored in arrival order. About one per CPU core.',
        low=1,
        high=64,
    )
    map_frame: str = setting(
        KeyframeRules.map_frame,
        'Frame of stored poses; keyframes in another frame (or none) are refused.',
    )
    max_image_bytes: int = setting(
        ImageLimits.max_bytes,
        'Largest compressed image accepted, in a keyframe or a search request.',
        low=1_000,
        high=1_000_000_000,
    )
    max_image_pixels: int = setting(
        ImageLimits.max_pixels,
        'Most pixels an image may decode to (read from its header before decoding: a small '
        'PNG can decode to gigabytes).',
        low=1_000,
        high=1_000_000_000,
    )
    max_coordinate_m: float = setting(
        KeyframeRules.max_coordinate_m,
        'Farthest a keyframe position or a searched position may be from the map origin.',
        low=1.0,
        high=1e9,
    )
    quaternion_tolerance: float = setting(
        KeyframeRules.quaternion_tolerance,
        'How far a keyframe quaternion norm may be from 1 before it is refused.',
        low=1e-6,
        high=0.5,
    )
    max_radius_m: float = setting(
        SearchRules.max_radius_m, 'Largest range-search radius.', low=0.1, high=1e7, live=True
    )
    max_query_chars: int = setting(
        SearchRules.max_query_chars,
        'Longest search text, in characters.',
        low=1,
        high=100_000,
        live=True,
    )
    max_search_sessions: int = setting(
        SearchRules.max_sessions, 'Most sessions one search may name.', low=1, high=1_000, live=True
    )
    allow_delete: bool = setting(
        True,
        'Serve delete_session and apply thin_memory (neither can be undone); false refuses both.',
    )
    default_top_k: int = setting(5, 'Hits when a request asks for 0.', low=1, high=1000, live=True)
    max_top_k: int = setting(100, 'Most hits one request may get.', low=1, high=1000, live=True)
    ingest_queue_size: int = setting(500, 'Keyframes waiting for ingestion.', low=1, high=100_000)
    ingest_wait_s: float = setting(
        5.0,
        'How long a keyframe waits for queue space before it is refused.',
        low=0.0,
        high=600.0,
        live=True,
    )
    shutdown_wait_s: float = setting(
        60.0,
        'On shutdown, how long queued keyframes may still be ingested (the rest stay in the '
        'journal for the next start).',
        low=0.0,
        high=3600.0,
        live=True,
    )
    store_retry_max_s: float = setting(
        10.0,
        'Longest wait between retries while the database is unavailable.',
        low=0.1,
        high=600.0,
        live=True,
    )
    journal_max_mb: int = setting(
        2048, 'Disk cap (MB) of keyframes accepted but not yet stored.', low=1, high=1_000_000
    )
    images_max_gb: float = setting(
        0.0,
        'Disk cap (GB) of stored images; 0: none. Beyond it entries keep no image.',
        low=0.0,
        high=1e6,
    )
    input_queue_depth: int = setting(200, 'Keyframe subscription depth.', low=1, high=100_000)
    max_places: int = setting(
        DEFAULT_MAX_PLACES,
        'Most named places memory keeps; storing a new name beyond it is refused.',
        low=1,
        high=MAX_PLACES_LIMIT,
    )
    markers_max: int = setting(
        5000, 'Most keyframes drawn in RViz.', low=0, high=1_000_000, live=True
    )
    segments: SegmentParameters = field(default_factory=SegmentParameters)
    captioner: CaptionerParameters = field(default_factory=CaptionerParameters)
    index: IndexParams = field(default_factory=IndexParams)
    retention: RetentionParameters = field(default_factory=RetentionParameters)
    photo_rerank: PhotoRerankParameters = field(default_factory=PhotoRerankParameters)
    lessons: LessonParameters = field(default_factory=LessonParameters)

    @property
    def image_limits(self) -> ImageLimits:
        return ImageLimits(max_bytes=self.max_image_bytes, max_pixels=self.max_image_pixels)

    def memory_config(self) -> MemoryConfig:
        """The memory these parameters describe; the captioner's key is read from the
        environment variable they name."""
        caption, window_s = self.captioner, self.segments.window_s
        captioner = None
        if caption.base_url and window_s > 0:
            captioner = CaptionerConfig(
                base_url=caption.base_url,
                model=caption.model,
                api_key=os.environ.get(caption.api_key_env, 'EMPTY'),
                timeout_s=caption.timeout_s,
                max_tokens=caption.max_tokens,
            )
        return MemoryConfig(
            data_dir=Path(self.data_dir).expanduser(),
            uri=self.uri,
            collection_prefix=self.collection_prefix,
            search_backend=self.search_backend,
            segment_window_s=window_s,
            images_max_bytes=int(self.images_max_gb * 1e9),
            index_params=self.index,
            keep_indexes=True,
            snapshot_every=self.snapshot_every,
            image_limits=self.image_limits,
            captioner=captioner,
            caption_queue_size=caption.queue_size,
            max_places=self.max_places,
            robot_id=self.robot_id,
            hot_rows=self.hot_rows,
            photo_rerank=self.photo_rerank.params(),
        )

    def keyframe_rules(self) -> KeyframeRules:
        return KeyframeRules(
            map_frame=self.map_frame,
            max_coordinate_m=self.max_coordinate_m,
            quaternion_tolerance=self.quaternion_tolerance,
            image=self.image_limits,
        )

    def search_rules(self) -> SearchRules:
        return SearchRules(
            max_coordinate_m=self.max_coordinate_m,
            max_radius_m=self.max_radius_m,
            max_query_chars=self.max_query_chars,
            max_sessions=self.max_search_sessions,
            image=self.image_limits,
        )
