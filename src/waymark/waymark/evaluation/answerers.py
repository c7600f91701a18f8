# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Baseline answerers: the rows every reasoning agent is compared against.

`EmbedderOnlyAnswerer` answers from the best memory hit and nothing else (what
reasoner_node does without an LLM), at one level of memory (frames or segments) and over
all of its views or a chosen few; `RandomEntryAnswerer` answers from a random memory
entry, the floor any method must clear.

Every answerer localises its answer as the agent does (`waymark.localisation`): the target
is where the chosen entry, helped by the other hits that read the same words, saw the
thing, and the position answered is the standoff pose facing it (no occupancy map here).
That is geometry, not reasoning, so the baselines get it too.

Embedder-only rows are named after what they search: `embedder-only` (frames, all views),
`embedder-only/text` (frames, text view only), `embedder-only/segment`,
`embedder-only/segment/text`; several views are joined with "+".

The reasoning agent's rows (agent_answerer.py, only with an LLM) are `agent` (Binary
Tracking offered) and `agent/no-bt` (search_between withheld), optionally labelled with
the planner behind them: `agent[scripted]`, `agent/no-bt[scripted]`.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from waymark.evaluation.metrics import Prediction
from waymark.evaluation.questions import AnswerType, Category, Question
from waymark.localisation.params import LocalisationParams
from waymark.localisation.place import place
from waymark.memory.entries import FRAME, LEVELS, SEGMENT, FrameRecord, Hit, frame_id
from waymark.memory.search_query import Mode, SearchQuery
from waymark.memory.service import MemoryService

EMBEDDER_ONLY = 'embedder-only'
RANDOM_ENTRY = 'random-entry'
AGENT = 'agent'
NO_BINTRACK = 'no-bt'
_AGENT_NAME = re.compile(r'agent(/no-bt)?(?:\[([A-Za-z0-9_.:+-]{1,40})\])?')


class AnswererError(ValueError):
    """An answerer name that is malformed or asks for a view memory does not have."""


def embedder_name(level: str = FRAME, views: Sequence[str] | None = None) -> str:
    """The row name of an embedder-only answerer: `embedder-only[/<level>][/<views>]`."""
    parts = [EMBEDDER_ONLY]
    if level != FRAME:
        parts.append(level)
    if views:
        parts.append('+'.join(views))
    return '/'.join(parts)


def parse_embedder_name(name: str) -> tuple[str, tuple[str, ...]]:
    """(level, views) of an embedder-only row name (views empty: all of the level's)."""
    parts = name.split('/')
    rest = parts[1:]
    level = rest.pop(0) if rest and rest[0] in LEVELS else FRAME
    if parts[0] != EMBEDDER_ONLY or len(rest) > 1 or (rest and not all(rest[0].split('+'))):
        raise AnswererError(
            f'unknown answerer {name!r}: use {RANDOM_ENTRY}, {AGENT}[/{NO_BINTRACK}] or '
            f'{EMBEDDER_ONLY}[/<level>][/<view>+...] (levels {", ".join(LEVELS)})'
        )
    return level, tuple(rest[0].split('+')) if rest else ()


def model_label(model: str) -> str:
    """A model's name as an agent row's label: characters a label may not have become '-'
    ('Qwen/Qwen2.5-VL-7B-Instruct' -> 'Qwen-Qwen2.5-VL-7B-Instruct')."""
    return re.sub(r'[^A-Za-z0-9_.:+-]', '-', model)


def agent_name(bintrack: bool = True, label: str = '') -> str:
    """The row name of an agent answerer: `agent[/no-bt][[<label>]]`."""
    name = AGENT if bintrack else f'{AGENT}/{NO_BINTRACK}'
    name += f'[{label}]' if label else ''
    if parse_agent_name(name) is None:
        raise AnswererError(f'bad agent label {label!r}: letters, digits and _.:+- only')
    return name


def parse_agent_name(name: str) -> tuple[bool, str] | None:
    """(Binary Tracking offered, label) of an agent row name, None for any other row."""
    match = _AGENT_NAME.fullmatch(name)
    return None if match is None else (match.group(1) is None, match.group(2) or '')


# An agent row that fell back on more of its questions than this shows the fallback's
# figures, not the model's.
MAX_AGENT_FALLBACK = 0.10


def row_label(name: str, fallback_rate: float) -> str:
    """The row's name in a table: an agent row above MAX_AGENT_FALLBACK says that its
    figures are not the model's (the embedder-only rows are the fallback itself)."""
    if parse_agent_name(name) is None or fallback_rate <= MAX_AGENT_FALLBACK:
        return name
    return f"{name} (fell back on {100 * fallback_rate:.0f}%: not the model's result)"


def check_answerer_name(name: str) -> None:
    """AnswererError unless `name` is a row this module can make (views are checked
    against memory when the answerer is made, an agent's LLM when the run starts)."""
    if name != RANDOM_ENTRY and parse_agent_name(name) is None:
        parse_embedder_name(name)


def embedder_row(name: str) -> tuple[str, tuple[str, ...]] | None:
    """(level, views) of an embedder-only row name, None for any other row."""
    try:
        return parse_embedder_name(name)
    except AnswererError:
        return None


def is_per_view(name: str) -> bool:
    """Whether a row searches chosen views only (a breakdown of its level's row)."""
    row = embedder_row(name)
    return row is not None and bool(row[1])


def standard_answerers(memory: MemoryService) -> tuple[str, ...]:
    """The rows of a standard evaluation for what memory holds: embedder-only over frames
    with all views and per view, the same over segments when memory has them, and the
    random floor."""
    names = [embedder_name(FRAME)]
    frame_views = memory.store.views(FRAME)
    names += [embedder_name(FRAME, [view]) for view in frame_views]
    segment_views = memory.store.views(SEGMENT)
    if segment_views:
        names.append(embedder_name(SEGMENT))
        names += [embedder_name(SEGMENT, [view]) for view in segment_views]
    return (*names, RANDOM_ENTRY)


class Answerer(Protocol):
    name: str

    def answer(self, question: Question, image: np.ndarray | None = None) -> Prediction: ...


class EmbedderOnlyAnswerer:
    """Top-1 of a similarity search with the question as the query (or the photo).

    `level` is the memory level searched (frames or segments), `views` the embedding views
    (empty: all that level has). A segment's answer is its representative pose (the mean
    position of its frames, the yaw of the middle one), as BinTrack returns, and the
    middle of its window as the time.
    """

    def __init__(
        self,
        memory: MemoryService,
        top_k: int = 5,
        yes_threshold: float = 0.5,
        level: str = FRAME,
        views: Sequence[str] = (),
        localisation: LocalisationParams | None = None,
    ) -> None:
        enabled = memory.store.views(level)  # also checks the level
        unknown = sorted(set(views) - set(enabled))
        if unknown:
            raise AnswererError(
                f'views {unknown} are not in memory at the {level} level: {enabled}'
            )
        self.memory = memory
        self.top_k = top_k
        self.yes_threshold = yes_threshold
        self.level = level
        self.views = tuple(dict.fromkeys(views))
        self.localisation = localisation or LocalisationParams()
        self.name = embedder_name(level, self.views)

    def answer(self, question: Question, image: np.ndarray | None = None) -> Prediction:
        started = time.perf_counter()
        total = self.memory.store.count(level=self.level)
        views = self.views or tuple(self.memory.store.views(self.level))
        why = ''
        if question.category == Category.IMAGE:
            if image is None:
                why = 'no photo given'
            elif not set(views) & set(self.memory.image_views(self.level)):
                why = f'no image view searched at the {self.level} level'
        elif not views:
            why = f'memory has no embedding view at the {self.level} level'
        if why:
            return Prediction(
                question_id=question.id, answered=False, memory_entries=total, message=why
            )
        if question.category == Category.IMAGE:
            query = SearchQuery(Mode.IMAGE, self.top_k, level=self.level, image=image)
        else:
            query = SearchQuery(
                Mode.TEXT, self.top_k, level=self.level, views=self.views, text=question.question
            )
        hits = self.memory.search(query)
        best = next((h for h in hits if h.record.pose_valid), None)
        elapsed = time.perf_counter() - started
        common = {
            'question_id': question.id,
            'used_fallback': True,
            'entries_shown': len(hits),
            'memory_entries': total,
            'latency_s': elapsed,
            'retrievals': 1,
        }
        if best is None:
            return Prediction(answered=False, message='no matching memory entry', **common)
        others = [hit.record for hit in hits]
        return _from_record(
            question, best.record, best, self.yes_threshold, common, others, self.localisation
        )


class RandomEntryAnswerer:
    """A memory entry drawn uniformly at random (seeded), answered as if it matched."""

    name = RANDOM_ENTRY

    def __init__(self, memory: MemoryService, seed: int = 0, max_draws: int = 50) -> None:
        self.memory = memory
        self.rng = random.Random(seed)
        self.max_draws = max_draws
        self._sizes: dict[str, int] | None = None

    def answer(self, question: Question, image: np.ndarray | None = None) -> Prediction:
        started = time.perf_counter()
        store = self.memory.store
        if self._sizes is None:
            self._sizes = {session: store.next_index(session) for session in store.sessions()}
        common = {'question_id': question.id, 'entries_shown': 1, 'memory_entries': store.count()}
        record = self._draw()
        common['latency_s'] = time.perf_counter() - started
        if record is None:
            return Prediction(answered=False, message='no entry with a valid pose', **common)
        return _from_record(question, record, Hit(record, self.rng.random(), 'random'), 0.5, common)

    def _draw(self) -> FrameRecord | None:
        """Uniform over entries: a session by its size, then an index in it."""
        sessions = [s for s, n in sorted(self._sizes.items()) if n > 0]
        for _ in range(self.max_draws if sessions else 0):
            session = self.rng.choices(sessions, weights=[self._sizes[s] for s in sessions])[0]
            found = self.memory.store.get(
                [frame_id(session, self.rng.randrange(self._sizes[session]))]
            )
            if found and found[0].pose_valid:
                return found[0]
        return None


def _from_record(
    question: Question,
    record: FrameRecord,
    hit: Hit,
    yes_threshold: float,
    common: dict,
    others: Sequence[FrameRecord] = (),
    params: LocalisationParams | None = None,
) -> Prediction:
    """Read the answer a memory entry gives to a question of each type; a segment's time
    is the middle of its window, its position the target located from it."""
    if question.answer_type == AnswerType.YES_NO:
        return Prediction(answered=True, yes=hit.score >= yes_threshold, **common)
    target, goal = place(record, question.question, others, params)
    return Prediction(
        answered=True,
        position=(goal.x, goal.y, record.z),
        target=(target.x, target.y, target.z),
        target_sigma_m=target.sigma_m,
        target_method=target.method,
        viewpoint=(record.x, record.y, record.z),
        time_ns=(record.stamp_ns + record.end_stamp_ns) // 2,
        text=record.text,
        **common,
    )
