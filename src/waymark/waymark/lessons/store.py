# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The lesson bank's own collection in memory's Milvus (Lite by default, or a server).

One row per card: its id, its task embedding, its visits and the rest of the card as
JSON. Every change is an upsert of whole rows or a delete by id, with strong consistency,
so a card and its counts are durable once a call returns. The bank reads the collection
once when it opens and keeps its cards in memory; this store is written first.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence

from pymilvus import DataType, MilvusClient, MilvusException

from waymark.lessons.cards import MAX_ID_CHARS, LessonCard, card_body, card_from_body
from waymark.lessons.trust import Visits
from waymark.memory.storage.connection import connect
from waymark.memory.storage.errors import MemoryStoreError
from waymark.memory.storage.scan import scan_collection
from waymark.memory.storage.schema import FieldSpec, ensure_collection

# A card's JSON: the three texts (1000 + 400 + 400 characters, up to 4 bytes each), its
# provenance and its 8 ASCII outcome keys (up to 128 each) fit when the texts are mostly
# ASCII; a card that does not fit is refused whole (LessonStoreError), never cut.
CARD_MAX_BYTES = 8_192


class LessonStoreError(RuntimeError):
    """The lesson collection could not be read or written."""


class LessonStore:
    def __init__(self, uri: str, dimension: int, prefix: str = 'waymark', token: str = '') -> None:
        if not 1 <= dimension <= 32_768:
            raise ValueError(f'dimension must be in [1, 32768], got {dimension}')
        self.dimension = dimension
        self.collection = f'{prefix}_lessons'
        try:
            self._client = connect(uri, token)
            ensure_collection(self._client, self.collection, _fields(dimension), 'vector', 'COSINE')
        except (MemoryStoreError, MilvusException) as error:
            raise LessonStoreError(f'cannot open the lesson collection: {error}') from error

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def cards(self) -> list[LessonCard]:
        """Every card, as last written."""
        return [_card(row) for row in self._scan()]

    def put(self, cards: Sequence[LessonCard]) -> None:
        """Writes the cards whole (a new card, or new counts for one that exists)."""
        if not cards:
            return
        for card in cards:
            if len(card.embedding) != self.dimension:
                raise ValueError(
                    f'card {card.card_id}: a {len(card.embedding)}-d embedding in a '
                    f'{self.dimension}-d lesson collection'
                )
        try:
            self._open().upsert(self.collection, [_row(card) for card in cards])
        except MilvusException as error:
            raise LessonStoreError(f'cannot write {len(cards)} lesson cards: {error}') from error

    def remove(self, card_ids: Sequence[str]) -> None:
        if not card_ids:
            return
        try:
            self._open().delete(self.collection, ids=list(card_ids))
        except MilvusException as error:
            raise LessonStoreError(f'cannot remove lesson cards: {error}') from error

    def _open(self) -> MilvusClient:
        if self._client is None:
            raise LessonStoreError('the lesson collection is closed')
        return self._client

    def _scan(self) -> Iterator[dict]:
        fields = ['id', 'vector', 'card', 'visits', 'reward_sum']
        try:
            yield from scan_collection(self._open(), self.collection, fields)
        except MilvusException as error:
            raise LessonStoreError(f'cannot read the lesson cards: {error}') from error


def _fields(dimension: int) -> list[FieldSpec]:
    return [
        FieldSpec('id', DataType.VARCHAR, {'max_length': MAX_ID_CHARS * 4}, primary=True),
        FieldSpec('vector', DataType.FLOAT_VECTOR, {'dim': dimension}),
        FieldSpec('card', DataType.VARCHAR, {'max_length': CARD_MAX_BYTES}),
        FieldSpec('visits', DataType.INT64),
        # A double, so a reward sum reads back exactly as it was counted.
        FieldSpec('reward_sum', DataType.DOUBLE),
    ]


def _row(card: LessonCard) -> dict:
    return {
        'id': card.card_id,
        'vector': [float(x) for x in card.embedding],
        'card': json.dumps(card_body(card), ensure_ascii=False),
        'visits': card.visits.count,
        'reward_sum': card.visits.reward_sum,
    }


def _card(row: dict) -> LessonCard:
    try:
        visits = Visits(int(row['visits']), float(row['reward_sum']))
        return card_from_body(row['id'], json.loads(row['card']), row['vector'], visits)
    except (KeyError, TypeError, ValueError) as error:
        raise LessonStoreError(f'lesson card {row.get("id")!r} cannot be read: {error}') from error
