# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The synthetic world, its renderer and the scripted tour."""

import dataclasses
import itertools
import json
import math

import numpy as np
import pytest
from rapidocr_onnxruntime import RapidOCR

from waymark.geometry import Pose
from waymark.sim.render import render, render_with_depth
from waymark.sim.trajectory import START_NS, plan_tour, scripted_tour
from waymark.sim.world import SIGN_STANDOFF, build_demo_world
from waymark_testing.worlds import distance_to_walls, reachable_rooms

SEEDS = (0, 1, 2, 7)
CAMERA_Z = 0.45


def _facing(sign, distance: float) -> Pose:
    """The camera pose `distance` in front of the sign, looking straight at it."""
    x = sign.position[0] + distance * sign.normal[0]
    y = sign.position[1] + distance * sign.normal[1]
    return Pose.from_xyz_yaw(x, y, CAMERA_Z, sign.yaw + math.pi)


@pytest.mark.parametrize('seed', SEEDS)
def test_signs_hang_on_their_rooms_walls(seed):
    world = build_demo_world(seed)
    for sign in world.signs:
        left, right = sign.endpoints
        backing = []
        for wall in world.walls:
            a, b = np.array(wall.a), np.array(wall.b)
            along = (b - a) / np.linalg.norm(b - a)
            offsets = [along[0] * (p - a)[1] - along[1] * (p - a)[0] for p in (left, right)]
            spans = [np.dot(p - a, along) for p in (left, right)]
            if (
                np.allclose(np.abs(offsets), SIGN_STANDOFF, atol=1e-9)
                and min(spans) >= 0.0
                and max(spans) <= np.linalg.norm(b - a)
            ):
                backing.append(wall)
        assert [w.room for w in backing] == [sign.room], sign.text
        inside = np.array(sign.position[:2]) + 0.5 * sign.normal
        assert world.room(sign.room).contains(*inside), sign.text
        assert 1.2 <= sign.position[2] <= 1.6


@pytest.mark.parametrize('seed', SEEDS)
def test_signs_are_distinct_and_far_apart(seed):
    signs = build_demo_world(seed).signs
    assert len(signs) >= 5
    assert len({s.text for s in signs}) == len(signs)
    assert len({s.room for s in signs}) == len(signs)
    for s, t in itertools.combinations(signs, 2):
        assert math.dist(s.position, t.position) >= 4.0, (s.text, t.text)


@pytest.mark.parametrize('seed', SEEDS)
def test_doorways_are_open_and_connect_all_rooms(seed):
    world = build_demo_world(seed)
    centres = np.array([d.centre for d in world.doorways])
    # Only the jambs (half a door away) are near a doorway's centre: the gap is really open.
    assert np.allclose(
        distance_to_walls(world, centres),
        [d.width / 2 for d in world.doorways],
    )
    assert reachable_rooms(world) == {r.name for r in world.rooms}


def test_world_depends_only_on_seed_and_serialises():
    assert build_demo_world(3) == build_demo_world(3)
    assert build_demo_world(3) != build_demo_world(4)
    world = build_demo_world(3)
    data = json.loads(world.to_json())
    assert data['name'] == world.name and data['seed'] == 3
    assert {s['text']: s['position'] for s in data['signs']} == {
        s.text: list(s.position) for s in world.signs
    }
    assert len(data['walls']) == len(world.walls)
    assert data['rooms'][0]['polygon'][2] == [world.rooms[0].x_max, world.rooms[0].y_max]


@pytest.mark.parametrize('seed', SEEDS)
def test_tour_keeps_clear_of_walls_and_inside_rooms(seed):
    world = build_demo_world(seed)
    poses = scripted_tour(world, rate_hz=20.0, seed=seed)
    points = np.array([p.position[:2] for _, p in poses])
    assert distance_to_walls(world, points).min() >= 0.3
    assert all(world.room_at(x, y) is not None for x, y in points)
    assert all(p.position[2] == 0.0 for _, p in poses)


@pytest.mark.parametrize('seed', SEEDS)
def test_tour_stops_facing_every_sign_and_revisits_a_room(seed):
    world = build_demo_world(seed)
    poses = scripted_tour(world, rate_hz=10.0, seed=seed)
    for sign in world.signs:
        facing = 0
        for _, pose in poses:
            dx, dy = sign.position[0] - pose.position[0], sign.position[1] - pose.position[1]
            bearing_error = abs(math.remainder(math.atan2(dy, dx) - pose.yaw, math.tau))
            facing += 2.0 <= math.hypot(dx, dy) <= 3.5 and bearing_error < math.radians(2)
        assert facing >= 15, sign.text  # held still for ~2 s at 10 Hz
    visits = [
        room for room, _ in itertools.groupby(world.room_at(*p.position[:2]).name for _, p in poses)
    ]
    side_visits = [room for room in visits if room != world.rooms[0].name]
    assert set(visits) == {r.name for r in world.rooms}
    assert len(side_visits) > len(set(side_visits))


def test_tour_is_smooth_deterministic_and_starts_at_the_fixed_epoch():
    world = build_demo_world(0)
    poses = scripted_tour(world, rate_hz=20.0, seed=0)
    assert poses == scripted_tour(world, rate_hz=20.0, seed=0)
    stamps = np.array([s for s, _ in poses])
    assert stamps[0] == START_NS
    assert np.all(np.diff(stamps) == 50_000_000)
    xy = np.array([p.position[:2] for _, p in poses])
    yaw = np.unwrap([p.yaw for _, p in poses])
    assert np.linalg.norm(np.diff(xy, axis=0), axis=1).max() <= 0.5 * 0.05 + 1e-9
    assert np.abs(np.diff(yaw)).max() <= 0.8 * 0.05 + 1e-9
    texts = [view.text for view in plan_tour(world, seed=0).views]
    assert sorted(set(texts)) == sorted(s.text for s in world.signs)
    assert texts[-1] in texts[:-1]  # the revisit


def test_render_shape_dtype_and_determinism():
    world = build_demo_world(0)
    pose = Pose.from_xyz_yaw(2.0, 1.5, CAMERA_Z, 0.3)
    image = render(world, pose, width=160, height=120)
    assert image.shape == (120, 160, 3) and image.dtype == np.uint8
    assert np.array_equal(image, render(world, pose, width=160, height=120))
    assert len(np.unique(image.reshape(-1, 3), axis=0)) > 20  # walls, floor, shading
    turned = render(world, Pose.from_xyz_yaw(2.0, 1.5, CAMERA_Z, 1.9), width=160, height=120)
    assert not np.array_equal(image, turned)


def test_depth_image_measures_what_each_pixel_shows():
    world = build_demo_world(0)
    sign = world.signs[0]
    toward = _facing(sign, 3.0)
    image, depth = render_with_depth(world, toward, width=160, height=120)
    assert np.array_equal(image, render(world, toward, width=160, height=120))
    assert depth.shape == (120, 160) and depth.dtype == np.float32
    bare = dataclasses.replace(world, signs=())
    on_sign = np.abs(image.astype(int) - render(bare, toward, width=160, height=120)).sum(-1) > 0
    # The sign is 3 m ahead along the optical axis: its pixels are 3 m deep.
    assert np.median(depth[on_sign]) == pytest.approx(3.0, abs=0.05)
    # The floor straight below the optical axis: camera height over the ray's descent.
    focal = 80.0  # 90 degrees over 160 pixels
    row = 119
    assert depth[row, 80] == pytest.approx(CAMERA_Z * focal / (row - 59.5), rel=1e-3)
    assert np.all(depth > 0)


def test_sign_appears_only_when_faced():
    world = build_demo_world(0)
    bare = dataclasses.replace(world, signs=())
    sign = world.signs[0]
    toward = _facing(sign, 3.0)
    with_sign = render(world, toward, width=160, height=120).astype(int)
    diff = np.abs(with_sign - render(bare, toward, width=160, height=120)).sum(-1) > 0
    rows, cols = np.nonzero(diff)
    assert diff.sum() > 300
    assert abs(cols.mean() - 79.5) < 3  # centred, since we look straight at it
    assert rows.mean() < 60  # above the horizon: it hangs higher than the camera
    away = Pose(toward.position, Pose.from_xyz_yaw(0, 0, 0, sign.yaw).orientation)
    assert np.array_equal(
        render(world, away, width=160, height=120), render(bare, away, width=160, height=120)
    )


@pytest.fixture(scope='module')
def ocr():
    return RapidOCR()


def _read(ocr, image: np.ndarray) -> str:
    result, _ = ocr(image)
    return ' '.join(line[1] for line in result or []).lower()


@pytest.mark.parametrize('seed', [0, 5])
def test_ocr_reads_every_sign_from_three_metres(ocr, seed):
    world = build_demo_world(seed)
    for sign in world.signs:
        assert sign.text.lower() in _read(ocr, render(world, _facing(sign, 3.0))), sign.text


def test_ocr_reads_a_sign_near_and_far_and_off_axis(ocr):
    world = build_demo_world(1)
    sign = next(s for s in world.signs if s.text == 'COFFEE SHOP')
    for distance in (1.5, 5.0):
        assert 'coffee shop' in _read(ocr, render(world, _facing(sign, distance))), distance
    side = _facing(sign, 3.0)
    x, y = side.position[0] - sign.normal[1], side.position[1] + sign.normal[0]
    yaw = math.atan2(sign.position[1] - y, sign.position[0] - x)
    assert 'coffee shop' in _read(ocr, render(world, Pose.from_xyz_yaw(x, y, CAMERA_Z, yaw)))
