# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Questions with exact answers, generated from the ground truth written next to a bag.

Only what the robot actually saw is asked about (an unseen target cannot be answered
from memory), and every question is checked to have a single right answer: a repeated
class is asked about only through a nearby unique landmark or a route that saw exactly
one of its instances. Each category draws from its own seeded stream, so a world that
cannot support one category leaves the others unchanged; it just yields fewer questions.

Usage: python -m waymark questions GROUND_TRUTH_JSON|BAG OUT.json [--seed 0]
"""

from __future__ import annotations

import bisect
import itertools
import json
import math
import random
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from waymark.cli import ArgumentParser, UsageError, check_positive, fail
from waymark.evaluation.questions import (
    AnswerType,
    Category,
    Question,
    QuestionSet,
    save_questions,
)
from waymark.sim.bag import GROUND_TRUTH_FILE

MAX_OBSERVED_FROM = 50
EPISODE_GAP_NS = 3_000_000_000  # sightings further apart than this are separate visits
LOCAL_MAX_DISTANCE = 6.0  # a reference landmark further away does not describe the target
LOCAL_MARGIN = 1.0  # other instances must be at least this much further from the reference
NEXT_TO_DISTANCE = 2.5  # 'next to' below this distance, 'near' above
VIEW_DISTANCES = (1.5, 2.0, 2.5, 3.0)  # image-query viewpoints, metres from the target
# A sign hangs above the camera: nearer than this its top leaves a 90-degree 4:3 frame.
SIGN_VIEW_DISTANCES = (2.5, 3.0)
VIEW_MAX_OFF_AXIS = math.radians(50)  # from the side the robot saw the target from
VIEW_OFF_AXIS = math.radians(30)  # preferred: oblique enough to differ, square enough to read
VIEW_MIN_SEPARATION = 1.0  # metres from every pose the target was seen from
VIEW_WALL_MARGIN = 0.4  # metres inside the target's room polygon
# Spoken durations asked about, in seconds, with how a question says them.
SPOKEN_DURATIONS = (
    (10, 'ten seconds'),
    (15, 'fifteen seconds'),
    (20, 'twenty seconds'),
    (30, 'thirty seconds'),
    (45, 'forty-five seconds'),
    (60, 'a minute'),
    (90, 'a minute and a half'),
    (120, 'a couple of minutes'),
    (150, 'two and a half minutes'),
    (180, 'three minutes'),
    (240, 'four minutes'),
    (300, 'five minutes'),
    (600, 'ten minutes'),
)
COLORS = ('red', 'orange', 'yellow', 'green', 'blue', 'purple', 'white', 'black', 'brown', 'grey')

Pose2 = tuple[float, float, float]


@dataclass(frozen=True)
class _Landmark:
    id: str
    kind: str
    label: str
    key: str  # the label as questions write it; equal keys are instances of one class
    category: str
    color: str | None
    room: str | None
    position: tuple[float, float, float]
    stamps: tuple[int, ...]  # image stamps that saw it, ascending
    seen_from: tuple[Pose2, ...]  # camera (x, y, yaw) of those images

    @property
    def ref(self) -> str:
        """How a question names it."""
        return f'the {self.key} sign' if self.kind == 'sign' else f'the {self.key}'

    @property
    def where(self) -> str:
        """'Where is the red barrel', 'Where are the grey keys'."""
        return 'Where are' if self.kind != 'sign' and _plural(self.key) else 'Where is'


@dataclass(frozen=True)
class _Anchor:
    """A route end point: a uniquely labelled landmark or a room, with its visits."""

    ref: str
    visits: tuple[tuple[int, int], ...]  # (start_ns, end_ns), ascending


class TruthIndex:
    """The ground truth indexed for the question builders."""

    def __init__(self, truth: dict) -> None:
        images = sorted(truth.get('images') or [], key=lambda i: i['stamp_ns'])
        seen: dict[str, list[dict]] = {}
        for image in images:
            for landmark_id in image.get('visible') or []:
                seen.setdefault(landmark_id, []).append(image)
        self.landmarks = [
            _Landmark(
                id=str(lm['id']),
                kind=str(lm.get('kind', 'object')),
                label=str(lm['label']),
                key=str(lm['label']).strip().lower(),
                category=str(lm.get('category') or lm['label']),
                color=lm.get('color'),
                room=lm.get('room'),
                position=tuple(float(v) for v in lm['position']),
                stamps=tuple(int(i['stamp_ns']) for i in seen.get(lm['id'], [])),
                seen_from=tuple(
                    (float(i['x']), float(i['y']), float(i['yaw'])) for i in seen.get(lm['id'], [])
                ),
            )
            for lm in sorted(truth.get('landmarks') or [], key=lambda lm: str(lm['id']))
        ]
        self.by_id = {lm.id: lm for lm in self.landmarks}
        self.instances: dict[str, list[_Landmark]] = {}  # every landmark of each label
        for lm in self.landmarks:
            self.instances.setdefault(lm.key, []).append(lm)
        self.seen = [lm for lm in self.landmarks if lm.stamps]
        self.unique_seen = [lm for lm in self.seen if len(self.instances[lm.key]) == 1]
        trajectory = sorted(truth.get('trajectory') or [], key=lambda s: s['stamp_ns'])
        self.traj_t = np.array([int(s['stamp_ns']) for s in trajectory], dtype=np.int64)
        self.traj_xy = np.array([(s['x'], s['y']) for s in trajectory], dtype=float).reshape(-1, 2)
        self.rooms = {str(r['name']): r['polygon'] for r in truth.get('rooms') or []}
        # The session's start and end as the robot's memory knows them: its first picture,
        # and the end of the tour (when the questions are asked).
        self.start_ns = int(images[0]['stamp_ns']) if images else None
        end = truth.get('end_ns', int(self.traj_t[-1]) if len(self.traj_t) else None)
        self.end_ns = None if end is None else int(end)

    def anchors(self) -> list[_Anchor]:
        found = [_Anchor(lm.ref, _episodes(lm.stamps)) for lm in self.unique_seen]
        for name, polygon in sorted(self.rooms.items()):
            inside = self.traj_t[_inside(self.traj_xy, polygon)]
            if len(inside):
                visits = _episodes([int(t) for t in inside])
                found.append(_Anchor(f'the {_room_name(name)}', visits))
        return found

    def pose_at(self, stamp_ns: int) -> tuple[float, float]:
        t = (self.traj_t - self.traj_t[0]).astype(float)
        at = float(stamp_ns - self.traj_t[0])
        x, y = (float(np.interp(at, t, self.traj_xy[:, i])) for i in range(2))
        return x, y


def generate_questions(ground_truth: dict, seed: int = 0, per_category: int = 5) -> QuestionSet:
    """Up to `per_category` questions of each category; fewer where the world cannot support it."""
    world = TruthIndex(ground_truth)
    builders: dict[Category, Callable[[TruthIndex, random.Random, int], list[dict]]] = {
        Category.BASIC: _basic,
        Category.LOCAL: _local,
        Category.ROUTE: _route,
        Category.TEMPORAL: _temporal,
        Category.YES_NO: _yes_no,
        Category.IMAGE: _image,
        Category.SPOKEN: _spoken,
    }
    questions = []
    for category, build in builders.items():
        rng = random.Random(f'{seed}:{category.value}')
        for n, fields in enumerate(build(world, rng, per_category)):
            qid = f'{category.value}-{n}'
            if category is Category.IMAGE:
                fields['image'] = f'images/{qid}.png'
            questions.append(Question(id=qid, category=category, **fields))
    return QuestionSet(world=ground_truth.get('world_name'), questions=questions)


def render_jobs(question_set: QuestionSet, ground_truth: dict) -> list[tuple[str, Pose2]]:
    """Camera (x, y, yaw) from which to render each image question's photo."""
    world = TruthIndex(ground_truth)
    jobs = []
    for q in question_set.questions:
        if q.category is Category.IMAGE and q.target in world.by_id:
            view = viewpoint_near(world, world.by_id[q.target])
            if view is not None:
                jobs.append((q.id, view))
    return jobs


# --- builders: each returns Question fields, at most n of them -------------------------


def _basic(world: TruthIndex, rng: random.Random, n: int) -> list[dict]:
    out = []
    for lm in _pick(rng, world.unique_seen, n):
        if lm.kind == 'sign':
            text = rng.choice(
                [
                    f'Where is the {lm.key}?',
                    f'Where did I see {lm.ref}?',
                    f'Take me to the {lm.key}.',
                ]
            )
        else:
            text = rng.choice([f'Where did I see {lm.ref}?', f'{lm.where} {lm.ref}?'])
        out.append(_at(lm, text))
    return out


def _local(world: TruthIndex, rng: random.Random, n: int) -> list[dict]:
    """A repeated class named by its nearest unique landmark, and by its room if alone
    there; every instance is asked about once before any is asked about twice."""
    candidates = []
    for lm in world.seen:
        if len(world.instances[lm.key]) < 2:
            continue
        others = [o for o in world.instances[lm.key] if o.id != lm.id]
        for described in (by_neighbour(world, lm, others), by_room(world, lm, others)):
            if described:
                candidates.append((lm, described))
    out = []
    for lm, (relation, ref) in _pick(rng, candidates, n, key=lambda c: c[0].id):
        text = rng.choice(
            [
                f'{lm.where} {lm.ref} {relation} {ref}?',
                f'Where did I see {lm.ref} {relation} {ref}?',
            ]
        )
        out.append(_at(lm, text))
    return out


def by_neighbour(world: TruthIndex, lm: _Landmark, others: list[_Landmark]) -> tuple | None:
    near = sorted(
        (_dist(lm.position, a.position), a.id, a) for a in world.unique_seen if a.room == lm.room
    )
    for distance, _, anchor in near:
        if distance > LOCAL_MAX_DISTANCE:
            break
        rival = min((_dist(o.position, anchor.position) for o in others), default=math.inf)
        if rival >= distance + LOCAL_MARGIN:
            return ('next to' if distance <= NEXT_TO_DISTANCE else 'near', anchor.ref)
    return None


def by_room(world: TruthIndex, lm: _Landmark, others: list[_Landmark]) -> tuple | None:
    """'in the pharmacy room' when the room's one seen sign says PHARMACY (what memory
    can find), else the room's own name."""
    if lm.room is None or any(o.room == lm.room for o in others):
        return None
    signs = [a for a in world.unique_seen if a.kind == 'sign' and a.room == lm.room]
    if len(signs) == 1:
        return ('in', f'the {signs[0].key} room')
    return ('in', f'the {_room_name(lm.room)}')


def _route(world: TruthIndex, rng: random.Random, n: int) -> list[dict]:
    """'Z on the way from X to Y', Z of a repeated class, X and Y unique (never a Z)."""
    anchors = world.anchors()
    repeated = [lm for lm in world.seen if len(world.instances[lm.key]) >= 2]
    candidates = []
    for start in anchors:
        for end in anchors:
            if start.ref == end.ref:
                continue
            trips = _trips(start.visits, end.visits)
            if not trips:
                continue
            candidates += [
                (z, start, end) for z in repeated if _only_instance_on_trips(world, z, trips)
            ]
    out = []
    for z, start, end in _pick(rng, candidates, n, key=lambda c: c[0].id):
        text = rng.choice(
            [
                f'{z.where} {z.ref} on the way from {start.ref} to {end.ref}?',
                f'Where did I see {z.ref} between {start.ref} and {end.ref}?',
            ]
        )
        out.append(_at(z, text))
    return out


def _trips(starts: Sequence[tuple[int, int]], ends: Sequence[tuple[int, int]]) -> list:
    """(leave X, reach Y, start of X visit, end of Y visit): each X visit directly followed by Y."""
    events = sorted([(s, e, 0) for s, e in starts] + [(s, e, 1) for s, e in ends])
    return [
        (a[1], b[0], a[0], b[1])
        for a, b in itertools.pairwise(events)
        if a[2] == 0 and b[2] == 1 and a[1] < b[0]
    ]


def _only_instance_on_trips(world: TruthIndex, z: _Landmark, trips: list) -> bool:
    """Z is seen after leaving X and before reaching Y on some trip, no other instance is seen on
    any trip (not even while X or Y are in view), and another instance was seen elsewhere."""
    others = [o for o in world.instances[z.key] if o.stamps and o.id != z.id]
    if not others:
        return False
    on_trip = any(_seen_within(z.stamps, leave + 1, reach - 1) for leave, reach, _, _ in trips)
    rival = any(_seen_within(o.stamps, first, last) for o in others for _, _, first, last in trips)
    return on_trip and not rival


def _temporal(world: TruthIndex, rng: random.Random, n: int) -> list[dict]:
    """Alternately 'where was I at <clock>' and 'when did I first/last see <landmark>'."""
    where = _where_was_i(world, rng, (n + 1) // 2)
    when = _when_did_i_see(world, rng, n - len(where))
    return where + when


def _where_was_i(world: TruthIndex, rng: random.Random, n: int) -> list[dict]:
    if len(world.traj_t) < 2:
        return []
    first_s = -(-int(world.traj_t[0]) // 10**9)
    last_s = int(world.traj_t[-1]) // 10**9
    span = range(first_s, last_s + 1)
    seconds = sorted(rng.sample(span, min(n, len(span))))
    out = []
    for s in seconds:
        stamp = s * 10**9
        x, y = world.pose_at(stamp)
        clock = _clock(stamp)
        text = rng.choice([f'Where was I at {clock}?', f'Where was I at {clock} UTC?'])
        out.append(
            {
                'question': text,
                'answer_type': AnswerType.POSITION,
                'position': (round(x, 6), round(y, 6), 0.0),
                'time_ns': stamp,
            }
        )
    return out


def _when_did_i_see(world: TruthIndex, rng: random.Random, n: int) -> list[dict]:
    out = []
    for lm in _pick(rng, world.unique_seen, n):
        last = rng.random() < 0.5
        text = f'When did I {"last" if last else "first"} see {lm.ref}?'
        out.append(
            _at(lm, text)
            | {'answer_type': AnswerType.TIME, 'time_ns': lm.stamps[-1 if last else 0]}
        )
    return out


def _spoken(world: TruthIndex, rng: random.Random, n: int) -> list[dict]:
    """Times as people say them, asked at the end of the tour: 'Where was I a minute and a
    half after I started?', 'Where was I five minutes ago?', and 'When did I last pass the
    kitchen?' (the first or last moment the robot was in that room)."""
    candidates: list[tuple[str, dict]] = []
    start, end = world.start_ns, world.end_ns
    if len(world.traj_t) >= 2 and start is not None and end is not None:
        first, last = max(start, int(world.traj_t[0])), int(world.traj_t[-1])
        for seconds, words in SPOKEN_DURATIONS:
            after, ago = start + seconds * 10**9, end - seconds * 10**9
            if first <= after <= last:
                text = rng.choice([f'{words} after I started', f'{words} into the run'])
                candidates.append(('after', _where_at(world, f'Where was I {text}?', after, end)))
            if first <= ago <= last:
                candidates.append(('ago', _where_at(world, f'Where was I {words} ago?', ago, end)))
    for name, polygon in sorted(world.rooms.items()):
        inside = world.traj_t[_inside(world.traj_xy, polygon)]
        if not len(inside) or end is None:
            continue
        last = rng.random() < 0.5
        verb = rng.choice(['pass', 'visit', 'go through'])
        text = f'When did I {"last" if last else "first"} {verb} the {_room_name(name)}?'
        stamp = int(inside[-1] if last else inside[0])
        fields = {'question': text, 'answer_type': AnswerType.TIME, 'time_ns': stamp}
        candidates.append(('room', fields | {'now_ns': end}))
    return [fields for _, fields in _pick(rng, candidates, n, key=lambda c: c[0])]


def _where_at(world: TruthIndex, text: str, stamp: int, now_ns: int) -> dict:
    x, y = world.pose_at(stamp)
    return {
        'question': text,
        'answer_type': AnswerType.POSITION,
        'position': (round(x, 6), round(y, 6), 0.0),
        'time_ns': stamp,
        'now_ns': now_ns,
    }


def _yes_no(world: TruthIndex, rng: random.Random, n: int) -> list[dict]:
    """Half seen classes (yes), half color/class pairs absent from the whole world (no).

    Only classes that come in colors get a 'no' pair: a medkit of no stated color may be red.
    """
    seen = {lm.key: lm for lm in world.seen}
    colored = {lm.category for lm in world.landmarks if lm.kind != 'sign' and lm.color}
    colors = set(COLORS) | {lm.color for lm in world.landmarks if lm.color}
    absent = sorted(
        {(c, k) for k in colored for c in colors}
        - {(lm.color, lm.category) for lm in world.landmarks}
    )
    absent = [(c, k) for c, k in absent if f'{c} {k}'.lower() not in world.instances]
    n_yes = min(len(seen), max((n + 1) // 2, n - len(absent)))
    yes = _pick(rng, sorted(seen), n_yes)
    no = _pick(rng, absent, n - n_yes)
    out = []
    for key in yes:
        lm = seen[key]
        subject = f'a sign saying {lm.label}' if lm.kind == 'sign' else _article(lm.key)
        target = lm.id if len(world.instances[key]) == 1 else None
        out.append(_yes_no_fields(f'Did I see {subject}?', True, target))
    for color, category in no:
        out.append(_yes_no_fields(f'Did I see {_article(f"{color} {category}")}?', False, None))
    return out


def _image(world: TruthIndex, rng: random.Random, n: int) -> list[dict]:
    """A photo of a uniquely labelled landmark from a pose the robot never took."""
    viewable = [lm for lm in world.unique_seen if viewpoint_near(world, lm) is not None]
    text = ('Where did I see this?', 'Where is the thing in this photo?')
    return [_at(lm, rng.choice(text)) for lm in _pick(rng, viewable, n)]


def viewpoint_near(world: TruthIndex, lm: _Landmark) -> Pose2 | None:
    """1.5-3 m from the target (2.5-3 m from a sign), facing it, on the side it was seen
    from, off the poses it was seen from."""
    tx, ty = lm.position[:2]
    seen = np.array([p[:2] for p in lm.seen_from], dtype=float).reshape(-1, 2)
    if not len(seen):
        return None
    toward = seen - (tx, ty)
    mean = (toward / np.maximum(np.linalg.norm(toward, axis=1, keepdims=True), 1e-9)).mean(axis=0)
    side = math.atan2(mean[1], mean[0]) if np.linalg.norm(mean) > 0.3 else None
    polygon = world.rooms.get(lm.room) if lm.room else None
    scored = []
    for distance in SIGN_VIEW_DISTANCES if lm.kind == 'sign' else VIEW_DISTANCES:
        for step in range(36):
            bearing = math.radians(10 * step)
            off_axis = abs(_wrap(bearing - side)) if side is not None else VIEW_OFF_AXIS
            if off_axis > VIEW_MAX_OFF_AXIS:
                continue
            x, y = tx + distance * math.cos(bearing), ty + distance * math.sin(bearing)
            if polygon is not None and not _inside_clear(x, y, polygon, VIEW_WALL_MARGIN):
                continue
            gap = float(np.min(np.hypot(seen[:, 0] - x, seen[:, 1] - y)))
            if gap >= VIEW_MIN_SEPARATION:
                score = (round(abs(off_axis - VIEW_OFF_AXIS), 6), -round(gap, 6), distance, step)
                scored.append((score, (x, y, math.atan2(ty - y, tx - x))))
    return min(scored)[1] if scored else None


# --- helpers ----------------------------------------------------------------------------


def _at(lm: _Landmark, text: str) -> dict:
    """Fields of a question whose answer is where the landmark is."""
    return {
        'question': text,
        'answer_type': AnswerType.POSITION,
        'target': lm.id,
        'position': lm.position,
        'observed_from': _subsample(lm.seen_from, MAX_OBSERVED_FROM),
    }


def _yes_no_fields(text: str, yes: bool, target: str | None) -> dict:
    return {'question': text, 'answer_type': AnswerType.YES_NO, 'yes': yes, 'target': target}


def _pick(rng: random.Random, items: Sequence, n: int, key: Callable | None = None) -> list:
    """n items in random order; with `key`, distinct keys come before any repeat."""
    order = rng.sample(list(items), len(items))
    if key is not None:
        firsts: dict = {}
        for item in order:
            firsts.setdefault(key(item), item)
        rest = [item for item in order if firsts[key(item)] is not item]
        order = list(firsts.values()) + rest
    return order[: max(n, 0)]


def _subsample(items: Sequence, limit: int) -> list:
    if len(items) <= limit:
        return list(items)
    return [items[round(i * (len(items) - 1) / (limit - 1))] for i in range(limit)]


def _episodes(stamps: Sequence[int]) -> tuple[tuple[int, int], ...]:
    """Group ascending stamps into visits split at gaps over EPISODE_GAP_NS."""
    visits: list[list[int]] = []
    for t in stamps:
        if visits and t - visits[-1][1] <= EPISODE_GAP_NS:
            visits[-1][1] = t
        else:
            visits.append([t, t])
    return tuple((a, b) for a, b in visits)


def _seen_within(stamps: Sequence[int], start: int, end: int) -> bool:
    i = bisect.bisect_left(stamps, start)
    return i < len(stamps) and stamps[i] <= end


def _inside(points: np.ndarray, polygon: Sequence[Sequence[float]]) -> np.ndarray:
    """(N,) whether each of the (N, 2) points is inside the polygon (even-odd rule)."""
    a = np.asarray(polygon, dtype=float)
    b = np.roll(a, -1, axis=0)
    x, y = points[:, :1], points[:, 1:2]
    straddles = (a[:, 1] > y) != (b[:, 1] > y)
    with np.errstate(divide='ignore', invalid='ignore'):
        crossing_x = a[:, 0] + (y - a[:, 1]) * (b[:, 0] - a[:, 0]) / (b[:, 1] - a[:, 1])
    return (straddles & (x < crossing_x)).sum(axis=1) % 2 == 1


def _inside_clear(x: float, y: float, polygon: Sequence[Sequence[float]], margin: float) -> bool:
    """Inside the polygon and at least `margin` from each of its edges."""
    edges = zip(polygon, [*polygon[1:], polygon[0]], strict=True)
    return bool(_inside(np.array([[x, y]]), polygon)[0]) and all(
        _segment_distance(x, y, *a, *b) >= margin for a, b in edges
    )


def _segment_distance(x: float, y: float, ax: float, ay: float, bx: float, by: float) -> float:
    dx, dy = bx - ax, by - ay
    length2 = dx * dx + dy * dy
    u = 0.0 if length2 == 0 else min(1.0, max(0.0, ((x - ax) * dx + (y - ay) * dy) / length2))
    return math.hypot(x - ax - u * dx, y - ay - u * dy)


def _dist(a: Sequence[float], b: Sequence[float]) -> float:
    return math.hypot(a[0] - b[0], a[1] - b[1])


def _wrap(angle: float) -> float:
    return math.atan2(math.sin(angle), math.cos(angle))


def _clock(stamp_ns: int) -> str:
    return datetime.fromtimestamp(stamp_ns // 10**9, tz=timezone.utc).strftime('%H:%M:%S')


def _room_name(name: str) -> str:
    return name.replace('_', ' ')


def _plural(phrase: str) -> bool:
    """Class names are singular nouns except a few like 'keys'."""
    return phrase.endswith('s') and not phrase.endswith('ss')


def _article(phrase: str) -> str:
    """'a red barrel', 'an orange cone', 'some grey keys'."""
    if _plural(phrase):
        return f'some {phrase}'
    return f'{"an" if phrase[:1] in "aeiou" else "a"} {phrase}'


def main(argv: Sequence[str] | None = None) -> int:
    parser = ArgumentParser(prog='waymark questions', description=__doc__.splitlines()[0])
    parser.add_argument(
        'ground_truth', type=Path, help='ground_truth.json written next to a bag, or the bag'
    )
    parser.add_argument('out', type=Path, help='question file to write (.json)')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--per-category', type=int, default=5)
    parser.add_argument('--bag', help='bag path to record in the question file')
    parser.add_argument('--overwrite', action='store_true', help='replace an existing OUT')
    args = parser.parse_args(argv)
    try:
        truth = read_ground_truth(args.ground_truth)
        check_positive('--per-category', args.per_category)
        check_question_file(args.out, args.overwrite)
    except UsageError as error:
        return fail(parser.prog, error)
    questions = generate_questions(truth, seed=args.seed, per_category=args.per_category)
    if args.bag:
        questions = questions.model_copy(update={'bag': args.bag})
    save_questions(questions, args.out)
    counts = Counter(q.category.value for q in questions.questions)
    summary = ', '.join(f'{c.value} {counts[c.value]}' for c in Category)
    print(f'{args.out}: {len(questions.questions)} questions ({summary})', file=sys.stderr)
    return 0


def read_ground_truth(path: Path) -> dict:
    """The ground truth at `path` (the file, or the bag folder holding it); UsageError
    when it is missing or not one."""
    if path.is_dir():
        path = path / GROUND_TRUTH_FILE
    if not path.is_file():
        raise UsageError(f'no ground truth at {path}')
    try:
        truth = json.loads(path.read_text(encoding='utf-8'))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UsageError(f'{path}: not a JSON ground truth: {error}') from error
    if not isinstance(truth, dict) or not {'images', 'landmarks'} <= truth.keys():
        raise UsageError(f'{path}: not a ground truth (no images and landmarks in it)')
    return truth


def check_question_file(path: Path, overwrite: bool) -> None:
    """UsageError unless a question file can be written at `path`."""
    if path.suffix.lower() != '.json':
        raise UsageError(f'{path}: the question file must end in .json')
    if path.is_dir() or (path.exists() and not overwrite):
        raise UsageError(f'{path} already exists: --overwrite to replace it')
    if not path.parent.is_dir():
        raise UsageError(f'no folder {path.parent} to write {path.name} in')


if __name__ == '__main__':
    sys.exit(main())
