# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Layout families: old worlds unchanged, new ones reproducible, connected, toured, and
holding the repeated objects and sensor shapes they are meant to test."""

import hashlib
import itertools
import json
import math
from collections import Counter

import numpy as np
import pytest

from waymark.evaluation.suite import case_name, family_table, recording_options
from waymark.sim.bag import GENERATED_CAMERA_RATE_HZ
from waymark.sim.generate import FAMILIES, generate_world
from waymark.sim.landmarks import landmarks
from waymark.sim.shapes import SHAPES, sensor_shape
from waymark.sim.trajectory import plan_tour
from waymark_testing.worlds import distance_to_walls, reachable_rooms

NEW = [f for f in FAMILIES if f != 'rooms']

# sha256 (first 16 hex digits) of the world's JSON and of its landmarks, as generated
# before families existed.
BEFORE_FAMILIES = {
    ('small', 0): ('fb72bffb5d43d8e7', '599795132c419225'),
    ('small', 1): ('1eb0504d53f943cf', '089908681ca298c5'),
    ('medium', 0): ('421a6838de4b7c70', 'c0b0a589cfd655ab'),
    ('medium', 1): ('da5c965d6ad7dcfe', '592f050070c7ea52'),
}


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@pytest.mark.parametrize(('size', 'seed'), list(BEFORE_FAMILIES))
def test_rooms_family_worlds_are_those_made_before_families(size, seed):
    world = generate_world(seed, size)
    marks = json.dumps([m.to_dict() for m in landmarks(world)], sort_keys=True)
    assert (_sha(world.to_json()), _sha(marks)) == BEFORE_FAMILIES[size, seed]
    assert generate_world(seed, size, 'rooms') == world


@pytest.mark.parametrize('family', NEW)
def test_same_seed_same_world_other_seed_or_family_other_world(family):
    world = generate_world(3, 'small', family)
    assert world.to_json() == generate_world(3, 'small', family).to_json()
    assert world.to_json() != generate_world(4, 'small', family).to_json()
    assert world.name == f'{family}-small-3' and world.family == family
    assert json.loads(world.to_json())['family'] == family
    others = {generate_world(3, 'small', f).to_json() for f in FAMILIES}
    assert len(others) == len(FAMILIES)
    with pytest.raises(ValueError, match='family'):
        generate_world(0, 'small', 'maze')


@pytest.mark.parametrize(('family', 'seed'), list(itertools.product(NEW, (0, 1))))
def test_new_families_are_connected_signed_and_furnished(family, seed):
    world = generate_world(seed, 'small', family)
    assert reachable_rooms(world) == {r.name for r in world.rooms}
    for a, b in itertools.combinations(world.rooms, 2):  # rooms may touch but never overlap
        overlap_x = min(a.x_max, b.x_max) - max(a.x_min, b.x_min)
        overlap_y = min(a.y_max, b.y_max) - max(a.y_min, b.y_min)
        assert min(overlap_x, overlap_y) <= 1e-9, (a.name, b.name)
    assert {s.room for s in world.signs} == {r.name for r in world.rooms}
    assert len({s.text for s in world.signs}) == len(world.signs)
    for s, t in itertools.combinations(world.signs, 2):
        assert math.dist(s.position, t.position) >= 4.0, (s.text, t.text)
    for sign in world.signs:
        for end in sign.endpoints:  # the whole panel hangs on wall, not across a doorway
            assert distance_to_walls(world, end[None])[0] < 0.05
    points = np.array([o.position for o in world.objects])
    radii = np.array([o.radius for o in world.objects])
    assert (distance_to_walls(world, points) - radii >= 0.3).all()
    rooms_per_label = Counter(label for label, _ in {(o.label, o.room) for o in world.objects})
    assert rooms_per_label.most_common(1)[0][1] >= 3  # the same thing in three rooms


def test_corridor_branches_end_in_dead_ends_and_open_plans_have_wide_openings():
    corridor = generate_world(0, 'small', 'corridor')
    branches = [r for r in corridor.rooms if r.name.startswith('branch')]
    assert len(branches) >= 2
    for branch in branches:  # one way into the branch corridor from the main one
        mouths = [d for d in corridor.doorways if set(d.rooms) == {'corridor', branch.name}]
        assert len(mouths) == 1
    zones = generate_world(0, 'small', 'open')
    assert min(d.width for d in zones.doorways) >= 2.0


@pytest.mark.parametrize('size', ['small', 'medium'])
def test_lookalike_floors_repeat_rooms_and_objects_with_other_signs(size):
    world = generate_world(0, size, 'lookalike')
    floors = Counter(r.name.split('_f')[1][0] for r in world.rooms if '_f' in r.name)
    assert len(floors) >= 3 and len(set(floors.values())) == 1
    layouts = {}
    for obj in world.objects:
        room = world.room(obj.room)
        local = (
            obj.label,
            round(obj.position[0] - room.x_min, 3),
            round(obj.position[1] - room.y_min, 3),
        )
        layouts.setdefault(obj.room.split('_f')[1][1:], Counter())[local] += 1
    assert all(set(n.values()) == {len(floors)} for n in layouts.values())  # on every floor
    rooms_per_label = Counter(label for label, _ in {(o.label, o.room) for o in world.objects})
    assert all(n >= 3 for n in rooms_per_label.values())
    assert len({s.text for s in world.signs}) == len(world.signs)


@pytest.mark.parametrize('family', NEW)
def test_tours_cover_every_room_collision_free_and_revisit_far(family):
    world = generate_world(1, 'small', family)
    tour = plan_tour(world, seed=1)
    xy = tour.states_at(tour.stamps(5.0))[:, :2]
    assert distance_to_walls(world, xy).min() >= 0.3
    centres = np.array([o.position for o in world.objects])
    radii = np.array([o.radius for o in world.objects])
    assert (np.linalg.norm(xy[:, None] - centres[None], axis=2) - radii).min() >= 0.3
    rooms = [world.room_at(x, y) for x, y in xy]
    assert all(r is not None for r in rooms)
    assert {r.name for r in rooms} == {r.name for r in world.rooms}
    texts = [v.text for v in tour.views]
    assert set(texts) == {s.text for s in world.signs}
    assert len(texts) - len(set(texts)) >= len(world.signs) // 2  # long tours come back
    assert plan_tour(world, seed=1).times_s.tolist() == tour.times_s.tolist()
    nearest_first = plan_tour(world, seed=1, shuffled_revisits=False)
    assert nearest_first.times_s.tolist() != tour.times_s.tolist()


def test_sensor_shapes_cover_the_presets_kinds_across_the_suite():
    chosen = {
        sensor_shape(FAMILIES.index(f) - 1, size, seed)
        for f in NEW
        for size in ('small', 'medium', 'large')
        for seed in (0, 1)
    }
    assert chosen == set(SHAPES)
    large = {sensor_shape(i, 'large', seed) for i in range(3) for seed in (0, 1)}
    assert {s.image_format for s in large} == {'jpeg'}  # raw large bags would be gigabytes
    assert {s.image_format for s in SHAPES} == {'jpeg', 'raw'}
    assert {s.pose_type for s in SHAPES} == {'odometry', 'pose_stamped', 'pose_with_covariance'}
    assert sensor_shape(0, 'small', 0) == sensor_shape(0, 'small', 0)


def test_suite_names_old_worlds_as_before_and_records_new_ones_in_their_shape():
    assert case_name('rooms', 'small', 0) == 'small-0'
    assert case_name('corridor', 'small', 0) == 'corridor-small-0'
    assert recording_options('rooms', 'large', 1) == {
        'camera_rate_hz': GENERATED_CAMERA_RATE_HZ,
        'width': 320,
        'height': 240,
    }
    options = recording_options('open', 'small', 0)
    shape = sensor_shape(FAMILIES.index('open') - 1, 'small', 0)
    assert options == shape.bag_options() | {'width': 320, 'height': 240}


def test_family_table_weights_worlds_by_their_questions():
    def result(questions: int, success: float) -> dict:
        overall = {'questions': questions, 'success_at': {'2': success}}
        return {'report': {'answerers': {'embedder-only': {'overall': overall}}}}

    results = {'small-0': result(10, 1.0), 'corridor-small-0': result(30, 0.0)}
    results['corridor-small-1'] = result(10, 1.0)
    families = {'small-0': 'rooms', 'corridor-small-0': 'corridor', 'corridor-small-1': 'corridor'}
    rows = family_table(results, families).splitlines()[2:]
    assert rows[0].startswith('| rooms | embedder-only | 1 | 10 | ')
    assert rows[1].startswith('| corridor | embedder-only | 2 | 40 | ')
    assert '| 25% |' in rows[1]


def test_family_table_names_an_agent_row_that_fell_back_too_often():
    def result(fallback_rate: float) -> dict:
        overall = {'questions': 10, 'success_at': {'2': 0.5}, 'fallback_rate': fallback_rate}
        return {'report': {'answerers': {'agent[small]': {'overall': overall}}}}

    results = {'small-0': result(0.0), 'small-1': result(0.3), 'corridor-small-0': result(0.1)}
    families = {'small-0': 'rooms', 'small-1': 'rooms', 'corridor-small-0': 'corridor'}
    rows = family_table(results, families).splitlines()[2:]
    # 3 of the 20 rooms questions fell back: over the limit of 10 %
    assert rows[0].startswith("| rooms | agent[small] (fell back on 15%: not the model's result) |")
    assert rows[1].startswith('| corridor | agent[small] | 1 | 10 | ')
