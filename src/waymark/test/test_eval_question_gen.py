# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The question generator on a row of rooms walked once from west to east.

Rooms are 8 m wide along x and the robot drives along y = 3 at 1 m/s, so time and x map
one to one and "between X and Y" can be checked from positions alone. A camera sees a
landmark in its own room within 7 m.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from datetime import datetime, timezone

import pytest

from waymark.agent.relations import IN, parse_relation
from waymark.agent.spoken_time import duration_s, resolve_text
from waymark.evaluation.question_gen import generate_questions, main, render_jobs
from waymark.evaluation.questions import AnswerType, Category, QuestionSet, load_questions

START = 1_768_471_200 * 10**9  # 2026-01-15T10:00:00Z
ROOMS = ('kitchen', 'lobby', 'hall', 'office', 'lab', 'store')  # the store is never entered
LANDMARKS = (
    ('sign-0', 'sign', 'COFFEE SHOP', 'sign', None, 4.0, 6.0),
    ('sign-1', 'sign', 'LIBRARY', 'sign', None, 12.0, 6.0),
    ('sign-2', 'sign', 'PHARMACY', 'sign', None, 28.0, 6.0),
    ('obj-0', 'object', 'red barrel', 'barrel', 'red', 6.0, 1.0),
    ('obj-1', 'object', 'red barrel', 'barrel', 'red', 20.0, 1.0),
    ('obj-2', 'object', 'red barrel', 'barrel', 'red', 36.0, 1.0),
    ('obj-3', 'object', 'blue cone', 'cone', 'blue', 18.0, 5.0),
    ('obj-4', 'object', 'medkit', 'medkit', None, 38.0, 5.0),
    ('obj-5', 'object', 'green box', 'box', 'green', 13.0, 5.0),
    ('obj-6', 'object', 'green box', 'box', 'green', 34.0, 5.0),
    ('obj-7', 'object', 'yellow cone', 'cone', 'yellow', 44.0, 3.0),
    ('obj-8', 'object', 'traffic cone', 'cone', 'orange', 22.0, 5.0),  # label is not colour + class
    ('obj-9', 'object', 'green box', 'box', 'green', 37.0, 1.0),  # as near the medkit as obj-6
)
ROUTE_TEXT = re.compile(
    r'Where (?:is|are|did I see) the (.+?) (?:on the way from|between) (.+) (?:to|and) (.+)\?'
)


def _room(x: float) -> str:
    return ROOMS[int(x // 8)]


def _truth(image_period: int = 5) -> dict:
    landmarks = [
        {'id': i, 'kind': k, 'label': label, 'category': c, 'color': colour, 'room': _room(x)}
        | {'position': [x, y, 1.0 if k == 'sign' else 0.4]}
        for i, k, label, c, colour, x, y in LANDMARKS
    ]
    trajectory = [
        {'stamp_ns': START + i * 10**8, 'x': 1.0 + 0.1 * i, 'y': 3.0, 'yaw': 0.0}
        for i in range(381)
    ]
    images = []
    for pose in trajectory[::image_period]:
        x = pose['x'] + 0.25
        visible = [
            lm['id']
            for lm in landmarks
            if lm['room'] == _room(x) and math.dist(lm['position'][:2], (x, 3.0)) <= 7.0
        ]
        images.append({'stamp_ns': pose['stamp_ns'] + 1000, 'x': x, 'y': 3.0, 'z': 0.5})
        images[-1] |= {'yaw': 0.0, 'visible': visible}
    rooms = [
        {'name': name, 'polygon': [[8 * j, 0], [8 * j + 8, 0], [8 * j + 8, 6], [8 * j, 6]]}
        for j, name in enumerate(ROOMS)
    ]
    return {
        'world_name': 'row-of-rooms',
        'size': [48.0, 6.0],
        'start_ns': START,
        'end_ns': trajectory[-1]['stamp_ns'],
        'landmarks': landmarks,
        'images': images,
        'trajectory': trajectory,
        'rooms': rooms,
    }


@pytest.fixture(scope='module')
def truth() -> dict:
    return _truth()


@pytest.fixture(scope='module')
def many(truth) -> QuestionSet:
    """Every candidate the world supports (per_category far above the supply)."""
    return generate_questions(truth, seed=3, per_category=100)


def _of(questions: QuestionSet, category: Category) -> list:
    return [q for q in questions.questions if q.category is category]


def _landmark(truth: dict, landmark_id: str) -> dict:
    return next(lm for lm in truth['landmarks'] if lm['id'] == landmark_id)


def _region(truth: dict, ref: str) -> tuple[float, float]:
    """x-range over which the robot sees an anchor: its room (every anchor fills its room)."""
    name = ref.removeprefix('the ').removesuffix(' sign')
    match = [lm for lm in truth['landmarks'] if lm['label'].lower() == name]
    room = match[0]['room'] if match else name
    j = ROOMS.index(room)
    return 8.0 * j, 8.0 * j + 8.0


def test_deterministic_for_a_seed(truth):
    a = generate_questions(truth, seed=7)
    assert a == generate_questions(truth, seed=7)
    assert a != generate_questions(truth, seed=8)


def test_every_category_present_and_capped(truth):
    questions = generate_questions(truth, seed=0, per_category=4)
    counts = {c: len(_of(questions, c)) for c in Category}
    assert counts == dict.fromkeys(Category, 4)
    assert questions.world == 'row-of-rooms'
    assert len({q.id for q in questions.questions}) == len(questions.questions)


@pytest.mark.parametrize('seed', [0, 1, 2])
def test_generated_sets_validate_and_round_trip(tmp_path, truth, seed):
    questions = generate_questions(truth, seed=seed, per_category=6)
    assert QuestionSet.model_validate(questions.model_dump()) == questions
    path = tmp_path / 'questions.json'
    main([_write_truth(tmp_path, truth), str(path), '--seed', str(seed), '--per-category', '6'])
    assert load_questions(path) == questions


def _write_truth(tmp_path, truth) -> str:
    path = tmp_path / 'ground_truth.json'
    path.write_text(json.dumps(truth))
    return str(path)


def test_only_seen_landmarks_are_targets(many):
    targets = {q.target for q in many.questions if q.target}
    assert 'obj-7' not in targets  # in the store, which the robot never entered
    assert targets >= {'sign-0', 'sign-1', 'sign-2', 'obj-1', 'obj-3', 'obj-4', 'obj-5'}


def test_basic_asks_unique_labels_at_their_position(truth, many):
    basic = _of(many, Category.BASIC)
    assert {q.target for q in basic} == {'sign-0', 'sign-1', 'sign-2', 'obj-3', 'obj-4', 'obj-8'}
    for q in basic:
        assert q.answer_type is AnswerType.POSITION
        assert list(q.position) == _landmark(truth, q.target)['position']


def test_observed_from_lists_the_cameras_that_saw_the_target(truth, many):
    q = next(q for q in many.questions if q.target == 'sign-1' and q.observed_from)
    expected = [(i['x'], i['y'], i['yaw']) for i in truth['images'] if 'sign-1' in i['visible']]
    assert q.observed_from == expected
    dense = generate_questions(_truth(image_period=1), per_category=100)
    q = next(q for q in dense.questions if q.target == 'sign-1' and q.observed_from)
    seen = [(i['x'], i['y'], i['yaw']) for i in _truth(1)['images'] if 'sign-1' in i['visible']]
    assert len(seen) > 50
    assert len(q.observed_from) == 50
    assert q.observed_from[0] == seen[0] and q.observed_from[-1] == seen[-1]
    assert set(q.observed_from) <= set(seen)


def test_local_disambiguates_a_repeated_class(truth, many):
    local = _of(many, Category.LOCAL)
    # The lab's two green boxes are about equally near its only unique landmark, and share
    # their room: never asked.
    assert {q.target for q in local} == {'obj-0', 'obj-1', 'obj-2', 'obj-5'}
    assert any(q.question.endswith('green box next to the library sign?') for q in local)
    assert any(q.question.endswith('red barrel in the coffee shop room?') for q in local)
    for q in local:
        target = _landmark(truth, q.target)
        same = [lm for lm in truth['landmarks'] if lm['label'] == target['label']]
        assert len(same) >= 2
        # Every one reads as "instance, relation, anchor" to the agent's parser.
        relation = parse_relation(q.question)
        assert relation is not None and relation.target == target['label']
        if relation.relation == IN:  # the room, by its sign or its name: the only one there
            room = next(
                (lm['room'] for lm in truth['landmarks'] if lm['label'].lower() == relation.anchor),
                relation.anchor,
            )
            assert [lm['id'] for lm in same if lm['room'] == room] == [q.target]
            continue
        anchor = next(
            lm for lm in truth['landmarks'] if lm['label'].lower() in relation.anchor.lower()
        )
        nearest = min(same, key=lambda lm: math.dist(lm['position'], anchor['position']))
        assert nearest['id'] == q.target


def test_route_answer_is_the_instance_between_the_anchors(truth, many):
    route = _of(many, Category.ROUTE)
    assert {q.target for q in route} == {'obj-1', 'obj-5'}
    parsed = {ROUTE_TEXT.fullmatch(q.question).groups(): q.target for q in route}
    assert parsed[('red barrel', 'the library sign', 'the pharmacy sign')] == 'obj-1'
    for q in route:
        label, start, end = ROUTE_TEXT.fullmatch(q.question).groups()
        (start_lo, start_hi), (end_lo, end_hi) = _region(truth, start), _region(truth, end)
        assert start_hi <= end_lo  # the robot went from X to Y
        target = _landmark(truth, q.target)
        assert target['label'] == label
        assert start_hi <= target['position'][0] <= end_lo
        others = [lm for lm in truth['landmarks'] if lm['label'] == label and lm is not target]
        assert others
        assert all(not start_lo <= lm['position'][0] <= end_hi for lm in others)


def test_temporal_answers_match_the_trajectory(truth, many):
    temporal = _of(many, Category.TEMPORAL)
    where = [q for q in temporal if q.question.startswith('Where was I at')]
    when = [q for q in temporal if q.question.startswith('When did I')]
    assert where and when and len(where) + len(when) == len(temporal)
    for q in where:
        clock = datetime.fromtimestamp(q.time_ns / 1e9, tz=timezone.utc).strftime('%H:%M:%S')
        assert f'at {clock}' in q.question
        assert q.time_ns % 10**9 == 0
        assert q.answer_type is AnswerType.POSITION
        assert q.position == pytest.approx((1.0 + (q.time_ns - START) / 1e9, 3.0, 0.0))
    assert {'first', 'last'} <= {q.question.split()[3] for q in when}
    for q in when:
        assert q.answer_type is AnswerType.TIME
        stamps = [i['stamp_ns'] for i in truth['images'] if q.target in i['visible']]
        assert q.time_ns == (stamps[-1] if ' last ' in q.question else stamps[0])


def test_yes_no_has_both_answers(truth, many):
    questions = _of(generate_questions(truth, seed=0, per_category=4), Category.YES_NO)
    assert sorted(q.yes for q in questions) == [False, False, True, True]
    present = {(lm['color'], lm['category']) for lm in truth['landmarks']}
    for q in _of(many, Category.YES_NO):
        if q.yes:
            assert q.target is None or q.target != 'obj-7'
            continue
        colour, category = q.question.removesuffix('?').split()[-2:]
        assert (colour, category) not in present
        assert category in {'barrel', 'cone', 'box'}  # the uncoloured medkit is never asked
    asked = ' '.join(q.question for q in _of(many, Category.YES_NO))
    assert 'yellow cone' not in asked  # exists, though never seen
    assert 'orange cone' not in asked  # the traffic cone


def test_image_questions_come_with_a_new_viewpoint(truth, many):
    image = _of(many, Category.IMAGE)
    assert image
    jobs = dict(render_jobs(many, truth))
    assert set(jobs) == {q.id for q in image}
    for q in image:
        assert q.image == f'images/{q.id}.png'
        x, y, yaw = jobs[q.id]
        tx, ty = q.position[:2]
        nearest = 2.5 if _landmark(truth, q.target)['kind'] == 'sign' else 1.5
        assert nearest - 1e-9 <= math.dist((x, y), (tx, ty)) <= 3.0 + 1e-9
        assert math.cos(yaw - math.atan2(ty - y, tx - x)) == pytest.approx(1.0)
        assert min(math.dist((x, y), p[:2]) for p in q.observed_from) >= 1.0
        room = ROOMS.index(_landmark(truth, q.target)['room'])
        assert 8 * room < x < 8 * room + 8 and 0 < y < 6


def test_sparse_world_yields_fewer_questions():
    truth = _truth()
    truth['landmarks'] = [lm for lm in truth['landmarks'] if lm['id'] in ('sign-0', 'sign-1')]
    del truth['trajectory']
    questions = generate_questions(truth, per_category=3)
    counts = {c: len(_of(questions, c)) for c in Category}
    assert counts[Category.LOCAL] == counts[Category.ROUTE] == 0  # nothing repeats
    assert counts[Category.BASIC] == counts[Category.IMAGE] == 2
    assert counts[Category.TEMPORAL] == 2  # no trajectory: only "when did I see"
    assert counts[Category.YES_NO] == 2  # no coloured class to ask a "no" about
    assert generate_questions({}).questions == []


def test_image_viewpoint_avoids_every_pose_the_target_was_seen_from(truth, many):
    """Cameras placed at the first choices push the viewpoints elsewhere, still 1 m clear."""
    first = render_jobs(many, truth)
    targets = {q.id: q.target for q in many.questions}
    crowded = dict(truth, images=list(truth['images']))
    for qid, (x, y, yaw) in first:
        crowded['images'].append(
            {'stamp_ns': START, 'x': x, 'y': y, 'z': 0.5, 'yaw': yaw, 'visible': [targets[qid]]}
        )
    second = dict(render_jobs(many, crowded))
    assert set(second) == {qid for qid, _ in first}
    for qid, (x, y, _) in first:
        assert math.dist((x, y), second[qid][:2]) >= 1.0


# Digests of the question sets generated before spoken questions existed (seed: digest),
# local questions aside: those now ask for every instance by its neighbour and its room.
OLD_CATEGORY_DIGESTS = {
    0: '8751158cf11bf46a46dface9afca1e36dc54565f8becda3d8af4b68037412b4d',
    1: '2baab22b7f7d83c6e46bb460905b128ba525b02b5e8111a3099b2c63d45fc042',
}


@pytest.mark.parametrize('seed', sorted(OLD_CATEGORY_DIGESTS))
def test_a_new_category_leaves_old_seeds_questions_as_they_were(truth, seed):
    questions = generate_questions(truth, seed=seed, per_category=6)
    old = [
        q.model_dump(mode='json', exclude={'now_ns'})
        for q in questions.questions
        if q.category not in (Category.SPOKEN, Category.LOCAL)
    ]
    digest = hashlib.sha256(json.dumps(old, sort_keys=True).encode()).hexdigest()
    assert digest == OLD_CATEGORY_DIGESTS[seed]


def test_spoken_questions_are_answered_from_the_trajectory(truth, many):
    spoken = _of(many, Category.SPOKEN)
    start = truth['images'][0]['stamp_ns']
    end = truth['end_ns']
    after = [q for q in spoken if ' after I started' in q.question or ' into the run' in q.question]
    ago = [q for q in spoken if q.question.endswith(' ago?')]
    rooms = [q for q in spoken if q.question.startswith('When did I')]
    assert after and ago and rooms and len(after) + len(ago) + len(rooms) == len(spoken)
    assert all(q.now_ns == end for q in spoken)
    for q in after + ago:
        words = re.sub(
            r'^Where was I (.+?) (?:after I started|into the run|ago)\?$', r'\1', q.question
        )
        seconds = duration_s(words)
        assert seconds is not None, q.question
        offset = round(seconds * 10**9)
        expected = start + offset if q in after else end - offset
        assert q.time_ns == expected and start <= expected <= end
        assert q.answer_type is AnswerType.POSITION
        assert q.position == pytest.approx((1.0 + (q.time_ns - START) / 1e9, 3.0, 0.0))
    # The walk is 1 m/s along x from x=1: a room [8j, 8j+8) is entered and left once.
    assert {q.question.split()[3] for q in rooms} == {'first', 'last'}
    for q in rooms:
        room = q.question.split(' the ')[-1].removesuffix('?')
        j = ROOMS.index(room)
        inside = [s['stamp_ns'] for s in truth['trajectory'] if 8 * j <= s['x'] < 8 * j + 8]
        assert q.answer_type is AnswerType.TIME
        assert q.time_ns == (inside[-1] if ' last ' in q.question else inside[0])
    assert 'store' not in ' '.join(q.question for q in rooms)  # never entered


def test_spoken_times_in_questions_read_back_as_asked(truth, many):
    for q in _of(many, Category.SPOKEN):
        if q.answer_type is AnswerType.POSITION:
            moment = resolve_text(
                q.question.removeprefix('Where was I ')[:-1],
                q.now_ns,
                truth['images'][0]['stamp_ns'],
            )
            assert moment is not None and moment.start_ns == q.time_ns
