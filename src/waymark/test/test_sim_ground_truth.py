# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Bags of generated worlds: latched topics, drifting odometry and the ground-truth contract."""

import json
import math

import numpy as np
import pytest
from rosbags.rosbag2 import Reader
from rosbags.typesys import Stores, get_typestore

from waymark.sim.bag import DEFAULT_EXTRINSIC, main, write_bag
from waymark.sim.generate import generate_world
from waymark.sim.world import occupancy_grid

SHORT = {'width': 96, 'height': 72, 'max_duration_s': 40.0, 'camera_rate_hz': 2.0}


def _read(path):
    typestore = get_typestore(Stores.ROS2_JAZZY)
    messages, qos = {}, {}
    with Reader(path) as reader:
        for conn in reader.connections:
            qos[conn.topic] = conn.ext.offered_qos_profiles
        for conn, _, raw in reader.messages():
            messages.setdefault(conn.topic, []).append(typestore.deserialize_cdr(raw, conn.msgtype))
    return messages, qos


@pytest.fixture(scope='module')
def small_bag(tmp_path_factory):
    world = generate_world(0, 'small')
    info = write_bag(world, tmp_path_factory.mktemp('gen') / 'bag', seed=0, **SHORT)
    return world, info, json.loads(info.ground_truth.read_text())


def test_tf_static_and_map_round_trip_latched(small_bag):
    world, info, _ = small_bag
    messages, qos = _read(info.path)
    assert info.static_topics == {
        '/tf_static': 'tf2_msgs/msg/TFMessage',
        '/map': 'nav_msgs/msg/OccupancyGrid',
    }
    for topic in ('/tf_static', '/map'):
        assert len(messages[topic]) == 1
        assert [q.durability.name for q in qos[topic]] == ['TRANSIENT_LOCAL']
    (tf,) = messages['/tf_static'][0].transforms
    assert (tf.header.frame_id, tf.child_frame_id) == ('base_link', 'camera')
    t = tf.transform.translation
    assert (t.x, t.y, t.z) == DEFAULT_EXTRINSIC.position
    grid_msg = messages['/map'][0]
    (x0, y0), grid = occupancy_grid(world, 0.05)
    assert grid_msg.header.frame_id == 'map'
    assert (grid_msg.info.width, grid_msg.info.height) == (grid.shape[1], grid.shape[0])
    assert math.isclose(grid_msg.info.resolution, 0.05, rel_tol=1e-6)
    assert (grid_msg.info.origin.position.x, grid_msg.info.origin.position.y) == (x0, y0)
    assert np.array_equal(grid_msg.data.reshape(grid.shape), grid)


def test_ground_truth_contract(small_bag):
    world, _, truth = small_bag
    assert (truth['world_name'], truth['size']) == ('small-0', 'small')
    assert [r['name'] for r in truth['rooms']] == [r.name for r in world.rooms]
    assert truth['rooms'][0]['polygon'][2] == [world.rooms[0].x_max, world.rooms[0].y_max]
    marks = {m['id']: m for m in truth['landmarks']}
    assert len(marks) == len(world.signs) + len(world.objects)
    sign = marks['sign-0']
    assert sign == {
        'id': 'sign-0',
        'kind': 'sign',
        'label': world.signs[0].text,
        'category': 'sign',
        'color': None,
        'room': world.signs[0].room,
        'position': [round(v, 6) for v in world.signs[0].position],
    }
    obj = world.objects[0]
    assert marks['obj-0']['label'] == f'{obj.color} {obj.category}'
    assert (marks['obj-0']['category'], marks['obj-0']['color']) == (obj.category, obj.color)
    assert marks['obj-0']['position'][2] == pytest.approx(obj.height / 2)
    seen = set()
    for image in truth['images']:
        assert set(image['visible']) <= set(marks)
        seen |= set(image['visible'])
    assert any(m.startswith('obj-') for m in seen)


def test_a_sign_stop_shows_that_sign(small_bag):
    world, _, truth = small_bag
    text_to_id = {s.text: f'sign-{i}' for i, s in enumerate(world.signs)}
    views = truth['sign_views']
    assert views
    for view in views:
        during = [i for i in truth['images'] if view['start_ns'] <= i['stamp_ns'] <= view['end_ns']]
        assert during
        assert all(text_to_id[view['text']] in i['visible'] for i in during)


def test_rewrite_is_byte_identical_and_drift_grows(small_bag, tmp_path):
    world, info, _ = small_bag
    again = write_bag(world, tmp_path / 'bag', seed=0, **SHORT)
    for name in ('bag.mcap', 'ground_truth.json', 'metadata.yaml'):
        assert (again.path / name).read_bytes() == (info.path / name).read_bytes(), name
    drifted = write_bag(world, tmp_path / 'drift', seed=0, odom_drift=0.02, **SHORT)
    truth = json.loads(drifted.ground_truth.read_text())
    messages, _ = _read(drifted.path)
    errors = [
        math.hypot(m.pose.pose.position.x - p['x'], m.pose.pose.position.y - p['y'])
        for m, p in zip(messages['/odom'], truth['trajectory'], strict=True)
    ]
    assert errors[0] == 0.0
    assert errors[-1] > 0.05 and errors[-1] > errors[len(errors) // 4]
    assert truth['odometry']['drift'] == 0.02


def test_command_line_writes_a_generated_world(tmp_path, capsys):
    out = tmp_path / 'cli'
    args = [str(out), '--seed', '1', '--size', 'medium', '--rate', '1', '--max-duration', '3']
    assert main([*args, '--width', '64', '--height', '48']) == 0
    truth = json.loads((out / 'ground_truth.json').read_text())
    assert (truth['size'], truth['world_name']) == ('medium', 'medium-1')
    assert len(truth['images']) == 3
    assert str(out) in capsys.readouterr().out
