# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The simulated rosbag2: read back with rosbags, checked against its ground truth."""

import io
import json
import math

import numpy as np
import pytest
from PIL import Image
from rosbags.rosbag2 import Reader
from rosbags.typesys import Stores, get_typestore

from waymark.geometry import Pose, interpolate
from waymark.sim.bag import DEFAULT_EXTRINSIC, main, write_bag
from waymark.sim.render import render
from waymark.sim.world import build_demo_world

SIZE = {'width': 160, 'height': 120}
SHORT = {'max_duration_s': 30.0, **SIZE}


def _read(path):
    typestore = get_typestore(Stores.ROS2_JAZZY)
    messages = {}
    with Reader(path) as reader:
        types = {c.topic: c.msgtype for c in reader.connections}
        for conn, log_ns, raw in reader.messages():
            msg = typestore.deserialize_cdr(raw, conn.msgtype)
            messages.setdefault(conn.topic, []).append((log_ns, msg))
    return types, messages


def _stamp(msg) -> int:
    return msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec


@pytest.fixture(scope='module')
def short_bag(tmp_path_factory):
    world = build_demo_world(0)
    info = write_bag(world, tmp_path_factory.mktemp('first') / 'bag', seed=0, **SHORT)
    return world, info, *_read(info.path)


def test_bag_holds_camera_and_odometry_on_their_own_clocks(short_bag):
    _, info, types, messages = short_bag
    assert info.topics == {
        '/odom': 'nav_msgs/msg/Odometry',
        '/camera/image/compressed': 'sensor_msgs/msg/CompressedImage',
    }
    assert info.static_topics == {}  # the demo bag stays replayable without tf2_msgs
    assert types == info.topics
    assert {t: len(m) for t, m in messages.items()} == info.message_counts
    assert info.message_counts['/odom'] == 601  # 30 s at 20 Hz
    assert info.message_counts['/camera/image/compressed'] == 150  # 30 s at 5 Hz
    assert 29.9 <= info.duration_s <= 30.0
    stamps = {}
    for topic, msgs in messages.items():
        stamps[topic] = np.array([_stamp(m) for _, m in msgs])
        assert [log for log, _ in msgs] == stamps[topic].tolist()
        assert np.all(np.diff(stamps[topic]) > 0)
    assert not set(stamps['/odom']) & set(stamps['/camera/image/compressed'])
    odom = messages['/odom'][0][1]
    assert (odom.header.frame_id, odom.child_frame_id) == ('map', 'base_link')
    assert not odom.pose.covariance.any()
    image = messages['/camera/image/compressed'][0][1]
    assert (image.header.frame_id, image.format) == ('camera', 'jpeg')
    decoded = np.asarray(Image.open(io.BytesIO(image.data.tobytes())))
    assert decoded.shape == (120, 160, 3)


def test_ground_truth_matches_the_bag(short_bag):
    world, info, _, messages = short_bag
    truth = json.loads(info.ground_truth.read_text())
    assert truth['world'] == json.loads(world.to_json())
    assert (truth['camera']['width'], truth['camera']['height']) == (160, 120)
    assert truth['camera']['extrinsic'] == [0.25, 0.0, 0.45, 0.0, 0.0, 0.0, 1.0]
    odom = messages['/odom']
    assert [p['stamp_ns'] for p in truth['trajectory']] == [_stamp(m) for _, m in odom]
    for point, (_, msg) in zip(truth['trajectory'], odom, strict=True):
        q = msg.pose.pose.orientation
        assert math.isclose(point['x'], msg.pose.pose.position.x, abs_tol=1e-6)
        assert math.isclose(point['y'], msg.pose.pose.position.y, abs_tol=1e-6)
        yaw_error = math.remainder(point['yaw'] - 2 * math.atan2(q.z, q.w), math.tau)
        assert abs(yaw_error) < 1e-5
    images = messages['/camera/image/compressed']
    assert [p['stamp_ns'] for p in truth['images']] == [_stamp(m) for _, m in images]

    # What a consumer does: interpolate odometry at the image stamp, apply the extrinsic.
    odom_stamps = [_stamp(m) for _, m in odom]
    for entry, (_, msg) in list(zip(truth['images'], images, strict=True))[::10]:
        i = int(np.searchsorted(odom_stamps, entry['stamp_ns']))
        before, after = (odom[j][1].pose.pose for j in (i - 1, i))
        fraction = (entry['stamp_ns'] - odom_stamps[i - 1]) / (odom_stamps[i] - odom_stamps[i - 1])
        base = interpolate(*(_pose(p) for p in (before, after)), fraction)
        camera = base.compose(DEFAULT_EXTRINSIC)
        assert math.dist(camera.position, (entry['x'], entry['y'], entry['z'])) < 0.03
        assert abs(math.remainder(camera.yaw - entry['yaw'], math.tau)) < 0.05
        # The picture is the one rendered from the recorded camera pose.
        expected = render(
            world, Pose.from_xyz_yaw(entry['x'], entry['y'], entry['z'], entry['yaw']), **SIZE
        )
        decoded = np.asarray(Image.open(io.BytesIO(msg.data.tobytes()))).astype(int)
        assert np.abs(decoded - expected).mean() < 4.0


def _pose(msg) -> Pose:
    p, q = msg.position, msg.orientation
    return Pose((p.x, p.y, p.z), (q.x, q.y, q.z, q.w))


def test_same_arguments_write_identical_files(short_bag, tmp_path):
    world, info, _, _ = short_bag
    again = write_bag(world, tmp_path / 'bag', seed=0, **SHORT)
    names = sorted(p.name for p in info.path.iterdir())
    assert (
        names
        == sorted(p.name for p in again.path.iterdir())
        == [
            'bag.mcap',
            'ground_truth.json',
            'metadata.yaml',
        ]
    )
    for name in names:
        assert (info.path / name).read_bytes() == (again.path / name).read_bytes(), name
    other = write_bag(world, tmp_path / 'other' / 'bag', seed=1, **SHORT)
    assert (other.path / 'bag.mcap').read_bytes() != (info.path / 'bag.mcap').read_bytes()


def test_raw_images_and_noisy_odometry(tmp_path):
    world = build_demo_world(2)
    info = write_bag(
        world,
        tmp_path / 'raw',
        image_format='raw',
        odom_noise=0.05,
        seed=2,
        max_duration_s=5.0,
        **SIZE,
    )
    types, messages = _read(info.path)
    assert types['/camera/image_raw'] == 'sensor_msgs/msg/Image'
    truth = json.loads(info.ground_truth.read_text())
    _, image = messages['/camera/image_raw'][3]
    assert (image.encoding, image.height, image.width, image.step) == ('rgb8', 120, 160, 480)
    entry = truth['images'][3]
    expected = render(
        world, Pose.from_xyz_yaw(entry['x'], entry['y'], entry['z'], entry['yaw']), **SIZE
    )
    assert np.abs(image.data.reshape(120, 160, 3).astype(int) - expected).max() <= 1
    errors = [
        msg.pose.pose.position.x - point['x']
        for point, (_, msg) in zip(truth['trajectory'], messages['/odom'], strict=True)
    ]
    assert 0.03 < np.std(errors) < 0.07
    assert truth['odometry']['noise_std'] == 0.05


def test_command_line_writes_a_bag(tmp_path, capsys):
    out = tmp_path / 'cli'
    assert (
        main([str(out), '--seed', '3', '--max-duration', '2', '--width', '64', '--height', '48'])
        == 0
    )
    assert (out / 'cli.mcap').is_file() and (out / 'ground_truth.json').is_file()
    assert str(out) in capsys.readouterr().out
