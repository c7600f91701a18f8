# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Instances named by their neighbours: "the blue cone next to the stairs sign".

A repeated class cannot be told apart by its own description: every blue cone embeds
alike, so a plain similarity search returns whichever instance happens to score highest.
The phrase names an anchor that is unique (a sign, a room) and a relation to it, so we
find the anchor first, then search the neighbourhood of each of its best sightings for
the instance, and rank what matches the instance by its distance to the anchor.

Only phrases are parsed here (the user's question, or the search phrase a tool call
gives), never text read from the world. A route phrase ("between X and Y", "on the way
from X to Y") is Binary Tracking's and gets no relation.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from waymark.memory.entries import Hit
from waymark.memory.search_query import Mode, SearchQuery

# position_of(hit, query): where the thing a hit for `query` shows is, in the map frame.
# The default is where the camera stood; target localisation gives a better one.
PositionOf = Callable[[Hit, str], tuple[float, float]]

NEAR = 'near'
OPPOSITE = 'opposite'
NEAREST = 'nearest'
IN = 'in'
AT = 'at'
RELATIONS = (NEAR, OPPOSITE, NEAREST, IN, AT)


@dataclass(frozen=True)
class Relation:
    """A target phrase split into the instance `target`, its `relation` and its `anchor`."""

    target: str
    relation: str
    anchor: str

    @property
    def room(self) -> bool:
        """Whether the anchor is a room: its neighbourhood is wider."""
        return self.relation == IN


# -- parsing -----------------------------------------------------------------------------

_LEAD = re.compile(
    r'^(?:(?:where|what)\s+(?:is|are|was|were)|where\s+did\s+i\s+(?:see|leave|pass|put)|'
    r'take\s+me\s+to|go\s+to|bring\s+me\s+to|find|show\s+me|did\s+i\s+(?:see|pass)|'
    r'have\s+i\s+(?:seen|passed))\s+',
    re.I,
)
_ARTICLE = re.compile(r'^(?:the|a|an|some|this|that)\s+', re.I)
_TRAILING = re.compile(r'[\s?.!,;:]+$')
_ROUTE = re.compile(
    r'\bbetween\b.+\band\b|\bon\s+the\s+way\b|\balong\s+the\s+(?:way|route)\b|\bfrom\b.+\bto\b',
    re.I,
)
_THAT_IS = r'(?:\s+(?:that|which)\s+(?:is|was|are|were|stands?|stood|sits?|sat))?'
_NEAR_WORDS = {
    'next to': NEAR,
    'near to': NEAR,
    'near': NEAR,
    'beside': NEAR,
    'by': NEAR,
    'close to': NEAR,
    'opposite to': OPPOSITE,
    'opposite': OPPOSITE,
    'across from': OPPOSITE,
    'nearest to': NEAREST,
    'closest to': NEAREST,
    'nearest': NEAREST,
    'closest': NEAREST,
}
_NEAR_ALTERNATION = '|'.join(
    re.escape(w).replace(r'\ ', r'\s+') for w in sorted(_NEAR_WORDS, key=len, reverse=True)
)
_FORMS = (
    # "the nearest Z to Y", "the closest Z to Y"
    (re.compile(r'^(?:nearest|closest)\s+(?P<z>.+?)\s+to\s+(?P<y>.+)$', re.I), NEAREST),
    # "Z next to / near / beside / by / close to / opposite / across from / nearest (to) Y"
    (re.compile(rf'^(?P<z>.+?){_THAT_IS}\s+(?P<w>{_NEAR_ALTERNATION})\s+(?P<y>.+)$', re.I), None),
    # "Z in the Y (room)": rooms are named by their sign or their name
    (re.compile(rf'^(?P<z>.+?){_THAT_IS}\s+in(?:side)?\s+(?P<y>.+)$', re.I), IN),
    # "Z at the Y"
    (re.compile(rf'^(?P<z>.+?){_THAT_IS}\s+at\s+(?P<y>.+)$', re.I), AT),
)
# Anchors memory cannot retrieve as a place: the speaker's own, a time, a photo.
_DEICTIC = frozenset(
    {'me', 'us', 'you', 'here', 'there', 'it', 'them', 'him', 'her', 'myself', 'home'}
)
_NOT_A_PLACE = re.compile(
    r'^(?:\d|(?:the\s+)?(?:morning|afternoon|evening|night|noon|midnight|end|start|beginning|'
    r'first|last|same|moment|time|photo|picture|image|memory|memories|recording|session)\b|'
    r'(?:this|that|the)\s+(?:photo|picture|image)\b|(?:once|all|least|most|about|around)\b)',
    re.I,
)
_TIME_WORDS = re.compile(r'\b\d{1,2}:\d{2}\b|\b(?:a\.?m|p\.?m|o\'?clock|ago|utc)\b', re.I)
# Pronouns and question words that cannot be the instance.
_NOT_A_TARGET = frozenset({'i', 'we', 'you', 'it', 'he', 'she', 'they', 'this', 'that', 'what'})
_ROOM_SUFFIX = re.compile(r'\s+room$', re.I)
MAX_PHRASE_CHARS = 300


def parse_relation(phrase: str) -> Relation | None:
    """The (instance, relation, anchor) a phrase names, or None when it names no anchor.

    `phrase` is a question ("Where is the blue cone next to the stairs sign?") or a
    search phrase ("blue cone next to the stairs sign"). Articles are dropped from both
    parts; "Z in the PANTRY room" has the anchor "PANTRY".
    """
    text = ' '.join(phrase.split())[:MAX_PHRASE_CHARS]
    text = _ARTICLE.sub('', _TRAILING.sub('', _LEAD.sub('', text)))
    if not text or _ROUTE.search(text):
        return None
    for pattern, fixed in _FORMS:
        match = pattern.match(text)
        if match is None:
            continue
        target = _noun(match['z'])
        anchor = _noun(match['y'])
        relation = fixed or _NEAR_WORDS[' '.join(match['w'].lower().split())]
        if relation == IN:
            anchor = _ROOM_SUFFIX.sub('', anchor) or anchor
        if _usable(target, anchor):
            return Relation(target, relation, anchor)
        return None
    return None


def _noun(text: str) -> str:
    return _ARTICLE.sub('', _TRAILING.sub('', text.strip())).strip()


def _usable(target: str, anchor: str) -> bool:
    if not target or not anchor or target.lower() in _NOT_A_TARGET:
        return False
    if anchor.lower() in _DEICTIC or _NOT_A_PLACE.match(anchor) or _TIME_WORDS.search(anchor):
        return False
    return not _TIME_WORDS.search(target)


# -- retrieval ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RelationParams:
    """Bounds of an anchor-then-instance search."""

    enabled: bool = True
    # Distinct anchor sightings searched around, best first.
    max_anchors: int = 3
    # Hits asked for the anchor; the distinct sightings are taken from these.
    anchor_k: int = 10
    # Two anchor sightings closer than this are one place.
    anchor_separation_m: float = 2.0
    # Neighbourhood of an anchor: objects and signs, and rooms (wider).
    radius_m: float = 6.0
    room_radius_m: float = 10.0
    # Cameras stand up to about this far from what they see: the range search reaches this
    # much further, and each entry then counts by where its thing is (position_of).
    sight_margin_m: float = 4.0
    # Entries taken from one neighbourhood, and passes through it (runs of consecutive
    # entries) ranked for the instance.
    range_k: int = 200
    max_visits: int = 3
    # Hits asked for the instance, over memory and per pass.
    target_k: int = 20
    # An entry matches the instance (a sighting, the anchor) when its similarity is
    # within this of the best similarity memory has for it anywhere.
    match_margin: float = 0.08
    # A sighting less similar than this to the anchor does not show it (the anchor is
    # named by its words: signs and room names, read or captioned).
    min_anchor_similarity: float = 0.2
    # The instance's best similarity anywhere below this: memory cannot recognise it (say,
    # an object where the only view is read text) and the anchor's sightings are returned.
    # Lower it for views whose cosines run low (image-text embedders); 0 turns it off.
    min_target_similarity: float = 0.5
    # Entries of one session further apart in index than this start a new pass.
    visit_gap: int = 5

    def __post_init__(self) -> None:
        for name, low, high in (
            ('max_anchors', 1, 20),
            ('anchor_k', 1, 100),
            ('range_k', 1, 10_000),
            ('max_visits', 1, 50),
            ('target_k', 1, 100),
            ('visit_gap', 1, 10_000),
        ):
            if not low <= getattr(self, name) <= high:
                raise ValueError(f'{name} must be in [{low}, {high}], got {getattr(self, name)}')
        for name, high in (
            ('anchor_separation_m', 100.0),
            ('radius_m', 100.0),
            ('room_radius_m', 100.0),
            ('sight_margin_m', 100.0),
            ('match_margin', 2.0),
            ('min_anchor_similarity', 1.0),
            ('min_target_similarity', 1.0),
        ):
            value = getattr(self, name)
            if not (math.isfinite(value) and 0.0 <= value <= high):
                raise ValueError(f'{name} must be in [0, {high}], got {value}')
        if self.radius_m <= 0 or self.room_radius_m <= 0:
            raise ValueError('radius_m and room_radius_m must be > 0')


def camera_position(hit: Hit, query: str = '') -> tuple[float, float]:
    """Where the camera stood when it saw the thing: the position of an unlocalised hit."""
    return hit.record.x, hit.record.y


@dataclass
class RelationalResult:
    """The instance's candidates nearest the anchor, best first, and how they were found."""

    hits: list[Hit]
    anchors: list[Hit] = field(default_factory=list)
    retrievals: int = 0
    # Why nothing near an anchor matched, when `hits` is empty.
    why: str = ''

    def note(self) -> dict:
        """What the trace keeps of it."""
        return {
            'anchors': [
                [hit.record.id, round(hit.record.x, 2), round(hit.record.y, 2)]
                for hit in self.anchors
            ],
            'found': [hit.record.id for hit in self.hits],
            'retrievals': self.retrievals,
            'why': self.why,
        }


class RelationalSearch:
    """Anchor first, then the nearest instance: see the module docstring.

    `search` answers a memory search; `scope` makes one within the question's sessions
    and level (SearchQuery with those given). `position_of` places a hit.
    """

    def __init__(
        self,
        search: Callable[[SearchQuery], list[Hit]],
        scope: Callable[..., SearchQuery],
        params: RelationParams | None = None,
        position_of: PositionOf = camera_position,
    ) -> None:
        self.search = search
        self.scope = scope
        self.params = params or RelationParams()
        self.position_of = position_of

    def run(self, relation: Relation, k: int) -> RelationalResult:
        p = self.params
        result = RelationalResult(hits=[])
        anchor_hits = self.search(self.scope(Mode.TEXT, k=p.anchor_k, text=relation.anchor))
        result.retrievals += 1
        anchor_hits = [h for h in anchor_hits if _similarity(h)]
        top = max((h.score for h in anchor_hits), default=0.0)
        # Only sightings about as good as the best: the rest show something else.
        sightings = [
            h
            for h in anchor_hits
            if h.record.pose_valid and h.score >= max(top - p.match_margin, p.min_anchor_similarity)
        ]
        result.anchors = self._distinct(sightings, relation.anchor)
        if not result.anchors:
            result.why = f'no sighting of {relation.anchor!r} with a position'
            return result
        overall = self.search(self.scope(Mode.TEXT, k=p.target_k, text=relation.target))
        overall = [h for h in overall if _similarity(h)]
        result.retrievals += 1
        if not overall:
            result.why = f'nothing in memory matches {relation.target!r}'
            return result
        best = max(h.score for h in overall)
        if best < p.min_target_similarity:
            # Nothing in memory looks like the instance (an object no view can tell): the
            # anchor's own sightings are the best answer, the instance being next to them.
            result.hits = sightings[:k]
            result.why = f'nothing recognisably {relation.target!r}: the anchor sightings'
            return result
        floor = best - p.match_margin
        radius = p.room_radius_m if relation.room else p.radius_m
        ranked: dict[str, tuple[tuple[int, float, float], Hit]] = {}
        for rank, anchor in enumerate(result.anchors):
            ax, ay = self.position_of(anchor, relation.anchor)
            reach = radius + p.sight_margin_m
            near = self._near(anchor, ax, ay, reach, relation.target, result)
            for hit in near:
                if hit.score < floor:
                    continue
                hx, hy = self.position_of(hit, relation.target)
                distance = math.hypot(hx - ax, hy - ay)
                if distance > radius:
                    continue
                key = (rank, distance, -hit.score)
                known = ranked.get(hit.record.id)
                if known is None or key < known[0]:
                    ranked[hit.record.id] = (key, hit)
        result.hits = [hit for _, hit in sorted(ranked.values(), key=lambda kv: kv[0])][:k]
        if not result.hits:
            result.why = f'no {relation.target!r} within {radius:g} m of {relation.anchor!r}'
        return result

    def _distinct(self, hits: Sequence[Hit], query: str) -> list[Hit]:
        """The best sightings at least anchor_separation_m apart, best first."""
        chosen: list[Hit] = []
        for hit in hits:
            x, y = self.position_of(hit, query)
            if all(
                math.dist((x, y), self.position_of(other, query)) >= self.params.anchor_separation_m
                for other in chosen
            ):
                chosen.append(hit)
            if len(chosen) == self.params.max_anchors:
                break
        return chosen

    def _near(
        self, anchor: Hit, x: float, y: float, radius: float, target: str, result: RelationalResult
    ) -> list[Hit]:
        """Entries within `radius` of (x, y) of the anchor's session and map epoch, scored
        by their similarity to `target`: each pass through the place ranked for it."""
        p = self.params
        around = self.search(
            self.scope(Mode.RANGE, k=p.range_k, position=(x, y, 0.0), radius=radius)
        )
        result.retrievals += 1
        same = [
            h.record
            for h in around
            if h.record.session == anchor.record.session
            and h.record.map_epoch == anchor.record.map_epoch
            and h.record.pose_valid
        ]
        inside = {r.id for r in same}
        found: list[Hit] = []
        for first, last in _passes(sorted(r.index for r in same), p.visit_gap)[: p.max_visits]:
            hits = self.search(
                self.scope(
                    Mode.INDEX_RANGE,
                    k=p.target_k,
                    sessions=(anchor.record.session,),
                    first_index=first,
                    last_index=last,
                    text=target,
                )
            )
            result.retrievals += 1
            found += [h for h in hits if h.record.id in inside and _similarity(h)]
        return found


def _passes(indices: Sequence[int], gap: int) -> list[tuple[int, int]]:
    """Runs of sorted indices split where they jump by more than `gap`, longest first."""
    runs: list[list[int]] = []
    for index in indices:
        if runs and index - runs[-1][1] <= gap:
            runs[-1][1] = index
        else:
            runs.append([index, index])
    return [(a, b) for a, b in sorted(runs, key=lambda r: (r[0] - r[1], r[0]))]


def _similarity(hit: Hit) -> bool:
    return hit.view not in ('time', 'position', 'index')
