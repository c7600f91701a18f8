# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Direct ingest: a rosbag2 read with rosbags and fed through the same core code the
nodes run (KeyframeBuilder, MemoryService), without DDS. For large offline runs.

Messages are taken in the bag's order and the pose stream never "stalls" (there is no
wall clock in a file), so the keyframes are those the nodes make from a lossless replay.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from rosbags.highlevel import AnyReader
from tqdm import tqdm

from waymark.memory.admission import RefusedError
from waymark.memory.capture import CaptureConfig, KeyframeBuilder
from waymark.memory.entries import Keyframe
from waymark.memory.image_codec import check_encoding, compressed_to_jpeg, raw_to_jpeg
from waymark.memory.service import MemoryService

IMAGE_TYPES = {
    'sensor_msgs/msg/CompressedImage': 'compressed',
    'sensor_msgs/msg/Image': 'raw',
}
POSE_TYPES = {
    'nav_msgs/msg/Odometry': 'odometry',
    'geometry_msgs/msg/PoseStamped': 'pose_stamped',
}
NS_PER_S = 1_000_000_000


class BagTopicError(ValueError):
    """The bag lacks the camera or pose topic asked for (or cannot be guessed)."""


@dataclass(frozen=True)
class BagTopics:
    image: str
    image_type: str
    pose: str
    pose_type: str


@dataclass
class IngestReport:
    topics: BagTopics
    keyframes: int = 0
    ingested: int = 0
    seconds: float = 0.0
    counts: Counter = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)


def find_topics(
    available: dict[str, str], image_topic: str | None = None, pose_topic: str | None = None
) -> BagTopics:
    """The camera and pose topics to use: the ones named, or the only ones of their kind."""
    image = _pick(available, image_topic, IMAGE_TYPES, 'camera')
    pose = _pick(available, pose_topic, POSE_TYPES, 'pose')
    return BagTopics(image, IMAGE_TYPES[available[image]], pose, POSE_TYPES[available[pose]])


def _pick(available: dict[str, str], wanted: str | None, kinds: dict[str, str], what: str) -> str:
    listing = ', '.join(f'{t} [{m}]' for t, m in sorted(available.items())) or 'no topics'
    if wanted is not None:
        if available.get(wanted) not in kinds:
            raise BagTopicError(
                f'{what} topic {wanted} is not in the bag with a supported type '
                f'({", ".join(kinds)}); the bag has: {listing}'
            )
        return wanted
    candidates = [t for t, m in sorted(available.items()) if m in kinds]
    if len(candidates) != 1:
        found = 'none' if not candidates else 'several: ' + ', '.join(candidates)
        raise BagTopicError(
            f'cannot choose the {what} topic ({found}); name it. The bag has: {listing}'
        )
    return candidates[0]


def ingest_bag(
    bag: Path,
    memory: MemoryService,
    config: CaptureConfig,
    *,
    image_topic: str | None = None,
    pose_topic: str | None = None,
    jpeg_quality: int = 90,
    progress: bool = False,
) -> IngestReport:
    started = time.monotonic()
    builder = KeyframeBuilder(config, clock=lambda: 0.0)
    with AnyReader([Path(bag)]) as reader:
        available = {c.topic: c.msgtype for c in reader.connections}
        topics = find_topics(available, image_topic, pose_topic)
        report = IngestReport(topics)
        connections = [c for c in reader.connections if c.topic in (topics.image, topics.pose)]
        total = sum(c.msgcount for c in connections)
        messages = reader.messages(connections=connections)
        for connection, _, raw in tqdm(messages, total=total, disable=not progress, unit='msg'):
            msg = reader.deserialize(raw, connection.msgtype)
            if connection.topic == topics.pose:
                pose = msg.pose.pose if topics.pose_type == 'odometry' else msg.pose
                p, q = pose.position, pose.orientation
                done = builder.add_pose(
                    _ns(msg.header.stamp),
                    msg.header.frame_id,
                    (p.x, p.y, p.z),
                    (q.x, q.y, q.z, q.w),
                )
            else:
                done = builder.add_image(
                    _ns(msg.header.stamp), len(msg.data), _encoder(msg, topics, jpeg_quality)
                )
            _store(done, memory, report)
        _store(builder.poll(flush=True), memory, report)
    report.counts.update(builder.counts)
    report.seconds = time.monotonic() - started
    return report


def _encoder(msg, topics: BagTopics, quality: int):
    if topics.image_type == 'compressed':
        return lambda: compressed_to_jpeg(msg.format, bytes(msg.data), quality)
    # An encoding the stack cannot read makes the whole bag unusable: say so at once.
    check_encoding(msg.encoding)
    return lambda: raw_to_jpeg(
        msg.encoding, msg.width, msg.height, msg.step, bytes(msg.data), quality
    )


def _store(keyframes: list[Keyframe], memory: MemoryService, report: IngestReport) -> None:
    for keyframe in keyframes:
        report.keyframes += 1
        try:
            memory.ingest(keyframe)
        except RefusedError as error:  # a stamp already stored with other content
            report.counts[f'keyframes_{error.reason}'] += 1
            report.errors.append(str(error))
            continue
        except ValueError as error:
            report.counts['keyframes_undecodable'] += 1
            report.errors.append(str(error))
            continue
        report.ingested += 1


def _ns(stamp) -> int:
    return int(stamp.sec) * NS_PER_S + int(stamp.nanosec)
