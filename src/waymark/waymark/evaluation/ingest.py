# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Direct ingest: a rosbag2 read with rosbags and fed through the same core code the
nodes run (KeyframeBuilder, MemoryService), without DDS. For large offline runs.

Messages are taken in the bag's order and the pose stream never "stalls" (there is no
wall clock in a file), so the keyframes are those the nodes make from a lossless replay.
The clocks of images and poses are checked as capture_node checks them, with the bag's
receive times as the arrival times.
A depth topic, when the bag has it, is paired with the images as capture_node pairs it.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

from rosbags.highlevel import AnyReader
from tqdm import tqdm

from waymark.evaluation.sensors import DEPTH_TYPE, Intrinsics
from waymark.memory.entries import CameraModel, Keyframe
from waymark.memory.ingest.admission import RefusedError
from waymark.memory.ingest.capture import CaptureConfig, KeyframeBuilder
from waymark.memory.ingest.depth import depth_of_message
from waymark.memory.service import MemoryService
from waymark.memory.storage.image_codec import (
    ImageLimits,
    check_encoding,
    check_image_limits,
    compressed_to_jpeg,
    raw_to_jpeg,
)

IMAGE_TYPES = {
    'sensor_msgs/msg/CompressedImage': 'compressed',
    'sensor_msgs/msg/Image': 'raw',
}
POSE_TYPES = {
    'nav_msgs/msg/Odometry': 'odometry',
    'geometry_msgs/msg/PoseStamped': 'pose_stamped',
    'geometry_msgs/msg/PoseWithCovarianceStamped': 'pose_with_covariance',
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
    depth: str = ''  # '' when the bag has no depth topic asked for


@dataclass
class IngestReport:
    topics: BagTopics
    keyframes: int = 0
    ingested: int = 0
    seconds: float = 0.0
    counts: Counter = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    clock: dict = field(default_factory=dict)  # the clock check's summary


def find_topics(
    available: dict[str, str], image_topic: str | None = None, pose_topic: str | None = None
) -> BagTopics:
    """The camera and pose topics to use: the ones named, or the only ones of their kind."""
    image = _pick(available, image_topic, IMAGE_TYPES, 'camera', '--image-topic')
    pose = _pick(available, pose_topic, POSE_TYPES, 'pose', '--pose-topic')
    return BagTopics(image, IMAGE_TYPES[available[image]], pose, POSE_TYPES[available[pose]])


def _pick(
    available: dict[str, str], wanted: str | None, kinds: dict[str, str], what: str, flag: str
) -> str:
    listing = ', '.join(f'{t} [{m}]' for t, m in sorted(available.items())) or 'no topics'
    if wanted is not None:
        if available.get(wanted) not in kinds:
            raise BagTopicError(
                f'{what} topic {wanted} is not in the bag with a supported type '
                f'({", ".join(kinds)}); pass {flag} TOPIC; the bag has: {listing}'
            )
        return wanted
    candidates = [t for t, m in sorted(available.items()) if m in kinds]
    if len(candidates) != 1:
        found = 'none' if not candidates else 'several: ' + ', '.join(candidates)
        raise BagTopicError(
            f'cannot choose the {what} topic ({found}); pass {flag} TOPIC; the bag has: {listing}'
        )
    return candidates[0]


def ingest_bag(
    bag: Path,
    memory: MemoryService,
    config: CaptureConfig,
    *,
    image_topic: str | None = None,
    pose_topic: str | None = None,
    depth_topic: str | None = None,
    jpeg_quality: int = 90,
    progress: bool = False,
    intrinsics: Intrinsics | None = None,
) -> IngestReport:
    """Feed the bag through capture and memory. With `intrinsics`, every keyframe carries
    the camera model they give for its image size, so that records have a sighting for
    target localisation (capture_node takes it from CameraInfo in the same way).
    `depth_topic` (the preset's) is used when the bag has it as a sensor_msgs/Image; a bag
    recorded without depth ingests as before."""
    started = time.monotonic()
    cameras = _Cameras(intrinsics) if intrinsics is not None else None
    with AnyReader([Path(bag)]) as reader:
        available = {c.topic: c.msgtype for c in reader.connections}
        # The depth images are no candidate for the camera topic.
        candidates = {t: m for t, m in available.items() if t != depth_topic}
        topics = find_topics(candidates, image_topic, pose_topic)
        if depth_topic and available.get(depth_topic) == DEPTH_TYPE:
            topics = replace(topics, depth=depth_topic)
        builder = KeyframeBuilder(replace(config, pair_depth=bool(topics.depth)), clock=lambda: 0.0)
        report = IngestReport(topics)
        wanted = (topics.image, topics.pose, topics.depth)
        connections = [c for c in reader.connections if c.topic in wanted]
        total = sum(c.msgcount for c in connections)
        messages = reader.messages(connections=connections)
        for connection, received_ns, raw in tqdm(
            messages, total=total, disable=not progress, unit='msg'
        ):
            msg = reader.deserialize(raw, connection.msgtype)
            if connection.topic == topics.pose:
                # PoseStamped carries no covariance; the others carry the one the
                # tracking gate reads, as capture_node does.
                if topics.pose_type == 'pose_stamped':
                    pose, covariance = msg.pose, None
                else:
                    pose, covariance = msg.pose.pose, msg.pose.covariance
                p, q = pose.position, pose.orientation
                done = builder.add_pose(
                    _ns(msg.header.stamp),
                    msg.header.frame_id,
                    (p.x, p.y, p.z),
                    (q.x, q.y, q.z, q.w),
                    covariance,
                    received_ns=received_ns,
                )
            elif connection.topic == topics.depth:
                done = builder.add_depth(_ns(msg.header.stamp), partial(depth_of_message, msg))
            else:
                done = builder.add_image(
                    _ns(msg.header.stamp),
                    len(msg.data),
                    _encoder(msg, topics, jpeg_quality),
                    received_ns=received_ns,
                )
            _store(done, memory, report, cameras)
        _store(builder.poll(flush=True), memory, report, cameras)
    report.counts.update(builder.counts)
    report.clock = builder.clocks.summary()
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


class _Cameras:
    """The camera model of each image size seen, made once."""

    def __init__(self, intrinsics: Intrinsics) -> None:
        self.intrinsics = intrinsics
        self._models: dict[tuple[int, int], CameraModel] = {}

    def attach(self, keyframe: Keyframe) -> Keyframe:
        """The keyframe with its camera model; unchanged when its image has no readable
        header (memory then refuses it with the reason)."""
        try:
            size = check_image_limits(keyframe.image, ImageLimits())
        except ValueError:
            return keyframe
        if size not in self._models:
            self._models[size] = self.intrinsics.camera_model(*size)
        return dataclasses.replace(keyframe, camera=self._models[size])


def _store(
    keyframes: list[Keyframe],
    memory: MemoryService,
    report: IngestReport,
    cameras: _Cameras | None = None,
) -> None:
    for keyframe in keyframes:
        report.keyframes += 1
        if cameras is not None and keyframe.camera is None:
            keyframe = cameras.attach(keyframe)
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


# Pose drops by capture's count name -> the reason the summary gives.
POSE_REJECTIONS = {
    'pose_wrong_frame': 'not in the map frame',
    'pose_invalid': 'not a pose (NaN or zero quaternion)',
    'pose_tracking_lost': 'tracking lost (covariance)',
}


def summarize(counts: dict) -> dict:
    """What became of the bag's images and poses, from capture's counts and its clock
    check's summary (either build)."""
    keyframes = counts.get('keyframes_published', 0)
    received = counts.get('poses_received', 0)
    rejected = {reason: counts.get(name, 0) for name, reason in POSE_REJECTIONS.items()}
    return {
        'images': counts.get('images_received', 0),
        'keyframes': keyframes,
        'keyframes_pose_valid': keyframes - counts.get('keyframes_pose_invalid', 0),
        'images_without_pose': counts.get('image_without_pose', 0),
        'poses': received,
        'poses_accepted': received - sum(rejected.values()),
        'poses_rejected': {reason: n for reason, n in rejected.items() if n},
        'tracking_lost_spans': counts.get('tracking_lost_events', 0),
        'keyframes_with_depth': counts.get('keyframes_with_depth', 0),
        'clocks_disagree': counts.get('clocks_disagree'),
        'clock_offset_s': counts.get('clock_offset_s'),
        'clock_largest_offset_s': counts.get('clock_largest_offset_s'),
        'clock_max_offset_s': counts.get('clock_max_offset_s'),
        'images_clock_mismatch': counts.get('images_clock_mismatch', 0),
        'poses_clock_mismatch': counts.get('pose_clock_mismatch', 0),
    }


def clock_line(summary: dict) -> str:
    """What the clock check found: the offset of the image clock from the pose clock,
    flagged when it was past the limit at any time; '' in a report from before the check."""
    largest, limit = summary.get('clock_largest_offset_s'), summary.get('clock_max_offset_s')
    if limit is None:
        return ''
    if not limit:
        return 'clocks: not checked (clock.max_offset_s 0)'
    if largest is None:
        return 'clocks: not measured (too few messages, or not received as stamped)'
    flagged = summary.get('images_clock_mismatch', 0) or abs(largest) > limit
    head = (
        f'clocks: image minus pose {summary["clock_offset_s"]:+.3f} s at the end, '
        f'largest {largest:+.3f} s'
    )
    if not flagged:
        return f'{head}, within clock.max_offset_s {limit:g} s'
    return (
        f'{head}: PAST clock.max_offset_s {limit:g} s, {summary["images_clock_mismatch"]} '
        'images got no pose; synchronise the clocks (PTP for the lidar, chrony for the '
        'computers: docs/clocks.md)'
    )


def summary_lines(summary: dict, sensors: dict) -> list[str]:
    """The ingest summary for people: one fact a line."""
    rejected = ', '.join(f'{n} {reason}' for reason, n in summary['poses_rejected'].items())
    intrinsics = sensors['intrinsics']
    return [
        f'images: {summary["images"]} on {sensors["image_topic"]}',
        f'keyframes: {summary["keyframes"]} kept, {summary["keyframes_pose_valid"]} '
        f'with a valid pose',
        f'poses: {summary["poses"]} on {sensors["pose_topic"]}, '
        f'{summary["poses_accepted"]} accepted' + (f', rejected: {rejected}' if rejected else ''),
        f'map frame: {sensors["map_frame"]} (from {sensors["map_frame_from"]}); '
        f'poses by frame: {sensors["pose_frames"] or "none"}',
        f'tracking lost: {summary["tracking_lost_spans"]} spans',
        f'camera extrinsic: {sensors["camera_extrinsic"]} '
        f'(from {sensors["camera_extrinsic_from"]})',
        f'intrinsics: horizontal field of view {intrinsics["hfov_deg"]:.1f} deg '
        f'(from {intrinsics["source"]})',
        f'depth: {summary.get("keyframes_with_depth", 0)} keyframes ranged from '
        f'{sensors.get("depth_topic") or "no topic"} (from {sensors.get("depth_topic_from")})',
        *filter(None, [clock_line(summary)]),
    ]


def ingest_problem(summary: dict, sensors: dict, min_valid_share: float) -> str:
    """Why memory built from the bag is not worth evaluating, naming the fix; '' if it is."""
    keyframes, valid = summary['keyframes'], summary['keyframes_pose_valid']
    if keyframes and valid >= min_valid_share * keyframes:
        return ''
    if not summary['images']:
        return f'no images were read from {sensors["image_topic"]}: pass --image-topic'
    head = f'{valid} of {keyframes} keyframes have a valid pose'
    map_frame, poses = sensors['map_frame'], summary['poses']
    others = {f: n for f, n in sensors['pose_frames'].items() if f and f != map_frame}
    wrong = summary['poses_rejected'].get(POSE_REJECTIONS['pose_wrong_frame'], 0)
    if others and 2 * wrong >= poses:
        seen = max(others, key=others.get)
        return (
            f'{head}: {wrong} of {poses} poses are in frame {seen!r}, not the map frame '
            f'{map_frame!r} (from {sensors["map_frame_from"]}); pass --map-frame {seen} '
            f'or a --preset whose map frame it is'
        )
    if not poses:
        return f'{head}: no poses were read from {sensors["pose_topic"]}: pass --pose-topic'
    if 2 * summary.get('images_clock_mismatch', 0) >= summary['images']:
        return f'{head}: {clock_line(summary)}'
    lost = summary['poses_rejected'].get(POSE_REJECTIONS['pose_tracking_lost'], 0)
    if 2 * lost >= poses:
        return (
            f'{head}: {lost} of {poses} poses say tracking was lost (position variance '
            f'above tracking.max_position_variance, or NaN); check the SLAM or the preset'
        )
    return (
        f'{head}: {summary["images_without_pose"]} images had no pose within '
        f'max_pose_gap_s of their stamp; check that images and poses share a clock, '
        f'or raise max_pose_gap_s in the preset'
    )
