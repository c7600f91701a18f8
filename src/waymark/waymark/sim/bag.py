# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Record the scripted tour as a rosbag2 (MCAP) of camera images and odometry.

The bag also holds, once at the start and offered as transient-local (latched), the
camera extrinsic on /tf_static and an occupancy grid of the world on /map. The directory
also holds `ground_truth.json`: the world, its landmarks, the true trajectory and the true
camera pose of every image with the landmarks it shows, so replays can be scored. Images
and odometry are on separate, offset clocks (images also jitter a little), as on a robot,
so consumers must interpolate poses at image stamps. Odometry may carry white noise and a
slowly growing drift, as lidar-inertial odometry does; the ground truth keeps true poses.
With `depth_camera`, each image also comes with its depth image (float32 metres,
registered to it, as a ZED publishes) and the camera's CameraInfo, stamped as the image.
Equal arguments give byte-identical files.
"""

from __future__ import annotations

import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
from PIL import Image
from rosbags.interfaces import (
    Qos,
    QosDurability,
    QosHistory,
    QosLiveliness,
    QosReliability,
    QosTime,
)
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore
from rosbags.typesys.store import Typestore

from waymark.cli import (
    ArgumentParser,
    UsageError,
    check_output_dir,
    check_positive,
    clear_output_dir,
    fail,
)
from waymark.geometry import Pose
from waymark.sim.generate import FAMILIES, SIZES, generate_world
from waymark.sim.landmarks import landmarks, visible_landmarks
from waymark.sim.render import render, render_with_depth
from waymark.sim.shapes import SHAPES
from waymark.sim.trajectory import Tour, plan_tour
from waymark.sim.world import World, build_demo_world, occupancy_grid

IMAGE_TOPICS = {
    'jpeg': ('/camera/image/compressed', 'sensor_msgs/msg/CompressedImage'),
    'raw': ('/camera/image_raw', 'sensor_msgs/msg/Image'),
}
ODOM_TOPIC = ('/odom', 'nav_msgs/msg/Odometry')
DEPTH_TOPIC = ('/camera/depth/image_raw', 'sensor_msgs/msg/Image')
CAMERA_INFO_TOPIC = ('/camera/camera_info', 'sensor_msgs/msg/CameraInfo')
POSE_TYPES = {
    'odometry': 'nav_msgs/msg/Odometry',
    'pose_stamped': 'geometry_msgs/msg/PoseStamped',
    'pose_with_covariance': 'geometry_msgs/msg/PoseWithCovarianceStamped',
}
TF_STATIC_TOPIC = ('/tf_static', 'tf2_msgs/msg/TFMessage')
MAP_TOPIC = ('/map', 'nav_msgs/msg/OccupancyGrid')
_FOREVER = QosTime(sec=2_147_483_647, nsec=4_294_967_295)  # rmw's "infinite" duration
LATCHED_QOS = Qos(
    history=QosHistory.KEEP_LAST,
    depth=1,
    reliability=QosReliability.RELIABLE,
    durability=QosDurability.TRANSIENT_LOCAL,
    deadline=_FOREVER,
    lifespan=_FOREVER,
    liveliness=QosLiveliness.AUTOMATIC,
    liveliness_lease_duration=_FOREVER,
    avoid_ros_namespace_conventions=False,
)
DRIFT_YAW_PER_M = 0.1  # yaw drift (rad per metre travelled) per unit of `odom_drift`
DEMO_CAMERA_RATE_HZ = 5.0
GENERATED_CAMERA_RATE_HZ = 12.0  # a large world's tour (>= 38 min) gives > 27k images
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
    topics: dict[str, str]  # streamed topics (odometry, images) -> message type
    message_counts: dict[str, int]  # per streamed topic
    start_ns: int
    duration_ns: int
    ground_truth: Path
    # Topics written once at the start (one message each), kept apart so that replaying
    # `topics` does not wait for subscribers to a map or a static transform.
    static_topics: dict[str, str] = field(default_factory=dict)

    @property
    def duration_s(self) -> float:
        return self.duration_ns / 1e9


def write_bag(
    world: World,
    out_dir: Path | str,
    *,
    camera_rate_hz: float = DEMO_CAMERA_RATE_HZ,
    odom_rate_hz: float = 20.0,
    width: int = 640,
    height: int = 480,
    hfov_deg: float = 90.0,
    image_format: Literal['jpeg', 'raw'] = 'jpeg',
    image_topic: str | None = None,
    pose_type: Literal['odometry', 'pose_stamped', 'pose_with_covariance'] = 'odometry',
    pose_topic: str = ODOM_TOPIC[0],
    jpeg_quality: int = 90,
    camera_extrinsic: Pose = DEFAULT_EXTRINSIC,
    odom_noise: float = 0.0,
    odom_drift: float = 0.0,
    map_resolution: float = 0.05,
    static_topics: bool | None = None,
    seed: int = 0,
    max_duration_s: float | None = None,
    depth_camera: bool = False,
) -> BagInfo:
    """Render the tour of `world` into a new rosbag2 directory `out_dir` (must not exist).

    `odom_noise` is the standard deviation of white noise added to the published odometry
    x, y (metres) and yaw (radians); `odom_drift` adds a bias that grows with the distance
    travelled: `odom_drift` metres of position error per metre (in a direction the seed
    picks) and `DRIFT_YAW_PER_M * odom_drift` radians of yaw error per metre, about the start.
    Images and ground truth always use the true pose. `static_topics` adds /tf_static and
    /map; by default only generated worlds get them, because the demo and system test replay
    every topic of the demo bag and not every ROS install has tf2_msgs. `max_duration_s`
    cuts the tour short (for quick tests). `image_topic` (default by format), `pose_type`
    and `pose_topic` shape the bag as a robot's drivers record it (see sim.shapes).
    `depth_camera` adds a depth image and a CameraInfo per image.
    """
    if static_topics is None:
        static_topics = world.size != 'demo'
    if image_format not in IMAGE_TOPICS:
        raise ValueError(f'image_format must be one of {sorted(IMAGE_TOPICS)}')
    if pose_type not in POSE_TYPES:
        raise ValueError(f'pose_type must be one of {sorted(POSE_TYPES)}')
    out_dir = Path(out_dir)
    tour = plan_tour(world, seed=seed)
    end_ns = tour.end_ns
    if max_duration_s is not None:
        end_ns = min(end_ns, tour.start_ns + round(max_duration_s * 1e9))
    clock = _clocks(tour, end_ns, camera_rate_hz, odom_rate_hz, odom_noise, odom_drift, seed)
    camera_poses = [tour.pose_at(int(s)).compose(camera_extrinsic) for s in clock.image_stamps]
    image_type = IMAGE_TOPICS[image_format][1]
    image_topic = image_topic or IMAGE_TOPICS[image_format][0]
    pose_msgtype = POSE_TYPES[pose_type]

    typestore = get_typestore(Stores.ROS2_JAZZY)
    events = sorted(
        [(int(s), 0, i) for i, s in enumerate(clock.odom_stamps)]
        + [(int(s), 1, i) for i, s in enumerate(clock.image_stamps)]
    )
    first = int(min(clock.odom_stamps[0], clock.image_stamps[0]))
    vfov_deg = math.degrees(2.0 * math.atan(math.tan(math.radians(hfov_deg) / 2) * height / width))
    with Writer(out_dir, version=BAG_VERSION, storage_plugin=StoragePlugin.MCAP) as writer:
        if static_topics:
            _write_static(writer, typestore, first, world, camera_extrinsic, map_resolution)
        odom_conn = writer.add_connection(pose_topic, pose_msgtype, typestore=typestore)
        image_conn = writer.add_connection(image_topic, image_type, typestore=typestore)
        if depth_camera:
            depth_conn = writer.add_connection(*DEPTH_TOPIC, typestore=typestore)
            info_conn = writer.add_connection(*CAMERA_INFO_TOPIC, typestore=typestore)
        for stamp, kind, i in events:
            if kind == 0:
                msg = _pose_message(typestore, pose_type, stamp, *clock.odom_published[i])
                writer.write(odom_conn, stamp, typestore.serialize_cdr(msg, pose_msgtype))
                continue
            if depth_camera:
                pixels, depth = render_with_depth(world, camera_poses[i], width, height, hfov_deg)
                info = _camera_info(typestore, stamp, width, height, hfov_deg)
                writer.write(info_conn, stamp, typestore.serialize_cdr(info, CAMERA_INFO_TOPIC[1]))
                msg = _depth(typestore, stamp, depth)
                writer.write(depth_conn, stamp, typestore.serialize_cdr(msg, DEPTH_TOPIC[1]))
            else:
                pixels = render(world, camera_poses[i], width, height, hfov_deg)
            msg = _image(typestore, stamp, pixels, image_format, jpeg_quality)
            writer.write(image_conn, stamp, typestore.serialize_cdr(msg, image_type))

    truth = {
        'world_name': world.name,
        'size': world.size,
        **({} if world.family == 'rooms' else {'family': world.family}),
        'world': world.to_dict(),
        'rooms': [{'name': r.name, 'polygon': [list(p) for p in r.polygon]} for r in world.rooms],
        'landmarks': [m.to_dict() for m in landmarks(world)],
        'seed': seed,
        'start_ns': tour.start_ns,
        'end_ns': end_ns,
        'camera': {
            'topic': image_topic,
            'frame_id': CAMERA_FRAME,
            'width': width,
            'height': height,
            'hfov_deg': hfov_deg,
            'depth_topic': DEPTH_TOPIC[0] if depth_camera else None,
            # x y z qx qy qz qw, as capture_node's camera_extrinsic parameter takes it
            'extrinsic': [*camera_extrinsic.position, *camera_extrinsic.orientation],
        },
        'odometry': {
            'topic': pose_topic,
            'rate_hz': odom_rate_hz,
            'noise_std': odom_noise,
            'drift': odom_drift,
        }
        | ({} if pose_type == 'odometry' else {'type': pose_type}),
        'map': {'topic': MAP_TOPIC[0] if static_topics else None, 'resolution': map_resolution},
        'trajectory': [
            _state_dict(int(s), *state)
            for s, state in zip(clock.odom_stamps, clock.odom_true, strict=True)
        ],
        'images': [
            _state_dict(int(s), p.position[0], p.position[1], p.yaw, z=p.position[2])
            | {'visible': visible_landmarks(world, p, hfov_deg, vfov_deg=vfov_deg)}
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
    last = int(max(clock.odom_stamps[-1], clock.image_stamps[-1]))
    streams = [(image_topic, image_type)]
    streams += [DEPTH_TOPIC, CAMERA_INFO_TOPIC] if depth_camera else []
    counts = {topic: len(clock.image_stamps) for topic, _ in streams}
    return BagInfo(
        path=out_dir,
        topics={pose_topic: pose_msgtype, **dict(streams)},
        message_counts={pose_topic: len(clock.odom_stamps), **counts},
        start_ns=first,
        duration_ns=last - first,
        ground_truth=ground_truth,
        static_topics=dict([TF_STATIC_TOPIC, MAP_TOPIC]) if static_topics else {},
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
    odom_drift: float,
    seed: int,
) -> _Clocks:
    """Odometry on a regular grid; images on their own, offset and jittered, inside it."""
    rng = np.random.default_rng(seed)
    odom_stamps = tour.stamps(odom_rate_hz)
    odom_stamps = odom_stamps[odom_stamps <= end_ns]
    odom_true = tour.states_at(odom_stamps)
    noise = rng.normal(0.0, odom_noise, odom_true.shape) if odom_noise else 0.0
    drifted = (
        _drift(odom_true, odom_drift, np.random.default_rng([seed, 2])) if odom_drift else odom_true
    )
    jitter = min(CAMERA_JITTER_NS, int(0.25e9 / camera_rate_hz))  # keeps stamps in order
    image_stamps = tour.stamps(camera_rate_hz, CAMERA_OFFSET_NS + jitter)
    image_stamps = image_stamps + rng.integers(-jitter, jitter + 1, len(image_stamps))
    image_stamps = image_stamps[image_stamps <= odom_stamps[-1]]  # no extrapolation needed
    if len(image_stamps) == 0:
        raise ValueError('the recording is too short to hold a single image')
    return _Clocks(odom_stamps, odom_true, drifted + noise, image_stamps)


def _drift(states: np.ndarray, drift: float, rng: np.random.Generator) -> np.ndarray:
    """The states as seen through a bias that grows with the distance travelled."""
    travelled = np.concatenate(
        [[0.0], np.cumsum(np.linalg.norm(np.diff(states[:, :2], axis=0), axis=1))]
    )
    heading = rng.uniform(-math.pi, math.pi)
    turn = rng.choice([-1.0, 1.0]) * DRIFT_YAW_PER_M * drift * travelled
    start = states[0, :2]
    rel = states[:, :2] - start
    cos_t, sin_t = np.cos(turn), np.sin(turn)
    out = np.empty_like(states)
    out[:, 0] = (
        start[0] + cos_t * rel[:, 0] - sin_t * rel[:, 1] + drift * travelled * math.cos(heading)
    )
    out[:, 1] = (
        start[1] + sin_t * rel[:, 0] + cos_t * rel[:, 1] + drift * travelled * math.sin(heading)
    )
    out[:, 2] = np.arctan2(np.sin(states[:, 2] + turn), np.cos(states[:, 2] + turn))
    return out


def _rounded(**values: float) -> dict[str, float]:
    """Micrometre / microradian precision keeps the JSON small and stable."""
    return {k: round(float(v), 6) for k, v in values.items()}


def _state_dict(stamp_ns: int, x: float, y: float, yaw: float, **extra: float) -> dict:
    return {'stamp_ns': stamp_ns, **_rounded(x=x, y=y, yaw=yaw, **extra)}


def _header(typestore: Typestore, stamp_ns: int, frame_id: str):
    sec, nanosec = divmod(stamp_ns, 1_000_000_000)
    time = typestore.types['builtin_interfaces/msg/Time'](sec=sec, nanosec=nanosec)
    return typestore.types['std_msgs/msg/Header'](stamp=time, frame_id=frame_id)


def _pose_message(
    typestore: Typestore, pose_type: str, stamp_ns: int, x: float, y: float, yaw: float
):
    """The pose as `pose_type`: Odometry, PoseStamped or PoseWithCovarianceStamped."""
    odometry = _odometry(typestore, stamp_ns, x, y, yaw)
    t = typestore.types
    if pose_type == 'pose_stamped':
        return t[POSE_TYPES[pose_type]](header=odometry.header, pose=odometry.pose.pose)
    if pose_type == 'pose_with_covariance':
        return t[POSE_TYPES[pose_type]](header=odometry.header, pose=odometry.pose)
    return odometry


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


def _write_static(
    writer: Writer,
    typestore: Typestore,
    stamp_ns: int,
    world: World,
    extrinsic: Pose,
    resolution: float,
) -> None:
    """The camera extrinsic and the map, once, on connections offered as transient-local."""
    latched = {'typestore': typestore, 'offered_qos_profiles': [LATCHED_QOS]}
    for (topic, msgtype), msg in (
        (TF_STATIC_TOPIC, _tf_static(typestore, stamp_ns, extrinsic)),
        (MAP_TOPIC, _map(typestore, stamp_ns, world, resolution)),
    ):
        connection = writer.add_connection(topic, msgtype, **latched)
        writer.write(connection, stamp_ns, typestore.serialize_cdr(msg, msgtype))


def _tf_static(typestore: Typestore, stamp_ns: int, extrinsic: Pose):
    t = typestore.types
    x, y, z = extrinsic.position
    qx, qy, qz, qw = extrinsic.orientation
    transform = t['geometry_msgs/msg/TransformStamped'](
        header=_header(typestore, stamp_ns, BASE_FRAME),
        child_frame_id=CAMERA_FRAME,
        transform=t['geometry_msgs/msg/Transform'](
            translation=t['geometry_msgs/msg/Vector3'](x=float(x), y=float(y), z=float(z)),
            rotation=t['geometry_msgs/msg/Quaternion'](
                x=float(qx), y=float(qy), z=float(qz), w=float(qw)
            ),
        ),
    )
    return t['tf2_msgs/msg/TFMessage'](transforms=[transform])


def _map(typestore: Typestore, stamp_ns: int, world: World, resolution: float):
    t = typestore.types
    (x0, y0), grid = occupancy_grid(world, resolution)
    header = _header(typestore, stamp_ns, MAP_FRAME)
    origin = t['geometry_msgs/msg/Pose'](
        position=t['geometry_msgs/msg/Point'](x=float(x0), y=float(y0), z=0.0),
        orientation=t['geometry_msgs/msg/Quaternion'](x=0.0, y=0.0, z=0.0, w=1.0),
    )
    info = t['nav_msgs/msg/MapMetaData'](
        map_load_time=header.stamp,
        resolution=float(resolution),
        width=grid.shape[1],
        height=grid.shape[0],
        origin=origin,
    )
    return t['nav_msgs/msg/OccupancyGrid'](header=header, info=info, data=grid.reshape(-1))


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


def _depth(typestore: Typestore, stamp_ns: int, depth: np.ndarray):
    """A 32FC1 depth image; inf where the ray meets nothing, as depth drivers mark it."""
    rows, cols = depth.shape
    return typestore.types['sensor_msgs/msg/Image'](
        header=_header(typestore, stamp_ns, CAMERA_FRAME),
        height=rows,
        width=cols,
        encoding='32FC1',
        is_bigendian=0,
        step=4 * cols,
        data=np.ascontiguousarray(depth, dtype='<f4').view(np.uint8).reshape(-1),
    )


def _camera_info(typestore: Typestore, stamp_ns: int, width: int, height: int, hfov_deg: float):
    """The rendering camera's pinhole model (no distortion), as render places its centre."""
    t = typestore.types
    focal = 0.5 * width / math.tan(math.radians(hfov_deg) / 2.0)
    cx, cy = 0.5 * (width - 1), 0.5 * (height - 1)
    return t['sensor_msgs/msg/CameraInfo'](
        header=_header(typestore, stamp_ns, CAMERA_FRAME),
        height=height,
        width=width,
        distortion_model='plumb_bob',
        d=np.zeros(5),
        k=np.array([focal, 0, cx, 0, focal, cy, 0, 0, 1], dtype=np.float64),
        r=np.eye(3).reshape(-1),
        p=np.array([focal, 0, cx, 0, 0, focal, cy, 0, 0, 0, 1, 0], dtype=np.float64),
        binning_x=0,
        binning_y=0,
        roi=t['sensor_msgs/msg/RegionOfInterest'](
            x_offset=0, y_offset=0, height=0, width=0, do_rectify=False
        ),
    )


def load_world(size: str, seed: int, family: str = 'rooms') -> World:
    """The demo world or a generated one, by size (and layout family) name."""
    return build_demo_world(seed) if size == 'demo' else generate_world(seed, size, family)


def _is_bag(folder: Path) -> bool:
    return (folder / 'metadata.yaml').is_file()


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(
        prog='waymark world', description='Record a tour of a synthetic world as a rosbag2 (MCAP).'
    )
    parser.add_argument('out_dir', type=Path, help='bag directory to create (must not exist)')
    parser.add_argument('--overwrite', action='store_true', help='replace a bag at OUT_DIR')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--size', choices=['demo', *SIZES], default='demo')
    parser.add_argument('--family', choices=FAMILIES, default='rooms', help='generated layout')
    parser.add_argument(
        '--shape',
        choices=[s.name for s in SHAPES],
        default=None,
        help='record as these drivers do (topics, messages, rates); overrides --rate, '
        '--odom-rate and --format',
    )
    parser.add_argument(
        '--rate',
        '--camera-rate',
        dest='camera_rate',
        type=float,
        default=None,
        help=f'camera Hz (default {DEMO_CAMERA_RATE_HZ:g} for demo, '
        f'{GENERATED_CAMERA_RATE_HZ:g} for generated worlds)',
    )
    parser.add_argument('--odom-rate', type=float, default=20.0, help='Hz')
    parser.add_argument('--width', type=int, default=None, help='default 640, 320 for large')
    parser.add_argument('--height', type=int, default=None, help='default 480, 240 for large')
    parser.add_argument('--format', choices=sorted(IMAGE_TOPICS), default='jpeg')
    parser.add_argument(
        '--odom-noise', type=float, default=0.0, help='std of x, y (m) and yaw (rad)'
    )
    parser.add_argument(
        '--odom-drift', type=float, default=0.0, help='position drift per metre travelled'
    )
    parser.add_argument('--map-resolution', type=float, default=0.05, help='metres per cell')
    parser.add_argument('--max-duration', type=float, default=None, help='seconds')
    args = parser.parse_args(argv)
    try:
        for name, value in (
            ('--rate', args.camera_rate),
            ('--odom-rate', args.odom_rate),
            ('--width', args.width),
            ('--height', args.height),
            ('--map-resolution', args.map_resolution),
            ('--max-duration', args.max_duration),
        ):
            check_positive(name, value)
        check_positive('--odom-noise', args.odom_noise, zero_ok=True)
        check_positive('--odom-drift', args.odom_drift, zero_ok=True)
        if args.family != 'rooms' and args.size == 'demo':
            raise UsageError('--family needs a generated --size')
        check_output_dir(args.out_dir, _is_bag, 'bag', resume=False, overwrite=args.overwrite)
    except UsageError as error:
        return fail(parser.prog, error)
    clear_output_dir(args.out_dir)  # empty, or a bag to replace: the writer makes it anew
    generated = args.size != 'demo'
    small_frames = args.size == 'large'
    rate = args.camera_rate or (GENERATED_CAMERA_RATE_HZ if generated else DEMO_CAMERA_RATE_HZ)
    shape = next((s.bag_options() for s in SHAPES if s.name == args.shape), {})
    options = {'camera_rate_hz': rate, 'odom_rate_hz': args.odom_rate, 'image_format': args.format}
    info = write_bag(
        load_world(args.size, args.seed, args.family),
        args.out_dir,
        width=args.width or (320 if small_frames else 640),
        height=args.height or (240 if small_frames else 480),
        **(options | shape),
        odom_noise=args.odom_noise,
        odom_drift=args.odom_drift,
        map_resolution=args.map_resolution,
        seed=args.seed,
        max_duration_s=args.max_duration,
    )
    counts = ', '.join(f'{topic}: {n}' for topic, n in info.message_counts.items())
    print(f'{info.path}: {info.duration_s:.1f} s, {counts}; ground truth {info.ground_truth}')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
