# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""A lesson card and its versioned JSON snapshot.

A card holds what the model is shown (the source task's text, a summary of how that task
went, and the transferable lesson), what retrieval needs (the task's embedding and the
trust counts) and where it came from. It never holds the task's answer or its verified
target: those stay in the records the lesson was reflected from.

A card also remembers the keys of the latest outcomes it counted (`counted`), so that an
outcome sent again (a person's feedback repeated, a task's calibration retried after a
crash) is not counted twice. The keys live in the card's own row, written with its counts
in one upsert, so a crash can never keep one without the other.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from waymark.durable import replace_atomically
from waymark.lessons.trust import TrustPrior, Visits
from waymark.model_text import validation_problems

SNAPSHOT_VERSION = 2  # 2: cards keep the keys of the outcomes they counted
MAX_TASK_CHARS = 1_000
MAX_SUMMARY_CHARS = 400
MAX_LESSON_CHARS = 400
MAX_ID_CHARS = 128
# Outcome keys kept per card, newest last: a repeat older than this many outcomes of the
# same card would count again.
MAX_COUNTED_KEYS = 8


class SnapshotError(ValueError):
    """A snapshot that cannot be read into this bank, with the reason."""


@dataclass(frozen=True)
class Provenance:
    """Where a lesson came from: the run and task (or query) it was reflected from, the
    model that wrote it, and when (ns since the epoch)."""

    run: str
    task: str
    model: str
    stamp_ns: int

    def __post_init__(self) -> None:
        for name in ('run', 'task', 'model'):
            if len(getattr(self, name)) > MAX_ID_CHARS:
                raise ValueError(f'{name} is over {MAX_ID_CHARS} characters')
        if self.stamp_ns < 0:
            raise ValueError(f'stamp_ns must be >= 0, got {self.stamp_ns}')


@dataclass(frozen=True)
class LessonCard:
    """One lesson. `visits` counts the verified outcomes of the tasks it was retrieved
    for since it was written, not the outcome of its own task."""

    card_id: str
    task: str
    embedding: tuple[float, ...]
    summary: str
    lesson: str
    provenance: Provenance
    visits: Visits = field(default_factory=Visits)
    counted: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not 0 < len(self.card_id) <= MAX_ID_CHARS:
            raise ValueError(f'a card id needs 1-{MAX_ID_CHARS} characters: {self.card_id!r}')
        if len(self.counted) > MAX_COUNTED_KEYS:
            raise ValueError(f'a card keeps at most {MAX_COUNTED_KEYS} outcome keys')
        for key in self.counted:
            check_outcome_key(key)
        for name, limit in (
            ('task', MAX_TASK_CHARS),
            ('summary', MAX_SUMMARY_CHARS),
            ('lesson', MAX_LESSON_CHARS),
        ):
            text = getattr(self, name)
            if not text.strip() or len(text) > limit:
                raise ValueError(f'a card needs a {name} of 1-{limit} characters')
        if not self.embedding or not all(math.isfinite(x) for x in self.embedding):
            raise ValueError(f'card {self.card_id} needs a finite, non-empty task embedding')

    def trust(self, prior: TrustPrior) -> float:
        return self.visits.score(prior)

    def counting(
        self, reward: float, key: str = '', replaces: Superseded | None = None
    ) -> LessonCard:
        """The card once one more verified outcome is counted, remembered by `key` when
        one is given. With `replaces`, the outcome it supersedes is withdrawn when this
        card counted it, and otherwise remembered as counted, so it never counts later."""
        visits, counted = self.visits, self.counted
        if replaces is not None:
            if replaces.key in counted:
                visits = visits.without(replaces.reward)
            else:
                counted = (*counted, replaces.key)
        counted = (*counted, key) if key else counted
        return replace(self, visits=visits.after(reward), counted=counted[-MAX_COUNTED_KEYS:])


@dataclass(frozen=True)
class Superseded:
    """An outcome a later one replaces (the judge's verdict on a task, once a person gave
    their word on it): its key and the reward it was counted with."""

    key: str
    reward: float

    def __post_init__(self) -> None:
        check_outcome_key(self.key)
        if not (math.isfinite(self.reward) and 0.0 <= self.reward <= 1.0):
            raise ValueError(f'a replaced reward must be in [0, 1], got {self.reward}')


def check_outcome_key(key: str) -> str:
    """An outcome key: 1-128 printable ASCII characters (a task or query id with its kind)."""
    if not (0 < len(key) <= MAX_ID_CHARS and key.isascii() and key.isprintable()):
        raise ValueError(f'an outcome key needs 1-{MAX_ID_CHARS} printable ASCII characters')
    return key


@dataclass(frozen=True)
class Snapshot:
    """A bank as a file: its cards, the embedder their task embeddings came from, and the
    trust prior their scores are read with."""

    embedder: str
    dimension: int
    prior: TrustPrior
    cards: tuple[LessonCard, ...]

    def __post_init__(self) -> None:
        for card in self.cards:
            if len(card.embedding) != self.dimension:
                raise SnapshotError(
                    f'card {card.card_id} has a {len(card.embedding)}-d embedding in a '
                    f'{self.dimension}-d snapshot'
                )


class _ProvenanceModel(BaseModel):
    model_config = ConfigDict(extra='forbid', strict=True)
    run: str
    task: str
    model: str
    stamp_ns: int = Field(ge=0)


class _BodyModel(BaseModel):
    model_config = ConfigDict(extra='forbid', strict=True)
    task: str
    summary: str
    lesson: str
    provenance: _ProvenanceModel
    counted: list[str] = Field(default_factory=list)  # absent in version 1


class _CardModel(_BodyModel):
    card_id: str
    embedding: list[float]
    visits: int = Field(ge=0)
    reward_sum: float = Field(ge=0.0)


class _SnapshotModel(BaseModel):
    model_config = ConfigDict(extra='forbid', strict=True)
    version: Literal[1, 2]
    kind: Literal['lesson_bank']
    embedder: str
    dimension: int = Field(ge=1)
    prior_weight: float
    prior_mean: float
    cards: list[_CardModel]


def snapshot_json(snapshot: Snapshot) -> str:
    """The snapshot as versioned JSON, cards in id order so equal banks give equal text."""
    cards = sorted(snapshot.cards, key=lambda card: card.card_id)
    return json.dumps(
        {
            'version': SNAPSHOT_VERSION,
            'kind': 'lesson_bank',
            'embedder': snapshot.embedder,
            'dimension': snapshot.dimension,
            'prior_weight': snapshot.prior.weight,
            'prior_mean': snapshot.prior.mean,
            'cards': [_card_dict(card) for card in cards],
        },
        indent=1,
        sort_keys=True,
    )


def card_body(card: LessonCard) -> dict:
    """A card's texts and provenance: what a snapshot and the lesson collection both keep
    as JSON beside the id, embedding and visits."""
    source = card.provenance
    return {
        'task': card.task,
        'summary': card.summary,
        'lesson': card.lesson,
        'provenance': {
            'run': source.run,
            'task': source.task,
            'model': source.model,
            'stamp_ns': source.stamp_ns,
        },
        'counted': list(card.counted),
    }


def card_from_body(
    card_id: str, body: dict, embedding: Sequence[float], visits: Visits
) -> LessonCard:
    """The card `card_body` gave `body` for; ValueError names what is wrong."""
    try:
        raw = _BodyModel.model_validate(body)
    except ValidationError as error:
        raise ValueError(validation_problems(error, 'card')) from error
    source = raw.provenance
    return LessonCard(
        card_id=card_id,
        task=raw.task,
        embedding=tuple(float(x) for x in embedding),
        summary=raw.summary,
        lesson=raw.lesson,
        provenance=Provenance(source.run, source.task, source.model, source.stamp_ns),
        visits=visits,
        counted=tuple(raw.counted),
    )


def _card_dict(card: LessonCard) -> dict:
    return {
        'card_id': card.card_id,
        **card_body(card),
        'embedding': list(card.embedding),
        'visits': card.visits.count,
        'reward_sum': card.visits.reward_sum,
    }


def read_snapshot(text: str, embedder: str = '', dimension: int = 0) -> Snapshot:
    """A snapshot from its JSON. With `embedder` or `dimension` given, a snapshot made with
    another embedder is refused: its similarities would mean nothing here."""
    try:
        raw = _SnapshotModel.model_validate_json(text)
    except ValidationError as error:
        raise SnapshotError(
            f'not a lesson bank snapshot: {validation_problems(error, "snapshot")}'
        ) from error
    if dimension and raw.dimension != dimension:
        raise SnapshotError(
            f'the snapshot holds {raw.dimension}-d task embeddings ({raw.embedder}); this '
            f'bank embeds tasks in {dimension}-d ({embedder or "its embedder"})'
        )
    if embedder and raw.embedder != embedder:
        raise SnapshotError(
            f'the snapshot was embedded by {raw.embedder}; this bank embeds with {embedder}'
        )
    try:
        cards = tuple(_card(card) for card in raw.cards)
        prior = TrustPrior(raw.prior_weight, raw.prior_mean)
        snapshot = Snapshot(raw.embedder, raw.dimension, prior, cards)
    except ValueError as error:
        raise SnapshotError(f'the snapshot holds an invalid card: {error}') from error
    duplicates = _duplicates([card.card_id for card in cards])
    if duplicates:
        raise SnapshotError(f'the snapshot repeats card ids: {duplicates}')
    return snapshot


def _card(raw: _CardModel) -> LessonCard:
    body = raw.model_dump(include={'task', 'summary', 'lesson', 'provenance', 'counted'})
    return card_from_body(raw.card_id, body, raw.embedding, Visits(raw.visits, raw.reward_sum))


def _duplicates(ids: Sequence[str]) -> list[str]:
    return sorted(card_id for card_id, times in Counter(ids).items() if times > 1)


def write_snapshot(snapshot: Snapshot, path: Path, fsync: bool = True) -> None:
    """Writes the snapshot whole or not at all (a crash leaves the previous file)."""
    replace_atomically(path, snapshot_json(snapshot).encode('utf-8'), fsync)


def load_snapshot(path: Path, embedder: str = '', dimension: int = 0) -> Snapshot:
    try:
        text = path.read_text(encoding='utf-8')
    except (OSError, UnicodeDecodeError) as error:
        raise SnapshotError(f'cannot read the snapshot {path.name}: {error}') from error
    return read_snapshot(text, embedder, dimension)
