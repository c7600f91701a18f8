# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""From a camera stream and a pose stream to keyframes, independent of ROS.

capture_node feeds it messages; offline tools feed it a bag directly. Both get the same
keyframes from the same input, which is what lets an evaluation trust either path.

Poses arrive faster than images and on their own clock grid, so each image gets the pose
interpolated at its own stamp. Images may run ahead of the poses (the streams are
delivered independently, and a fast replay takes one message per stream at a time), so an
image waits while poses keep coming; a stalled pose stream or the memory bound places it
early.

Positions are never guessed: a guessed position would poison memory for good. While SLAM
has lost track (a pose covariance with NaN or too large a position variance, a tracking
status that says so, or no pose near the image at all) frames are still kept, selected
by time (one per `max_interval_s`) and image change only, with `pose_valid=False` and an
identity pose: what was seen and when stays searchable, and no goal is ever made of them.
One per `max_interval_s` rather than per `min_interval_s`, because frames without a
position cannot be told apart by where they were taken, compete in search with located
ones and cannot produce a goal; the image criterion, when on, adds the views that do
differ.

Poses are only comparable within one map epoch. A new epoch starts when the pose time
goes backwards, when the pose jumps faster than `max_speed_mps` (a SLAM reset or
relocalisation into another frame), or when asked (`new_map_epoch`). The pose buffer then
restarts, so no pose is ever interpolated across two epochs, and each keyframe carries
the epoch it was taken in. Epochs count per capture session (a restarted node continues
from `map_epoch_start`, or from its saved state: see `resume`).

Keyframes carry what localisation needs of their image: the camera intrinsics (the
latest CameraInfo given, else derived from `camera_hfov_deg` and the image size) and, with
a depth stream (`pair_depth`), a coarse depth grid. Depth images are reduced to that grid
(waymark.memory.ingest.depth) as they come and only the grids are kept; a keyframe takes
the one nearest its stamp within `depth_max_gap_s`. With depth on, an image also waits for
a depth image stamped at or after it, at most `max_pose_wait_s` (the two streams of one
camera arrive in either order), once the depth stream has begun.

Images and poses must be stamped by one clock (waymark.memory.ingest.clocks checks it
from their arrival times). An image from another clock than the poses, or any image while
the clocks are found to disagree, gets no pose and waits for none: it is kept like a frame
seen while tracking is lost (`images_clock_mismatch`), and a pose from another clock than
the images is dropped (`pose_clock_mismatch`), so no image is ever paired with a pose
taken at another moment.

Every store here is bounded: waiting images by their bytes (`pending_bytes_max`, each
counted as at least MIN_IMAGE_BYTES), poses and lost-tracking marks by `pose_buffer_size`,
depth grids by `depth_buffer_size`, the selector by its one reference frame.
"""

from __future__ import annotations

import bisect
import math
import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone

import numpy as np

from waymark.geometry import InvalidPoseError, Pose, PoseBuffer
from waymark.memory.entries import (
    CameraModel,
    DepthSamples,
    Keyframe,
    check_robot_id,
    check_session_name,
)
from waymark.memory.ingest.clocks import ClockCheck, ClockCheckConfig
from waymark.memory.ingest.depth import DepthGrid
from waymark.memory.ingest.keyframes import KeyframePolicy, KeyframeSelector, Thumbnail
from waymark.memory.ingest.outbox import CaptureState
from waymark.memory.storage.image_codec import (
    ImageDecodeError,
    ImageLimits,
    check_image_limits,
    compressed_thumbnail,
)

NS_PER_S = 1_000_000_000
MAX_EPOCH = 2**32 - 1  # Keyframe.msg carries map_epoch as uint32
# A waiting image counts as at least this many bytes, so that empty or tiny messages
# cannot pile up without bound under the byte limit.
MIN_IMAGE_BYTES = 1024

# Produces the JPEG bytes of an image on demand (only keyframes are ever encoded);
# raises ValueError when the image cannot be decoded.
Encoder = Callable[[], bytes]
# Produces a depth image's pixels and the factor from their unit to metres on demand;
# raises ValueError when it cannot be decoded.
DepthDecoder = Callable[[], tuple[np.ndarray, float]]


@dataclass(frozen=True)
class CaptureConfig:
    session: str = ''  # empty: named after the first keyframe's time (UTC)
    # Put into derived session names ("<robot>-run-<time>"), so robots sharing one memory
    # never derive the same name; '' for none.
    robot_id: str = ''
    map_frame: str = 'map'
    camera_extrinsic: Pose = field(default_factory=Pose)  # camera pose in the base frame
    max_pose_gap_s: float = 0.2
    max_pose_wait_s: float = 0.5
    pending_bytes_max: int = 256 << 20
    pose_buffer_size: int = 10000
    policy: KeyframePolicy = field(default_factory=KeyframePolicy)
    # Tracking is lost while a pose's position variance (m^2, largest of xx, yy, zz) is
    # above this; 0: off. A NaN covariance always means lost, an all-zero one "unknown".
    max_position_variance: float = 1.0
    # A faster move between poses (m/s) is a jump of the SLAM frame: a new map epoch. 0: off.
    max_speed_mps: float = 5.0
    map_epoch_start: int = 0
    # Intrinsics from the field of view (deg) and the image size while no CameraInfo
    # came; 0: none.
    camera_hfov_deg: float = 0.0
    # A depth stream pairs with the images: images wait for it, keyframes carry its grid.
    pair_depth: bool = False
    depth_grid: DepthGrid = field(default_factory=DepthGrid)
    depth_max_gap_s: float = 0.05
    depth_buffer_size: int = 60
    clock: ClockCheckConfig = field(default_factory=ClockCheckConfig)

    def __post_init__(self) -> None:
        if self.session:
            check_session_name(self.session)
        check_robot_id(self.robot_id)
        if not 0.0 <= self.camera_hfov_deg < 180.0:
            raise ValueError(f'camera_hfov_deg must be in [0, 180), got {self.camera_hfov_deg}')
        if not (self.depth_max_gap_s > 0 and self.depth_buffer_size >= 1):
            raise ValueError('depth_max_gap_s must be > 0 and depth_buffer_size >= 1')
        if not (self.max_pose_gap_s > 0 and self.max_pose_wait_s >= 0):
            raise ValueError('max_pose_gap_s must be > 0 and max_pose_wait_s >= 0')
        if self.pending_bytes_max < 1:
            raise ValueError('pending_bytes_max must be >= 1')
        for name in ('max_position_variance', 'max_speed_mps'):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f'{name} must be a finite number >= 0 (0: off), got {value}')
        if not 0 <= self.map_epoch_start <= MAX_EPOCH:
            raise ValueError(f'map_epoch_start must be in [0, {MAX_EPOCH}]')


def covariance_problem(covariance: Sequence[float] | None, max_position_variance: float) -> str:
    """Why a pose covariance (6x6, row major) says tracking is lost; '' when it does not.

    All zeros is what sources without an estimate publish: unknown, not lost.
    """
    if covariance is None:
        return ''
    values = np.asarray(covariance, dtype=float).reshape(-1)
    if values.size != 36:
        return f'pose covariance has {values.size} values, expected 36'
    if not np.all(np.isfinite(values)):
        return 'NaN or infinite pose covariance'
    variances = values[[0, 7, 14]]
    if np.any(variances < 0):
        return f'negative position variance {variances.tolist()}'
    largest = float(variances.max())
    if max_position_variance and largest > max_position_variance:
        return f'position variance {largest:.3g} m^2 above {max_position_variance:g}'
    return ''


class _Image:
    """A waiting image. JPEG and thumbnail are made at most once each, and only if needed."""

    __slots__ = (
        '_encode',
        '_jpeg',
        '_thumbnail',
        '_thumbnail_of',
        'arrived',
        'other_clock',
        'size',
        'stamp_ns',
        'status_lost',
        'timeline',
    )

    def __init__(
        self,
        stamp_ns: int,
        size: int,
        encode: Encoder,
        thumbnail: Thumbnail | None,
        status_lost: bool,
        timeline: int,
        arrived: float,
    ) -> None:
        self.stamp_ns = stamp_ns
        self.arrived = arrived  # clock time: bounds the wait for a depth image
        self.size = max(size, MIN_IMAGE_BYTES)
        self.status_lost = status_lost  # the tracking status said lost when it arrived
        self.timeline = timeline  # image time resets before it: tells loops apart
        self.other_clock = False  # stamped by another clock than the poses
        self._encode = encode
        self._thumbnail_of = thumbnail
        self._jpeg: bytes | None = None
        self._thumbnail: np.ndarray | None = None

    def jpeg(self) -> bytes:
        if self._jpeg is None:
            self._jpeg = self._encode()
        return self._jpeg

    def thumbnail(self) -> np.ndarray:
        # Without a cheaper way from the source, from the JPEG (made for keyframes anyway).
        if self._thumbnail is None:
            if self._thumbnail_of is not None:
                self._thumbnail = self._thumbnail_of()
            else:
                self._thumbnail = compressed_thumbnail(self.jpeg())
        return self._thumbnail


class KeyframeBuilder:
    """Pairs images with interpolated poses and keeps the ones the policy selects.

    Every call returns the keyframes it completed, in time order. `counts` says what
    happened to every input, by reason; `warn` receives a message when a kind of drop
    happens for the 1st, 2nd, 4th, 8th... time, and when tracking is lost (also 1st,
    2nd, 4th... time); `info` when tracking recovers or a map epoch begins.
    """

    def __init__(
        self,
        config: CaptureConfig,
        warn: Callable[[str], None] = lambda _message: None,
        clock: Callable[[], float] = time.monotonic,
        info: Callable[[str], None] = lambda _message: None,
    ) -> None:
        self.config = config
        self.session = config.session
        self.map_epoch = config.map_epoch_start
        self.counts: Counter[str] = Counter()
        self._warn = warn
        self._info = info
        self._clock = clock
        self._max_gap_ns = round(config.max_pose_gap_s * NS_PER_S)
        self._poses = PoseBuffer(capacity=config.pose_buffer_size)
        # Stamps of poses that could not be trusted (bad covariance, NaN), in time order.
        self._lost: deque[int] = deque(maxlen=config.pose_buffer_size)
        self._newest_pose_ns: int | None = None  # any pose in the map frame, trusted or not
        self._selector = KeyframeSelector(config.policy)
        self._index = 0
        self._newest_ns: int | None = None  # newest keyframe stamp
        self._resumed_from_ns: int | None = None  # set by resume with a rewind limit
        self._last_image_ns: int | None = None
        self._image_timeline = 0
        self._timeline_at_pose_reset = 0
        self._pending: deque[_Image] = deque()
        self._pending_bytes = 0
        self._last_input = clock()
        self._quiet_seen = False  # the previous poll already found the pose stream quiet
        # Why tracking is lost, per source; '' is fine.
        self._status_lost = ''
        self._covariance_lost = ''
        self._image_lost = ''
        self._lost_reason = ''
        self._camera_info: CameraModel | None = None
        # Depth grids with their stamp and depth image size, in arrival order.
        self._depths: deque[tuple[int, tuple[int, int], DepthSamples]] = deque(
            maxlen=config.depth_buffer_size
        )
        self._newest_depth_ns: int | None = None
        self._depth_max_gap_ns = round(config.depth_max_gap_s * NS_PER_S)
        self.clocks = ClockCheck(config.clock)

    @property
    def pending_images(self) -> int:
        return len(self._pending)

    @property
    def pending_bytes(self) -> int:
        return self._pending_bytes

    @property
    def buffered_poses(self) -> int:
        return len(self._poses)

    @property
    def tracking_lost(self) -> str:
        """Why tracking is lost now ('' while it is not)."""
        return self._lost_reason

    @property
    def state(self) -> CaptureState | None:
        """What a restart needs to continue this session; None before the first keyframe."""
        if self._newest_ns is None:
            return None
        return CaptureState(self.session, self._index, self.map_epoch, self._newest_ns)

    def set_policy(self, policy: KeyframePolicy) -> None:
        """Select keyframes by `policy` from the next frame on (the reference frame stays)."""
        self.config = replace(self.config, policy=policy)
        self._selector.policy = policy

    def resume(self, state: CaptureState, rewind_s: float | None = None) -> None:
        """Continue a saved session from its next index, in a new map epoch: the pose
        buffer starts empty and SLAM may have restarted too, so positions are not known to
        be comparable. With `rewind_s`, a first keyframe stamped more than that before the
        saved newest one (another recording, a bag played again) starts a new session."""
        self.session = state.session
        self._index = state.next_index
        self._newest_ns = state.last_stamp_ns
        self.map_epoch = min(max(state.map_epoch + 1, self.config.map_epoch_start), MAX_EPOCH)
        if rewind_s is not None:
            self._resumed_from_ns = state.last_stamp_ns - round(rewind_s * NS_PER_S)

    def add_pose(
        self,
        stamp_ns: int,
        frame_id: str,
        position: Sequence[float],
        orientation: Sequence[float],
        covariance: Sequence[float] | None = None,
        received_ns: int | None = None,
    ) -> list[Keyframe]:
        """Take a pose; `received_ns` is when it arrived (default: now on the clock given),
        on the same clock as the images' arrival."""
        self.counts['poses_received'] += 1
        if frame_id and frame_id != self.config.map_frame:
            self._drop(
                'pose_wrong_frame',
                f'pose in frame {frame_id!r}, expected {self.config.map_frame!r}',
            )
            return []
        if self.clocks.add_pose(stamp_ns, self._received(received_ns)):
            self._heard()  # counted, not warned of: the clock check is reported as a whole
            self.counts['pose_clock_mismatch'] += 1
            return self._release()
        done = []
        if self._newest_pose_ns is not None and stamp_ns < self._newest_pose_ns:
            self.counts['pose_time_reset'] += 1
            # Images from before an image time reset belong to the old timeline; if the
            # images have not looped yet, all the waiting ones do.
            looped = self._image_timeline > self._timeline_at_pose_reset
            current = self._image_timeline
            self._timeline_at_pose_reset = current
            done += self._new_epoch(
                'pose time went backwards',
                lambda image: not looped or image.timeline < current,
            )
        self._newest_pose_ns = stamp_ns
        self._heard()
        try:
            pose = Pose.checked(position, orientation)
        except InvalidPoseError as error:
            # Not a position, and a sign that SLAM is in trouble: nearby images get none.
            self._lost.append(stamp_ns)
            self._drop('pose_invalid', str(error))
            return done + self._release()
        problem = covariance_problem(covariance, self.config.max_position_variance)
        self._covariance_lost = problem
        if problem:
            self.counts['pose_tracking_lost'] += 1
            self._lost.append(stamp_ns)
        else:
            jump = self._jump(stamp_ns, pose)
            if jump:
                self.counts['pose_jump'] += 1
                done += self._new_epoch(jump, lambda image: image.stamp_ns < stamp_ns)
            self._poses.add(stamp_ns, pose)
        self._update_tracking()
        return done + self._release()

    def add_image(
        self,
        stamp_ns: int,
        size: int,
        encode: Encoder,
        thumbnail: Thumbnail | None = None,
        received_ns: int | None = None,
    ) -> list[Keyframe]:
        """Queue an image. `thumbnail`, for the image criterion, is made from the JPEG
        when not given; a source that can make it cheaper (a reduced decode) gives it.
        `received_ns`: as for add_pose."""
        self.counts['images_received'] += 1
        other_clock = self.clocks.add_image(stamp_ns, self._received(received_ns))
        if self._last_image_ns is not None and stamp_ns < self._last_image_ns:
            self.counts['image_time_reset'] += 1
            self._image_timeline += 1
            self._selector.reset()
            self._warn('image time went backwards: keyframe selection restarted')
        self._last_image_ns = stamp_ns
        if not self._pending:
            self._heard()
        lost = bool(self._status_lost)
        image = _Image(stamp_ns, size, encode, thumbnail, lost, self._image_timeline, self._clock())
        image.other_clock = other_clock
        self._pending.append(image)
        self._pending_bytes += image.size
        return self._release()

    def set_camera_info(self, width: int, height: int, k: Sequence[float]) -> None:
        """The camera's intrinsics (a CameraInfo's size and 3x3 K, row major), used for
        the keyframes from now on. An invalid one (all zeros, as an uncalibrated driver
        sends, or NaN) is ignored, with a warning the first time."""
        try:
            if len(k) != 9:
                raise ValueError(f'K has {len(k)} values, expected 9')
            fx, _, cx, _, fy, cy, *_ = (float(v) for v in k)
            camera = CameraModel(int(width), int(height), fx, fy, cx, cy)
        except ValueError as error:
            self.counts['camera_info_invalid'] += 1
            if self.counts['camera_info_invalid'] == 1:
                self._warn(f'camera info ignored: {error}')
            return
        if camera != self._camera_info:
            self._info(
                f'camera intrinsics {camera.width}x{camera.height} '
                f'fx {camera.fx:.1f} fy {camera.fy:.1f} cx {camera.cx:.1f} cy {camera.cy:.1f}'
            )
        self._camera_info = camera

    def add_depth(self, stamp_ns: int, decode: DepthDecoder) -> list[Keyframe]:
        """Reduce a depth image to its grid at once and keep the grid for the image with
        the nearest stamp; one that cannot be decoded or reduced is counted and skipped."""
        self.counts['depth_received'] += 1
        try:
            pixels, scale = decode()
            samples = self.config.depth_grid.reduce(pixels, scale)
        except ValueError as error:
            self._drop('depth_undecodable', f'depth image skipped: {error}')
            return []
        height, width = pixels.shape
        self._depths.append((stamp_ns, (width, height), samples))
        newest = self._newest_depth_ns
        self._newest_depth_ns = stamp_ns if newest is None else max(newest, stamp_ns)
        return self._release()

    def set_tracking_status(self, ok: bool) -> None:
        """A tracking status from SLAM. It carries no stamp, so it applies to the images
        that arrive while it holds (they wait at most `max_pose_wait_s` for their pose)."""
        self._status_lost = '' if ok else 'tracking status says lost'
        self._update_tracking()

    def new_map_epoch(self, reason: str) -> list[Keyframe]:
        """Start a new map epoch now (SLAM reset its map). The waiting images were taken
        before the request and are placed in the old epoch first."""
        self.counts['map_epoch_requests'] += 1
        return self._new_epoch(reason, lambda _image: True)

    def poll(self, flush: bool = False) -> list[Keyframe]:
        """Place the waiting images whose pose is known, or all of them with `flush`
        (the end of a recording) or once the pose stream has stalled.

        Call it on a timer. Stalled means quiet for `max_pose_wait_s` at two polls in a
        row: a process that was not scheduled for a while finds its own clock far ahead
        at the first poll, before it has read the poses that arrived meanwhile.
        """
        quiet = self._clock() - self._last_input >= self.config.max_pose_wait_s
        stalled = flush or (quiet and self._quiet_seen)
        self._quiet_seen = quiet
        return self._release(stalled)

    def _received(self, received_ns: int | None) -> int:
        return round(self._clock() * NS_PER_S) if received_ns is None else received_ns

    def _other_clock(self, image: _Image) -> bool:
        """The image cannot be paired: stamped by another clock than the poses."""
        return image.other_clock or bool(self.clocks.disagree)

    def _heard(self) -> None:
        self._last_input = self._clock()
        self._quiet_seen = False

    def _release(self, stalled: bool = False) -> list[Keyframe]:
        """Place the waiting images whose pose is known (all of them when `stalled`)."""
        done = []
        while self._pending:
            image = self._pending[0]
            newest = self._newest_pose_ns
            ready = newest is not None and newest >= image.stamp_ns and self._depth_ready(image)
            ready = ready or self._other_clock(image)  # no pose of its clock will come
            overflow = self._pending_bytes > self.config.pending_bytes_max
            if not (ready or stalled or overflow):
                break
            if overflow and not ready:
                self.counts['image_pending_overflow'] += 1
            self._pending.popleft()
            self._pending_bytes -= image.size
            keyframe = self._place(image)
            if keyframe is not None:
                done.append(keyframe)
        return done

    def _depth_ready(self, image: _Image) -> bool:
        """No depth is expected, or its depth came (or never will: a depth image stamped
        after it, or waited `max_pose_wait_s`). A depth stream not heard from yet (not
        recorded, driver not up) holds nothing up."""
        newest = self._newest_depth_ns
        if not self.config.pair_depth or newest is None or newest >= image.stamp_ns:
            return True
        return self._clock() - image.arrived >= self.config.max_pose_wait_s

    def _new_epoch(self, reason: str, owed: Callable[[_Image], bool]) -> list[Keyframe]:
        """Close the epoch: place the waiting images it owes with its poses, then restart."""
        done = []
        keep: deque[_Image] = deque()
        for image in self._pending:
            if owed(image):
                self._pending_bytes -= image.size
                keyframe = self._place(image)
                if keyframe is not None:
                    done.append(keyframe)
            else:
                keep.append(image)
        self._pending = keep
        self.map_epoch = min(self.map_epoch + 1, MAX_EPOCH)
        self._poses.clear()
        self._lost.clear()
        self._selector.reset()
        self._warn(f'{reason}: map epoch {self.map_epoch} begins, pose buffer restarted')
        return done

    def _jump(self, stamp_ns: int, pose: Pose) -> str:
        """Why the pose is a jump of the SLAM frame ('' when it is not).

        Speed is measured from the oldest pose of the last `max_pose_gap_s`, and only over
        at least half of that, not from the previous pose: the millimetre jitter of a
        500 Hz source would read as metres per second. (So a jump in the first
        `max_pose_gap_s` / 2 of an epoch goes unseen.)
        """
        if not self.config.max_speed_mps or not len(self._poses):
            return ''
        stamps = self._poses.stamps
        i = bisect.bisect_left(stamps, stamp_ns - self._max_gap_ns)
        if i >= len(stamps) or 2 * (stamp_ns - stamps[i]) < self._max_gap_ns:
            return ''
        dt = (stamp_ns - stamps[i]) / NS_PER_S
        distance = self._poses.poses[i].distance_to(pose)
        if distance <= self.config.max_speed_mps * dt:
            return ''
        return (
            f'pose jumped {distance:.2f} m in {dt * 1e3:.0f} ms '
            f'(faster than max_speed_mps {self.config.max_speed_mps:g})'
        )

    def _camera_pose(self, image: _Image) -> tuple[Pose | None, str]:
        """The camera pose at the image stamp, or None and why tracking was lost there."""
        if image.status_lost:
            return None, 'tracking status says lost'
        stamp_ns = image.stamp_ns
        valid_gap = self._nearest_gap_ns(self._poses.stamps, stamp_ns)
        lost_gap = self._nearest_gap_ns(self._lost, stamp_ns)
        if lost_gap is not None and (valid_gap is None or lost_gap < valid_gap):
            # The image takes the verdict of the pose nearest to it in time.
            return None, 'pose near the image not trusted'
        base = self._poses.lookup(stamp_ns, self._max_gap_ns)
        if base is None:
            self.counts['image_without_pose'] += 1
            if math.log2(self.counts['image_without_pose']).is_integer():
                self._warn(
                    f'no pose within {self._max_gap_ns / 1e6:.0f} ms of the image at '
                    f'{stamp_ns}: kept without a position if selected '
                    f'({self.counts["image_without_pose"]} so far)'
                )
            return None, 'no pose near the image'
        return base.compose(self.config.camera_extrinsic), ''

    def _nearest_gap_ns(self, stamps: Sequence[int], stamp_ns: int) -> int | None:
        """Time from the stamp to the nearest of `stamps` (sorted), if within the gap."""
        i = bisect.bisect_left(stamps, stamp_ns)
        gaps = [abs(stamps[j] - stamp_ns) for j in (i - 1, i) if 0 <= j < len(stamps)]
        nearest = min(gaps, default=None)
        return nearest if nearest is not None and nearest <= self._max_gap_ns else None

    def _place(self, image: _Image) -> Keyframe | None:
        stamp_ns = image.stamp_ns
        if self._other_clock(image):
            # Not a tracking loss: the clocks are reported on their own.
            camera = None
            self.counts['images_clock_mismatch'] += 1
        else:
            camera, lost = self._camera_pose(image)
            if not image.status_lost:  # the status itself says when it recovers
                self._image_lost = lost
                self._update_tracking()
            if lost:
                self.counts['images_pose_lost'] += 1
        try:
            if not self._selector.wants(stamp_ns, camera, image.thumbnail):
                return None
            jpeg = image.jpeg()
            self._selector.accept(stamp_ns, camera, image.thumbnail)
        except ValueError as error:
            self._drop('image_undecodable', str(error))
            return None
        if self._resumed_from_ns is not None:
            if stamp_ns < self._resumed_from_ns:
                self._info(f'time went back before session {self.session}: a new session')
                self.session, self._index, self._newest_ns = self.config.session, 0, None
                self.map_epoch = self.config.map_epoch_start
                self.counts['sessions_started_by_rewind'] += 1
            self._resumed_from_ns = None
        if not self.session:
            stamp = datetime.fromtimestamp(stamp_ns / NS_PER_S, tz=timezone.utc)
            derived = stamp.strftime('run-%Y%m%dT%H%M%SZ')
            self.session = f'{self.config.robot_id}-{derived}' if self.config.robot_id else derived
        intrinsics = self._intrinsics(jpeg)
        keyframe = Keyframe(
            session=self.session,
            index=self._index,
            stamp_ns=stamp_ns,
            pose=camera if camera is not None else Pose(),
            pose_valid=camera is not None,
            map_epoch=self.map_epoch,
            image=jpeg,
            frame_id=self.config.map_frame,
            camera=intrinsics,
            depth=self._depth_for(stamp_ns, intrinsics),
        )
        self._index += 1
        self._newest_ns = stamp_ns if self._newest_ns is None else max(self._newest_ns, stamp_ns)
        self.counts['keyframes_published'] += 1
        self.counts[f'keyframes_by_{self._selector.reason}'] += 1
        if camera is None:
            self.counts['keyframes_pose_invalid'] += 1
        return keyframe

    def _intrinsics(self, jpeg: bytes) -> CameraModel | None:
        """The CameraInfo's intrinsics when they are of an image this size, else from the
        field of view; None when neither is known."""
        if self._camera_info is None and not self.config.camera_hfov_deg:
            return None
        try:
            # Only the header is read; the keyframe's own JPEG is not subject to input limits.
            width, height = check_image_limits(jpeg, ImageLimits(max_bytes=len(jpeg)))
        except ImageDecodeError as error:
            self._drop('image_size_unknown', f'no intrinsics for a keyframe: {error}')
            return None
        info = self._camera_info
        if info is not None:
            if (info.width, info.height) == (width, height):
                return info
            self._drop(
                'camera_info_size_mismatch',
                f'camera info is for {info.width}x{info.height} images, the image is '
                f'{width}x{height}',
            )
        if self.config.camera_hfov_deg:
            return CameraModel.from_hfov(width, height, self.config.camera_hfov_deg)
        return None

    def _depth_for(self, stamp_ns: int, camera: CameraModel | None) -> DepthSamples | None:
        """The depth grid stamped nearest the image within `depth_max_gap_s`, if its
        depth image was of the same size as the colour image (when that is known)."""
        if not self.config.pair_depth:
            return None
        nearest = min(self._depths, key=lambda depth: abs(depth[0] - stamp_ns), default=None)
        if nearest is None or abs(nearest[0] - stamp_ns) > self._depth_max_gap_ns:
            self.counts['keyframes_without_depth'] += 1
            return None
        _, size, samples = nearest
        if camera is not None and size != (camera.width, camera.height):
            self._drop(
                'depth_size_mismatch',
                f"depth image {size[0]}x{size[1]} is not the colour image's size "
                f'{camera.width}x{camera.height} (not registered to it?)',
            )
            return None
        self.counts['keyframes_with_depth'] += 1
        return samples

    def _update_tracking(self) -> None:
        reason = self._status_lost or self._covariance_lost or self._image_lost
        if reason and not self._lost_reason:
            self.counts['tracking_lost_events'] += 1
            if math.log2(self.counts['tracking_lost_events']).is_integer():
                self._warn(
                    f'tracking lost ({reason}): frames are kept with pose_valid=false '
                    f'({self.counts["tracking_lost_events"]} losses so far)'
                )
        elif self._lost_reason and not reason:
            self._info('tracking recovered')
        self._lost_reason = reason

    def _drop(self, reason: str, detail: str) -> None:
        self.counts[reason] += 1
        if math.log2(self.counts[reason]).is_integer():
            self._warn(f'{detail} (dropped {self.counts[reason]} so far)')
