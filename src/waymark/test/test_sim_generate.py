# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Generated worlds: layout, signs, objects, the tour through them, and their renders."""

import dataclasses
import itertools
import math
from collections import Counter

import numpy as np
import pytest
from rapidocr_onnxruntime import RapidOCR

from waymark.geometry import Pose
from waymark.sim.generate import SIZES, generate_world
from waymark.sim.landmarks import visible_landmarks
from waymark.sim.objects import SceneObject
from waymark.sim.render import render
from waymark.sim.trajectory import plan_tour
from waymark.sim.world import occupancy_grid
from waymark_testing.worlds import distance_to_walls, reachable_rooms

CASES = [(size, seed) for size in SIZES for seed in (0, 1)]
CAMERA_Z = 0.45


@pytest.mark.parametrize(('size', 'seed'), CASES)
def test_rooms_are_connected_and_sizes_scale(size, seed):
    world = generate_world(seed, size)
    assert reachable_rooms(world) == {r.name for r in world.rooms}
    rooms = [r for r in world.rooms if not r.name.startswith(('corridor', 'spine'))]
    assert {'small': 5, 'medium': 13, 'large': 36}[size] == len(rooms)
    for a, b in itertools.combinations(world.rooms, 2):  # rooms may touch but never overlap
        overlap_x = min(a.x_max, b.x_max) - max(a.x_min, b.x_min)
        overlap_y = min(a.y_max, b.y_max) - max(a.y_min, b.y_min)
        assert min(overlap_x, overlap_y) <= 1e-9, (a.name, b.name)
    assert world.size == size and world.name == f'{size}-{seed}'


@pytest.mark.parametrize(('size', 'seed'), CASES)
def test_signs_are_distinct_far_apart_and_inside_their_rooms(size, seed):
    world = generate_world(seed, size)
    assert {s.room for s in world.signs} == {r.name for r in world.rooms}
    assert len({s.text for s in world.signs}) == len(world.signs)
    for s, t in itertools.combinations(world.signs, 2):
        assert math.dist(s.position, t.position) >= 4.0, (s.text, t.text)
    for sign in world.signs:
        assert world.room(sign.room).contains(*(np.array(sign.position[:2]) + 0.5 * sign.normal))
        for end in sign.endpoints:  # the whole panel hangs on wall, not across a doorway
            assert distance_to_walls(world, end[None])[0] < 0.05


@pytest.mark.parametrize(('size', 'seed'), CASES)
def test_objects_stand_clear_of_walls_and_doors_and_classes_repeat(size, seed):
    world = generate_world(seed, size)
    assert len(world.objects) >= len(world.rooms) // 2
    points = np.array([o.position for o in world.objects])
    radii = np.array([o.radius for o in world.objects])
    assert (distance_to_walls(world, points) - radii >= 0.3).all()
    for obj in world.objects:
        assert world.room(obj.room).contains(*obj.position)
        for doorway in world.doorways:
            assert math.dist(obj.position, doorway.centre) > 1.5
    rooms_per_label = Counter(label for label, _ in {(o.label, o.room) for o in world.objects})
    assert rooms_per_label.most_common(1)[0][1] >= 2  # the same thing in two rooms


def test_same_seed_same_world_other_seed_other_world():
    assert generate_world(4, 'medium').to_json() == generate_world(4, 'medium').to_json()
    assert generate_world(4, 'medium').to_json() != generate_world(5, 'medium').to_json()
    assert generate_world(4, 'small').to_json() != generate_world(4, 'medium').to_json()
    with pytest.raises(ValueError, match='size'):
        generate_world(0, 'huge')


@pytest.mark.parametrize(('size', 'seed'), CASES)
def test_tour_is_collision_free_visits_every_room_and_revisits(size, seed):
    world = generate_world(seed, size)
    tour = plan_tour(world, seed=seed)
    stamps = tour.stamps(5.0)
    xy = tour.states_at(stamps)[:, :2]
    assert distance_to_walls(world, xy).min() >= 0.3
    centres = np.array([o.position for o in world.objects])
    radii = np.array([o.radius for o in world.objects])
    gaps = np.linalg.norm(xy[:, None] - centres[None], axis=2) - radii
    assert gaps.min() >= 0.3
    rooms = [world.room_at(x, y) for x, y in xy]
    assert all(r is not None for r in rooms)
    assert {r.name for r in rooms} == {r.name for r in world.rooms}
    texts = [v.text for v in tour.views]
    assert set(texts) == {s.text for s in world.signs}
    assert len(texts) - len(set(texts)) >= max(1, len(world.signs) // 5)
    # It stops near every object, facing it.
    states = tour.states_at(tour.stamps(10.0))
    for obj in world.objects:
        offset = np.asarray(obj.position) - states[:, :2]
        distance = np.linalg.norm(offset, axis=1)
        bearing = np.arctan2(offset[:, 1], offset[:, 0]) - states[:, 2]
        facing = np.abs(np.arctan2(np.sin(bearing), np.cos(bearing))) < 0.05
        assert (facing & (distance < obj.radius + 1.0)).sum() >= 5, obj.label
    assert plan_tour(world, seed=seed).times_s.tolist() == tour.times_s.tolist()


def test_tour_durations_per_size():
    minutes = {size: plan_tour(generate_world(0, size)).duration_ns / 60e9 for size in SIZES}
    assert minutes['small'] < minutes['medium'] < minutes['large']
    assert minutes['large'] >= 30.0  # >= 21,600 frames at 12 Hz


def test_sprites_are_drawn_in_front_of_walls_and_hidden_behind_them():
    world = generate_world(0, 'small')
    room = next(r for r in world.rooms if r.name.startswith('room'))
    # Put a red barrel 2 m in front of a camera looking into the room.
    cx, cy = room.centre
    camera = Pose.from_xyz_yaw(cx - 1.0, cy, CAMERA_Z, 0.0)
    barrel = SceneObject('barrel', 'red', (cx + 1.0, cy), room.name)
    bare = dataclasses.replace(world, objects=())
    seen = dataclasses.replace(world, objects=(barrel,))
    diff = np.abs(render(seen, camera, 160, 120).astype(int) - render(bare, camera, 160, 120))
    rows, cols = np.nonzero(diff.sum(-1) > 0)
    assert len(rows) > 200 and abs(cols.mean() - 79.5) < 3
    assert rows.max() > 60  # it stands on the floor, below the horizon
    # The same barrel beyond the room's far wall is hidden.
    behind = SceneObject('barrel', 'red', (room.x_max + 1.0, cy), room.name)
    hidden = dataclasses.replace(world, objects=(behind,))
    assert np.array_equal(render(hidden, camera, 160, 120), render(bare, camera, 160, 120))
    # A nearer box hides part of the barrel: painter's order by depth.
    box = SceneObject('box', 'blue', (cx + 0.2, cy), room.name)
    both = render(dataclasses.replace(world, objects=(barrel, box)), camera, 160, 120)
    only_box = render(dataclasses.replace(world, objects=(box,)), camera, 160, 120)
    centre = both[70:75, 70:74]  # beside the box's tape, where the barrel is behind it
    assert np.array_equal(centre, only_box[70:75, 70:74])
    assert centre[..., 2].mean() > centre[..., 0].mean()  # blue box, not red barrel


@pytest.mark.parametrize('resolution', [0.05, 0.1])
def test_occupancy_grid_marks_walls_objects_and_free_floor(resolution):
    world = generate_world(1, 'small')
    (x0, y0), grid = occupancy_grid(world, resolution)

    def cell(x, y):
        return grid[int((y - y0) // resolution), int((x - x0) // resolution)]

    for wall in world.walls:
        assert cell(*np.mean([wall.a, wall.b], axis=0)) == 100
    for obj in world.objects:
        assert cell(*obj.position) == 100
    for room in world.rooms:
        if not any(math.dist(room.centre, o.position) < o.radius + 0.2 for o in world.objects):
            assert cell(*room.centre) == 0
    for doorway in world.doorways:
        assert cell(*doorway.centre) == 0
    assert cell(x0 + 0.01, y0 + 0.01) == -1
    assert set(np.unique(grid)) == {-1, 0, 100}


def test_visible_landmarks_sees_in_front_not_behind_walls():
    world = generate_world(0, 'small')
    sign = world.signs[3]
    front = Pose.from_xyz_yaw(*(np.array(sign.position[:2]) + 3.0 * sign.normal), CAMERA_Z, 0.0)
    facing = Pose(front.position, Pose.from_xyz_yaw(0, 0, 0, sign.yaw + math.pi).orientation)
    assert 'sign-3' in visible_landmarks(world, facing, 90.0)
    away = Pose(front.position, Pose.from_xyz_yaw(0, 0, 0, sign.yaw).orientation)
    assert 'sign-3' not in visible_landmarks(world, away, 90.0)
    behind = np.array(sign.position[:2]) - 1.0 * sign.normal  # through the wall, from behind
    back = Pose.from_xyz_yaw(*behind, CAMERA_Z, sign.yaw)
    assert 'sign-3' not in visible_landmarks(world, back, 90.0)
    far = Pose.from_xyz_yaw(*(np.array(sign.position[:2]) + 3.0 * sign.normal), CAMERA_Z, 0.0)
    assert 'sign-3' not in visible_landmarks(world, far, 90.0, sign_range_m=2.0)


def test_ocr_reads_a_generated_sign():
    world = generate_world(2, 'medium')
    ocr = RapidOCR()
    sign = world.signs[5]
    x, y = np.array(sign.position[:2]) + 3.0 * sign.normal
    image = render(world, Pose.from_xyz_yaw(x, y, CAMERA_Z, sign.yaw + math.pi))
    result, _ = ocr(image)
    assert sign.text.lower() in ' '.join(line[1] for line in result or []).lower()
