# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Record the scripted tour as a rosbag2 (MCAP) of camera images and odometry.

The bag directory also holds `ground_truth.json`: the world, the true trajectory and the
true camera pose of every image, so replays can be scored. Images and odometry are on
separate, offset clocks (images also jitter a little), as on a robot, so consumers must
interpolate poses at image stamps. Equal arguments give byte-identical files.
"""

from __future__ import annotations

import argparse
import io
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
from PIL import Image
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore
from rosbags.typesys.store import Typestore

from waymark.geometry import Pose
from waymark.sim.render import render
from waymark.sim.trajectory import Tour, plan_tour
from waymark.sim.world import World, build_demo_world

IMAGE_TOPICS = {
    'jpeg': ('/camera/image/compressed', 'sensor_msgs/msg/CompressedImage'),
    'raw': ('/camera/image_raw', 'sensor_msgs/msg/Image'),
}
ODOM_TOPIC = ('/odom', 'nav_msgs/msg/Odometry')
CAMERA_FRAME = 'camera'
MAP_FRAME = 'map'
BASE_FRAME = 'base_link'
DEFAULT_EXTRINSIC = Pose((0.25, 0.0, 0.45))
CAMERA_OFFSET_NS = 13_000_000  # image clock lags the odometry clock by this much
CAMERA_JITTER_NS = 4_000_000  # plus uniform jitter of up to this much either way
GROUND_TRUTH_FILE = 'ground_truth.json'
BAG_VERSION = 8  # what ROS 2 Jazzy reads; Kilted reads it too


@dataclass(frozen=True)
class BagInfo:
    """What `write_bag` wrote."""

    path: Path  # the rosbag2 directory
    topics: dict[str, str]  # topic -> message type
    message_counts: dict[str, int]
    start_ns: int
    duration_ns: int
    ground_truth: Path

    @property
    def duration_s(self) -> float:
        return self.duration_ns / 1e9


def write_bag(
    world: World,
    out_dir: Path | str,
    *,
    camera_rate_hz: float = 5.0,
    odom_rate_hz: float = 20.0,
    width: int = 640,
    height: int = 480,
    hfov_deg: float = 90.0,
    image_format: Literal['jpeg', 'raw'] = 'jpeg',
    jpeg_quality: int = 90,
    camera_extrinsic: Pose = DEFAULT_EXTRINSIC,
    odom_noise: float = 0.0,
    seed: int = 0,
    max_duration_s: float | None = None,
) -> BagInfo:
    """Render the tour of `world` into a new rosbag2 directory `out_dir` (must not exist).

    `odom_noise` is the standard deviation of white noise added to the published odometry
    x, y (metres) and yaw (radians); images and ground truth always use the true pose.
    `max_duration_s` cuts the tour short (for quick tests).
    """
    if image_format not in IMAGE_TOPICS:
        raise ValueError(f'image_format must be one of {sorted(IMAGE_TOPICS)}')
    out_dir = Path(out_dir)
    tour = plan_tour(world, seed=seed)
    end_ns = tour.end_ns
    if max_duration_s is not None:
        end_ns = min(end_ns, tour.start_ns + round(max_duration_s * 1e9))
    clock = _clocks(tour, end_ns, camera_rate_hz, odom_rate_hz, odom_noise, seed)
    camera_poses = [tour.pose_at(int(s)).compose(camera_extrinsic) for s in clock.image_stamps]
    image_topic, image_type = IMAGE_TOPICS[image_format]

    typestore = get_typestore(Stores.ROS2_JAZZY)
    events = sorted(
        [(int(s), 0, i) for i, s in enumerate(clock.odom_stamps)]
        + [(int(s), 1, i) for i, s in enumerate(clock.image_stamps)]
    )
    with Writer(out_dir, version=BAG_VERSION, storage_plugin=StoragePlugin.MCAP) as writer:
        odom_conn = writer.add_connection(ODOM_TOPIC[0], ODOM_TOPIC[1], typestore=typestore)
        image_conn = writer.add_connection(image_topic, image_type, typestore=typestore)
        for stamp, kind, i in events:
            if kind == 0:
                msg = _odometry(typestore, stamp, *clock.odom_published[i])
                writer.write(odom_conn, stamp, typestore.serialize_cdr(msg, ODOM_TOPIC[1]))
            else:
                pixels = render(world, camera_poses[i], width, height, hfov_deg)
                msg = _image(typestore, stamp, pixels, image_format, jpeg_quality)
                writer.write(image_conn, stamp, typestore.serialize_cdr(msg, image_type))

    truth = {
        'world': world.to_dict(),
        'seed': seed,
        'start_ns': tour.start_ns,
        'end_ns': end_ns,
        'camera': {
            'topic': image_topic,
            'frame_id': CAMERA_FRAME,
            'width': width,
            'height': height,
            'hfov_deg': hfov_deg,
            # x y z qx qy qz qw, as capture_node's camera_extrinsic parameter takes it
            'extrinsic': [*camera_extrinsic.position, *camera_extrinsic.orientation],
        },
        'odometry': {'topic': ODOM_TOPIC[0], 'rate_hz': odom_rate_hz, 'noise_std': odom_noise},
        'trajectory': [
            _state_dict(int(s), *state)
            for s, state in zip(clock.odom_stamps, clock.odom_true, strict=True)
        ],
        'images': [
            _state_dict(int(s), p.position[0], p.position[1], p.yaw, z=p.position[2])
            for s, p in zip(clock.image_stamps, camera_poses, strict=True)
        ],
        'sign_views': [
            {'text': v.text, 'start_ns': v.start_ns, 'end_ns': v.end_ns}
            | _rounded(x=v.x, y=v.y, yaw=v.yaw)
            for v in tour.views
            if v.end_ns <= end_ns
        ],
    }
    ground_truth = out_dir / GROUND_TRUTH_FILE
    ground_truth.write_text(json.dumps(truth, indent=1, sort_keys=True) + '\n', encoding='utf-8')
    first = int(min(clock.odom_stamps[0], clock.image_stamps[0]))
    last = int(max(clock.odom_stamps[-1], clock.image_stamps[-1]))
    return BagInfo(
        path=out_dir,
        topics={ODOM_TOPIC[0]: ODOM_TOPIC[1], image_topic: image_type},
        message_counts={
            ODOM_TOPIC[0]: len(clock.odom_stamps),
            image_topic: len(clock.image_stamps),
        },
        start_ns=first,
        duration_ns=last - first,
        ground_truth=ground_truth,
    )


@dataclass(frozen=True)
class _Clocks:
    odom_stamps: np.ndarray  # (N,) int64
    odom_true: np.ndarray  # (N, 3) x, y, yaw
    odom_published: np.ndarray  # (N, 3) with noise, if any
    image_stamps: np.ndarray  # (M,) int64


def _clocks(
    tour: Tour,
    end_ns: int,
    camera_rate_hz: float,
    odom_rate_hz: float,
    odom_noise: float,
    seed: int,
) -> _Clocks:
    """Odometry on a regular grid; images on their own, offset and jittered, inside it."""
    rng = np.random.default_rng(seed)
    odom_stamps = tour.stamps(odom_rate_hz)
    odom_stamps = odom_stamps[odom_stamps <= end_ns]
    odom_true = tour.states_at(odom_stamps)
    noise = rng.normal(0.0, odom_noise, odom_true.shape) if odom_noise else 0.0
    jitter = min(CAMERA_JITTER_NS, int(0.25e9 / camera_rate_hz))  # keeps stamps in order
    image_stamps = tour.stamps(camera_rate_hz, CAMERA_OFFSET_NS + jitter)
    image_stamps = image_stamps + rng.integers(-jitter, jitter + 1, len(image_stamps))
    image_stamps = image_stamps[image_stamps <= odom_stamps[-1]]  # no extrapolation needed
    if len(image_stamps) == 0:
        raise ValueError('the recording is too short to hold a single image')
    return _Clocks(odom_stamps, odom_true, odom_true + noise, image_stamps)


def _rounded(**values: float) -> dict[str, float]:
    """Micrometre / microradian precision keeps the JSON small and stable."""
    return {k: round(float(v), 6) for k, v in values.items()}


def _state_dict(stamp_ns: int, x: float, y: float, yaw: float, **extra: float) -> dict:
    return {'stamp_ns': stamp_ns, **_rounded(x=x, y=y, yaw=yaw, **extra)}


def _header(typestore: Typestore, stamp_ns: int, frame_id: str):
    sec, nanosec = divmod(stamp_ns, 1_000_000_000)
    time = typestore.types['builtin_interfaces/msg/Time'](sec=sec, nanosec=nanosec)
    return typestore.types['std_msgs/msg/Header'](stamp=time, frame_id=frame_id)


def _odometry(typestore: Typestore, stamp_ns: int, x: float, y: float, yaw: float):
    t = typestore.types
    pose = t['geometry_msgs/msg/Pose'](
        position=t['geometry_msgs/msg/Point'](x=float(x), y=float(y), z=0.0),
        orientation=t['geometry_msgs/msg/Quaternion'](
            x=0.0, y=0.0, z=math.sin(yaw / 2.0), w=math.cos(yaw / 2.0)
        ),
    )
    zero = t['geometry_msgs/msg/Vector3'](x=0.0, y=0.0, z=0.0)
    return t['nav_msgs/msg/Odometry'](
        header=_header(typestore, stamp_ns, MAP_FRAME),
        child_frame_id=BASE_FRAME,
        pose=t['geometry_msgs/msg/PoseWithCovariance'](pose=pose, covariance=np.zeros(36)),
        twist=t['geometry_msgs/msg/TwistWithCovariance'](
            twist=t['geometry_msgs/msg/Twist'](linear=zero, angular=zero),
            covariance=np.zeros(36),
        ),
    )


def _image(
    typestore: Typestore, stamp_ns: int, pixels: np.ndarray, image_format: str, quality: int
):
    header = _header(typestore, stamp_ns, CAMERA_FRAME)
    if image_format == 'jpeg':
        buffer = io.BytesIO()
        Image.fromarray(pixels).save(buffer, format='JPEG', quality=quality)
        data = np.frombuffer(buffer.getvalue(), dtype=np.uint8)
        return typestore.types['sensor_msgs/msg/CompressedImage'](
            header=header, format='jpeg', data=data
        )
    rows, cols = pixels.shape[:2]
    return typestore.types['sensor_msgs/msg/Image'](
        header=header,
        height=rows,
        width=cols,
        encoding='rgb8',
        is_bigendian=0,
        step=3 * cols,
        data=pixels.reshape(-1),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description='Record a tour of the demo world as a rosbag2 (MCAP).'
    )
    parser.add_argument('out_dir', type=Path, help='bag directory to create (must not exist)')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--camera-rate', type=float, default=5.0, help='Hz')
    parser.add_argument('--odom-rate', type=float, default=20.0, help='Hz')
    parser.add_argument('--width', type=int, default=640)
    parser.add_argument('--height', type=int, default=480)
    parser.add_argument('--format', choices=sorted(IMAGE_TOPICS), default='jpeg')
    parser.add_argument(
        '--odom-noise', type=float, default=0.0, help='std of x, y (m) and yaw (rad)'
    )
    parser.add_argument('--max-duration', type=float, default=None, help='seconds')
    args = parser.parse_args(argv)
    info = write_bag(
        build_demo_world(args.seed),
        args.out_dir,
        camera_rate_hz=args.camera_rate,
        odom_rate_hz=args.odom_rate,
        width=args.width,
        height=args.height,
        image_format=args.format,
        odom_noise=args.odom_noise,
        seed=args.seed,
        max_duration_s=args.max_duration,
    )
    counts = ', '.join(f'{topic}: {n}' for topic, n in info.message_counts.items())
    print(f'{info.path}: {info.duration_s:.1f} s, {counts}; ground truth {info.ground_truth}')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
