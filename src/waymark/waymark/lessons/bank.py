# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The lesson bank: retrieval over the cards, calibration by verified outcomes, and the
writing rules (near-duplicates merged, a size cap), in one of two modes.

`acquire` writes and calibrates; `read_only` retrieves and changes nothing, so a robot
deployed with a snapshot keeps it byte for byte. Calibration and writing hold one lock:
two answers calibrating the same card at once both count. With a `LessonStore`, every
change is written there first; a change the store refuses is not made in memory either.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from waymark.lessons.cards import LessonCard, Snapshot, Superseded, check_outcome_key
from waymark.lessons.retrieval import Candidate, Ranked, RetrievalParams, rank
from waymark.lessons.store import LessonStore
from waymark.lessons.trust import TrustPrior
from waymark.tasks.outcomes import Word

Embed = Callable[[str], np.ndarray]


class BankMode(Word):
    ACQUIRE = 'acquire'
    READ_ONLY = 'read_only'


class ReadOnlyError(RuntimeError):
    """A change asked of a read-only bank."""


@dataclass(frozen=True)
class BankLimits:
    """At most `max_cards`; a new lesson whose text is this close (cosine) to a card's is
    merged into it; a card is well visited from `well_visited` visits, and such cards are
    evicted first, least trusted first."""

    max_cards: int = 500
    duplicate_similarity: float = 0.92
    well_visited: int = 3

    def __post_init__(self) -> None:
        if self.max_cards < 1 or self.well_visited < 1:
            raise ValueError(f'max_cards and well_visited must be >= 1: {self}')
        if not 0.0 < self.duplicate_similarity <= 1.0:
            raise ValueError(f'duplicate_similarity must be in (0, 1]: {self}')


@dataclass(frozen=True)
class Retrieved:
    card: LessonCard
    ranked: Ranked


@dataclass(frozen=True)
class Added:
    """What writing a card did: `card_id` is the card that now holds the lesson (the new
    one, or the one it was merged into); `evicted` the cards the cap removed."""

    card_id: str
    merged: bool
    evicted: tuple[str, ...] = ()


class LessonBank:
    def __init__(
        self,
        snapshot: Snapshot,
        embed_lesson: Embed,
        mode: BankMode = BankMode.READ_ONLY,
        params: RetrievalParams | None = None,
        limits: BankLimits | None = None,
        store: LessonStore | None = None,
    ) -> None:
        if store is not None and store.dimension != snapshot.dimension:
            raise ValueError(
                f'a {snapshot.dimension}-d bank over a {store.dimension}-d lesson collection'
            )
        self.store = store
        self.embedder = snapshot.embedder
        self.dimension = snapshot.dimension
        self.prior = snapshot.prior
        self.mode = mode
        self.params = params or RetrievalParams()
        self.limits = limits or BankLimits()
        self._embed_lesson = embed_lesson
        self._cards = {card.card_id: card for card in snapshot.cards}
        # Unit task embeddings, made once per card rather than on every retrieval.
        self._task_vectors = {
            card.card_id: unit_vector(card.embedding, self.dimension) for card in snapshot.cards
        }
        self._lesson_vectors: dict[str, np.ndarray] = {}  # filled as needed
        self._lock = threading.Lock()
        self.merged = 0
        self.evicted = 0

    def __len__(self) -> int:
        return len(self._cards)

    def snapshot(self) -> Snapshot:
        with self._lock:
            cards = tuple(self._cards.values())
        return Snapshot(self.embedder, self.dimension, self.prior, cards)

    def retrieve(self, task_embedding: Sequence[float]) -> list[Retrieved]:
        """The lessons for a task, best first (none when nothing is similar enough)."""
        query = unit_vector(task_embedding, self.dimension)
        with self._lock:
            cards = list(self._cards.values())
            vectors = [self._task_vectors[card.card_id] for card in cards]
        candidates = [
            Candidate(card.card_id, float(query @ vector), card.trust(self.prior))
            for card, vector in zip(cards, vectors, strict=True)
        ]
        by_id = {card.card_id: card for card in cards}
        return [Retrieved(by_id[r.lesson_id], r) for r in rank(candidates, self.params)]

    def calibrate(
        self,
        card_ids: Sequence[str],
        reward: float,
        key: str = '',
        replaces: Superseded | None = None,
    ) -> int:
        """Counts one verified outcome with `reward` for each card that guided it; cards
        gone since (evicted) are skipped, and with a `key`, so are cards that counted that
        key before. With `replaces` (a person's word on a task the judge decided), a card
        that counted the superseded outcome has it withdrawn first, so a wrong verdict
        does not stay in its counts. Returns how many were updated; a card that cannot
        give the superseded reward back refuses the whole calibration (ValueError)."""
        self._writable()
        if key:
            check_outcome_key(key)
        if replaces is not None and (not key or replaces.key == key):
            raise ValueError('an outcome that replaces another needs a key of its own')
        with self._lock:
            updated = [
                card.counting(reward, key, replaces)
                for card in (self._cards.get(card_id) for card_id in dict.fromkeys(card_ids))
                if card is not None and not (key and key in card.counted)
            ]
            if self.store is not None:
                self.store.put(updated)
            for card in updated:
                self._cards[card.card_id] = card
            return len(updated)

    def add(self, card: LessonCard) -> Added:
        """Writes a new card, or merges it into a card with nearly the same lesson (which
        keeps its own visits); then holds the size cap."""
        self._writable()
        task_vector = unit_vector(card.embedding, self.dimension)  # another embedder's is refused
        vector = unit_vector(self._embed_lesson(card.lesson), None)
        with self._lock:
            if card.card_id in self._cards:
                raise ValueError(f'card {card.card_id} is already in the bank')
            twin = self._nearest_lesson(vector)
            if twin is not None:
                self.merged += 1
                return Added(twin, merged=True)
            victims = self._victims(extra=1)
            if self.store is not None:
                self.store.put([card])
                self.store.remove(victims)
            self._cards[card.card_id] = card
            self._task_vectors[card.card_id] = task_vector
            self._lesson_vectors[card.card_id] = vector
            for victim in victims:
                del self._cards[victim], self._task_vectors[victim]
                self._lesson_vectors.pop(victim, None)
            self.evicted += len(victims)
            return Added(card.card_id, merged=False, evicted=victims)

    def _writable(self) -> None:
        if self.mode is not BankMode.ACQUIRE:
            raise ReadOnlyError('the lesson bank is read-only: nothing is written or calibrated')

    def _nearest_lesson(self, vector: np.ndarray) -> str | None:
        best, best_id = self.limits.duplicate_similarity, None
        for card_id, card in self._cards.items():
            known = self._lesson_vectors.get(card_id)
            if known is None:
                known = self._lesson_vectors[card_id] = unit_vector(
                    self._embed_lesson(card.lesson), None
                )
            similarity = float(vector @ known)
            if similarity >= best:
                best, best_id = similarity, card_id
        return best_id

    def _victims(self, extra: int) -> tuple[str, ...]:
        """The cards to evict so that `extra` more fit under the cap; chosen before the
        new card is in, so it is never its own victim."""
        over = len(self._cards) + extra - self.limits.max_cards
        return tuple(self._eviction_order()[: max(0, over)])

    def _eviction_order(self) -> list[str]:
        """Well-visited cards, least trusted first; then the rest, least trusted and
        oldest first."""
        well = self.limits.well_visited

        def order(card: LessonCard) -> tuple:
            seen_enough = card.visits.count >= well
            return (not seen_enough, card.trust(self.prior), card.provenance.stamp_ns)

        return [card.card_id for card in sorted(self._cards.values(), key=order)]


def unit_vector(vector: Sequence[float] | np.ndarray, dimension: int | None = None) -> np.ndarray:
    """The embedding scaled to length 1; ValueError for another dimension than `dimension`
    (when given), or one with no finite, non-zero length."""
    array = np.asarray(vector, dtype=float).ravel()
    if dimension is not None and array.size != dimension:
        raise ValueError(f'a {array.size}-d embedding in a bank of {dimension}-d embeddings')
    norm = float(np.linalg.norm(array))
    if not np.isfinite(norm) or norm == 0.0:
        raise ValueError('an embedding needs a finite, non-zero length')
    return array / norm


def open_bank(
    store: LessonStore,
    embedder: str,
    embed_lesson: Embed,
    mode: BankMode = BankMode.READ_ONLY,
    params: RetrievalParams | None = None,
    limits: BankLimits | None = None,
    prior: TrustPrior | None = None,
) -> LessonBank:
    """The bank kept in `store`, as it was last written."""
    snapshot = Snapshot(embedder, store.dimension, prior or TrustPrior(), tuple(store.cards()))
    return LessonBank(snapshot, embed_lesson, mode, params, limits, store)


def empty_snapshot(embedder: str, dimension: int, prior: TrustPrior | None = None) -> Snapshot:
    return Snapshot(embedder, dimension, prior or TrustPrior(), ())
