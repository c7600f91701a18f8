# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""What a bag's sensors are, for an evaluation: topics, map frame, camera extrinsic and
intrinsics, depth topic, each taken from a flag, else a sensor preset, else the bag, and
each recorded with where it came from.

Sensor presets are the robot's own parameter files (config/sensors/*.yaml). Only
capture_node's section is read here, layered as the launch layers them (later files win),
and turned into the CaptureConfig that capture_node builds from the same parameters, so an
evaluation places keyframes as the robot with that preset would.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml
from rosbags.highlevel import AnyReader

from waymark.geometry import Pose
from waymark.memory.entries import CameraModel
from waymark.memory.ingest.capture import CaptureConfig
from waymark.memory.ingest.depth import DepthGrid
from waymark.memory.ingest.keyframes import KeyframePolicy

NODE = 'capture_node'
DEFAULT_MAP_FRAME = 'map'  # capture_node's default, used when the poses carry no frame
DEFAULT_HFOV_DEG = 90.0  # stated in the report when neither the bag nor a flag gives one
CAMERA_INFO = 'sensor_msgs/msg/CameraInfo'
DEPTH_TYPE = 'sensor_msgs/msg/Image'  # what a depth topic carries (32FC1 m or 16UC1 mm)
# How many pose messages are read to learn their frames; a frame that appears later is
# still counted by the ingest (pose_wrong_frame).
FRAME_SAMPLE_MAX = 100_000


class SensorError(ValueError):
    """A preset that does not exist or cannot be used offline, or an ambiguous map frame."""


def preset_path(name: str, folder: Path) -> Path:
    """A preset by name (folder/NAME.yaml) or by path."""
    given = Path(name).expanduser()
    if given.suffix in ('.yaml', '.yml') and given.is_file():
        return given
    path = folder / f'{name}.yaml'
    if not path.is_file():
        available = ', '.join(sorted(p.stem for p in folder.glob('*.yaml'))) or 'none'
        raise SensorError(f'no sensor preset {name!r} in {folder}; available: {available}')
    return path


def read_presets(paths: Sequence[Path]) -> dict[str, object]:
    """capture_node's parameters from parameter files, flattened to dotted names as ROS
    flattens them; a later file wins, as on the robot."""
    parameters: dict[str, object] = {}
    for path in paths:
        try:
            sections = yaml.safe_load(Path(path).read_text()) or {}
        except (OSError, yaml.YAMLError) as error:
            raise SensorError(f'sensor preset {path}: {error}') from error
        if not isinstance(sections, dict):
            raise SensorError(f'sensor preset {path}: not a ROS 2 parameter file')
        for key, section in sections.items():
            if _applies(str(key)) and isinstance(section, dict):
                parameters.update(_flatten(section.get('ros__parameters') or {}))
    return parameters


def _applies(key: str) -> bool:
    """Whether a parameter file section names capture_node (in any namespace) or all nodes."""
    last = key.rstrip('/').rsplit('/', 1)[-1]
    return last in (NODE, '*', '**')


def _flatten(tree: Mapping, prefix: str = '') -> dict[str, object]:
    flat: dict[str, object] = {}
    for key, value in tree.items():
        if isinstance(value, Mapping):
            flat.update(_flatten(value, f'{prefix}{key}.'))
        else:
            flat[prefix + str(key)] = value
    return flat


def capture_config(
    parameters: Mapping[str, object], session: str, map_frame: str, extrinsic: Pose
) -> CaptureConfig:
    """The CaptureConfig capture_node makes of these parameters (its defaults elsewhere)."""
    defaults, policy, grid = CaptureConfig(), KeyframePolicy(), DepthGrid()

    def get(name: str, default):
        return type(default)(parameters.get(name, default))

    try:
        return CaptureConfig(
            session=session,
            map_frame=map_frame,
            camera_extrinsic=extrinsic,
            max_pose_gap_s=get('max_pose_gap_s', defaults.max_pose_gap_s),
            max_pose_wait_s=get('max_pose_wait_s', defaults.max_pose_wait_s),
            pending_bytes_max=get('pending_images_max_mb', defaults.pending_bytes_max >> 20) << 20,
            pose_buffer_size=get('pose_buffer_size', defaults.pose_buffer_size),
            policy=KeyframePolicy(
                **{
                    name: get(f'keyframe.{name}', getattr(policy, name))
                    for name in KeyframePolicy.__dataclass_fields__
                }
            ),
            max_position_variance=get(
                'tracking.max_position_variance', defaults.max_position_variance
            ),
            max_speed_mps=get('tracking.max_speed_mps', defaults.max_speed_mps),
            depth_grid=DepthGrid(
                **{
                    name: get(f'depth.{name}', getattr(grid, name))
                    for name in DepthGrid.__dataclass_fields__
                }
            ),
            depth_max_gap_s=get('depth.max_gap_s', defaults.depth_max_gap_s),
            depth_buffer_size=get('depth.buffer_size', defaults.depth_buffer_size),
        )
    except (TypeError, ValueError) as error:
        raise SensorError(f'sensor preset: {error}') from error


def camera_info_beside(image_topic: str, info_topic: str) -> bool:
    """Whether a CameraInfo topic is the image's: its namespace holds the image topic
    (/zed/zed_node/rgb/color/rect/camera_info for /zed/zed_node/rgb/color/rect/image/compressed)."""
    return image_topic.startswith(info_topic.rsplit('/', 1)[0] + '/')


@dataclass(frozen=True)
class Intrinsics:
    """The camera's pinhole model as far as it is known, and where it came from."""

    source: str  # 'camera_info <topic>', 'flag --hfov', 'preset ...' or 'default field of view'
    hfov_deg: float
    width: int = 0
    height: int = 0
    fx: float = 0.0
    fy: float = 0.0
    cx: float = 0.0
    cy: float = 0.0

    def camera_model(self, width: int, height: int) -> CameraModel:
        """The model of a `width` x `height` image: CameraInfo's K (scaled when the image
        is not the size the calibration is for), else square pixels from the field of view."""
        if self.fx > 0 and self.width > 0 and self.height > 0:
            sx, sy = width / self.width, height / self.height
            return CameraModel(
                width, height, self.fx * sx, self.fy * sy, self.cx * sx, self.cy * sy
            )
        return CameraModel.from_hfov(width, height, self.hfov_deg)


def camera_intrinsics(
    reader: AnyReader,
    image_topic: str,
    hfov_deg: float | None = None,
    preset_hfov_deg: float | None = None,
    preset_names: str = '',
    truth_hfov_deg: float | None = None,
) -> Intrinsics:
    """From the bag's CameraInfo beside the image topic (the only one, or the one whose
    namespace holds the image topic), else the given field of view, else the preset's
    (`camera_hfov_deg`, the camera's data-sheet figure), else the field of view a
    generated bag's ground truth states (the renderer's), else the default."""
    infos = [c for c in reader.connections if c.msgtype == CAMERA_INFO]
    beside = [c for c in infos if camera_info_beside(image_topic, c.topic)]
    chosen = beside or (infos if len({c.topic for c in infos}) == 1 else [])
    if chosen:
        topic = max(chosen, key=lambda c: len(c.topic)).topic
        for connection, _, raw in reader.messages(
            connections=[c for c in chosen if c.topic == topic]
        ):
            info = reader.deserialize(raw, connection.msgtype)
            fx, fy, cx, cy = float(info.k[0]), float(info.k[4]), float(info.k[2]), float(info.k[5])
            if fx > 0 and info.width > 0:
                return Intrinsics(
                    f'camera_info {topic}',
                    math.degrees(2.0 * math.atan(info.width / (2.0 * fx))),
                    int(info.width),
                    int(info.height),
                    fx,
                    fy,
                    cx,
                    cy,
                )
    if hfov_deg is not None:
        return Intrinsics('flag --hfov', float(hfov_deg))
    if preset_hfov_deg:  # 0 in a preset means the camera is not known
        return Intrinsics(f'preset {preset_names}'.strip(), float(preset_hfov_deg))
    if truth_hfov_deg:
        return Intrinsics("the bag's ground truth", float(truth_hfov_deg))
    return Intrinsics('default field of view', DEFAULT_HFOV_DEG)


def pose_frames(reader: AnyReader, pose_topic: str) -> Counter[str]:
    """How many of the pose topic's messages (up to FRAME_SAMPLE_MAX) are in each frame."""
    frames: Counter[str] = Counter()
    connections = [c for c in reader.connections if c.topic == pose_topic]
    for connection, _, raw in reader.messages(connections=connections):
        frames[reader.deserialize(raw, connection.msgtype).header.frame_id] += 1
        if frames.total() >= FRAME_SAMPLE_MAX:
            break
    return frames


def choose_map_frame(
    flag: str | None, preset: object, frames: Counter[str], pose_topic: str
) -> tuple[str, str]:
    """The map frame and where it came from: the flag, the preset, else the poses' frame."""
    if flag:
        return flag, 'flag --map-frame'
    if preset:
        return str(preset), 'preset'
    named = {frame: n for frame, n in frames.items() if frame}
    if len(named) > 1:
        listing = ', '.join(f'{frame!r} ({n})' for frame, n in sorted(named.items()))
        raise SensorError(
            f'poses on {pose_topic} are in several frames: {listing}; pass --map-frame FRAME'
        )
    if named:
        return next(iter(named)), f'bag (the frame of every pose on {pose_topic})'
    return DEFAULT_MAP_FRAME, 'default (the poses name no frame)'


def choose_depth_topic(
    flag: str | None, preset: object, truth: object, available: Mapping[str, str]
) -> tuple[str, str]:
    """The depth topic ('' for none) and where that came from: the flag ('' turns depth
    off), else the presets', else the one a generated bag's ground truth names. A topic
    the flag names must be in the bag; one a preset names may be missing (a recording
    made without depth), which the source then says."""
    if flag is not None:
        if not flag:
            return '', 'flag --no-depth'
        if available.get(flag) != DEPTH_TYPE:
            listing = ', '.join(f'{t} [{m}]' for t, m in sorted(available.items())) or 'none'
            raise SensorError(
                f'depth topic {flag} is not in the bag as a {DEPTH_TYPE}; the bag has: {listing}'
            )
        return flag, 'flag --depth-topic'
    for named, source in ((preset, 'preset'), (truth, "the bag's ground truth")):
        if named:
            if available.get(str(named)) == DEPTH_TYPE:
                return str(named), source
            return '', f'none ({named}, from {source}, is not in the bag)'
    return '', 'none (no preset names a depth topic)'


@dataclass(frozen=True)
class Sensors:
    """Everything a memory build takes from the sensors, with where each part came from."""

    image_topic: str
    image_type: str
    pose_topic: str
    pose_type: str
    map_frame: str
    map_frame_from: str
    extrinsic: Pose
    extrinsic_from: str
    intrinsics: Intrinsics
    pose_frames: dict[str, int]
    depth_topic: str = ''  # '' when keyframes get no depth
    depth_topic_from: str = ''
    presets: tuple[str, ...] = ()
    parameters: dict[str, object] = field(default_factory=dict)  # capture_node's, from presets

    def to_dict(self) -> dict:
        return {
            'presets': list(self.presets),
            'image_topic': self.image_topic,
            'image_type': self.image_type,
            'pose_topic': self.pose_topic,
            'pose_type': self.pose_type,
            'map_frame': self.map_frame,
            'map_frame_from': self.map_frame_from,
            'camera_extrinsic': [*self.extrinsic.position, *self.extrinsic.orientation],
            'camera_extrinsic_from': self.extrinsic_from,
            'intrinsics': asdict(self.intrinsics),
            'pose_frames': dict(self.pose_frames),
            'depth_topic': self.depth_topic,
            'depth_topic_from': self.depth_topic_from,
        }
