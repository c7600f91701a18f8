# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""From a camera stream and a pose stream to keyframes, independent of ROS.

capture_node feeds it messages; offline tools feed it a bag directly. Both get the same
keyframes from the same input, which is what lets an evaluation trust either path.

Poses arrive faster than images and on their own clock grid, so each image gets the pose
interpolated at its own stamp. Images may run ahead of the poses (the streams are
delivered independently, and a fast replay takes one message per stream at a time), so an
image waits while poses keep coming; a stalled pose stream or the memory bound places it
early. An image without a pose close enough in time is dropped and counted: a guessed
position would poison memory for good.
"""

from __future__ import annotations

import math
import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone

from waymark.geometry import InvalidPoseError, Pose, PoseBuffer
from waymark.memory.entries import Keyframe, check_session_name
from waymark.memory.keyframes import KeyframePolicy, KeyframeSelector

NS_PER_S = 1_000_000_000

# Produces the JPEG bytes of an image on demand (only keyframes are ever encoded);
# raises ValueError when the image cannot be decoded.
Encoder = Callable[[], bytes]


@dataclass(frozen=True)
class CaptureConfig:
    session: str = ''  # empty: named after the first keyframe's time (UTC)
    map_frame: str = 'map'
    camera_extrinsic: Pose = field(default_factory=Pose)  # camera pose in the base frame
    max_pose_gap_s: float = 0.2
    max_pose_wait_s: float = 0.5
    pending_bytes_max: int = 256 << 20
    pose_buffer_size: int = 10000
    policy: KeyframePolicy = field(default_factory=KeyframePolicy)

    def __post_init__(self) -> None:
        if self.session:
            check_session_name(self.session)
        if not (self.max_pose_gap_s > 0 and self.max_pose_wait_s >= 0):
            raise ValueError('max_pose_gap_s must be > 0 and max_pose_wait_s >= 0')
        if self.pending_bytes_max < 1:
            raise ValueError('pending_bytes_max must be >= 1')


class KeyframeBuilder:
    """Pairs images with interpolated poses and keeps the ones the policy selects.

    Every call returns the keyframes it completed, in time order. `counts` says what
    happened to every input, by reason; `warn` receives a message when a kind of drop
    happens for the 1st, 2nd, 4th, 8th... time.
    """

    def __init__(
        self,
        config: CaptureConfig,
        warn: Callable[[str], None] = lambda _message: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.session = config.session
        self.counts: Counter[str] = Counter()
        self._warn = warn
        self._clock = clock
        self._max_gap_ns = round(config.max_pose_gap_s * NS_PER_S)
        self._poses = PoseBuffer(capacity=config.pose_buffer_size)
        self._selector = KeyframeSelector(config.policy)
        self._index = 0
        self._last_image_ns: int | None = None
        self._pending: deque[tuple[int, int, Encoder]] = deque()
        self._pending_bytes = 0
        self._last_input = clock()

    @property
    def pending_images(self) -> int:
        return len(self._pending)

    @property
    def buffered_poses(self) -> int:
        return len(self._poses)

    def add_pose(
        self,
        stamp_ns: int,
        frame_id: str,
        position: Sequence[float],
        orientation: Sequence[float],
    ) -> list[Keyframe]:
        self.counts['poses_received'] += 1
        if frame_id and frame_id != self.config.map_frame:
            self._drop(
                'pose_wrong_frame',
                f'pose in frame {frame_id!r}, expected {self.config.map_frame!r}',
            )
            return []
        try:
            pose = Pose.checked(position, orientation)
        except InvalidPoseError as error:
            self._drop('pose_invalid', str(error))
            return []
        if not self._poses.add(stamp_ns, pose):
            self.counts['pose_time_reset'] += 1
            self._selector.reset()
            self._warn('pose time went backwards: pose buffer reset')
        self._last_input = self._clock()
        return self.poll()

    def add_image(self, stamp_ns: int, size: int, encode: Encoder) -> list[Keyframe]:
        self.counts['images_received'] += 1
        if self._last_image_ns is not None and stamp_ns < self._last_image_ns:
            self.counts['image_time_reset'] += 1
            self._selector.reset()
            self._warn('image time went backwards: keyframe selection restarted')
        self._last_image_ns = stamp_ns
        if not self._pending:
            self._last_input = self._clock()
        self._pending.append((stamp_ns, size, encode))
        self._pending_bytes += size
        return self.poll()

    def poll(self, flush: bool = False) -> list[Keyframe]:
        """Place the waiting images whose pose is known, or all of them with `flush`
        (the end of a recording) or once the pose stream has stalled."""
        stalled = flush or self._clock() - self._last_input >= self.config.max_pose_wait_s
        done = []
        while self._pending:
            stamp_ns, size, encode = self._pending[0]
            newest = self._poses.newest_stamp
            ready = newest is not None and newest >= stamp_ns
            overflow = self._pending_bytes > self.config.pending_bytes_max
            if not (ready or stalled or overflow):
                break
            if overflow and not ready:
                self.counts['image_pending_overflow'] += 1
            self._pending.popleft()
            self._pending_bytes -= size
            keyframe = self._place(stamp_ns, encode)
            if keyframe is not None:
                done.append(keyframe)
        return done

    def _place(self, stamp_ns: int, encode: Encoder) -> Keyframe | None:
        base = self._poses.lookup(stamp_ns, self._max_gap_ns)
        if base is None:
            self._drop(
                'image_without_pose',
                f'no pose within {self._max_gap_ns / 1e6:.0f} ms of the image at {stamp_ns}',
            )
            return None
        camera = base.compose(self.config.camera_extrinsic)
        if not self._selector.wants(stamp_ns, camera):
            return None
        try:
            jpeg = encode()
        except ValueError as error:
            self._drop('image_undecodable', str(error))
            return None
        if not self.session:
            stamp = datetime.fromtimestamp(stamp_ns / NS_PER_S, tz=timezone.utc)
            self.session = stamp.strftime('run-%Y%m%dT%H%M%SZ')
        keyframe = Keyframe(
            session=self.session,
            index=self._index,
            stamp_ns=stamp_ns,
            pose=camera,
            pose_valid=True,
            map_epoch=0,
            image=jpeg,
            frame_id=self.config.map_frame,
        )
        self._selector.accept(stamp_ns, camera)
        self._index += 1
        self.counts['keyframes_published'] += 1
        return keyframe

    def _drop(self, reason: str, detail: str) -> None:
        self.counts[reason] += 1
        if math.log2(self.counts[reason]).is_integer():
            self._warn(f'{detail} (dropped {self.counts[reason]} so far)')
