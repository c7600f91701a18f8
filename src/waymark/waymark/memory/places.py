# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Named places as memory entries: stored, replaced, removed, listed, found.

A place is a session of its own at the place level of the store ("place-<slot>"): row 0
stands for the place itself (the pose it was marked at, its name and room label as text,
embedded by the text views), rows 1..4 for its views (one image each, with the yaw it was
taken at, embedded by the views that embed photos). A search over the place level may hit
several rows of one place; `distinct_places` keeps its best. The task layer decides what a
place is; memory keeps what it is given and never invents a name.

A record's text holds the name and the room label on two lines (names and labels cannot
hold a line break), so no field is added to the database for places.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from waymark.geometry import Pose
from waymark.memory.entries import PLACE, FrameRecord, Hit
from waymark.memory.search_query import DEFAULT_MAX_K
from waymark.memory.storage.image_codec import ImageLimits, decode_image
from waymark.memory.storage.image_store import ImageStore, ImageStoreFullError
from waymark.memory.views.view import View

if TYPE_CHECKING:  # the store and its Milvus client load only where a store is used
    from waymark.memory.storage.store import MemoryStore

SESSION_PREFIX = 'place-'
MAX_VIEWS = 4
# Rows a place may take: itself and its views.
ROWS_PER_PLACE = 1 + MAX_VIEWS
NAME_MAX_CHARS = 64
ROOM_MAX_CHARS = 64
DEFAULT_MAX_PLACES = 100
# A place's rows must fit one store query (its max_k, 1000 by default).
MAX_PLACES_LIMIT = DEFAULT_MAX_K // ROWS_PER_PLACE


@dataclass(frozen=True)
class PlaceViewImage:
    """One view of a place: compressed image bytes and the yaw (rad, map frame) it faced."""

    image: bytes
    yaw: float
    image_format: str = 'jpeg'


@dataclass(frozen=True)
class PlaceInput:
    """A place as the task layer hands it to memory."""

    name: str
    pose: Pose
    map_epoch: int
    stamp_ns: int
    room: str = ''
    views: tuple[PlaceViewImage, ...] = ()


@dataclass(frozen=True)
class StoredPlace:
    """A place as memory holds it."""

    name: str
    room: str
    pose: Pose
    map_epoch: int
    stamp_ns: int
    session: str
    view_refs: tuple[str, ...]
    view_yaws: tuple[float, ...]

    @property
    def entry_id(self) -> str:
        return place_entry_id(self.name)


def normalise_name(name: str) -> str:
    """The name as shown: runs of white space become one space, ends trimmed."""
    return ' '.join(name.split())


def name_key(name: str) -> str:
    """What two names must share to be the same place: case and spacing do not count."""
    return normalise_name(name).casefold()


def place_entry_id(name: str) -> str:
    return f'place/{name_key(name)}'


def check_name(name: str) -> str:
    """The normalised name; ValueError when it is empty, too long, holds a slash or a
    character that does not print."""
    shown = normalise_name(name)
    if not 1 <= len(shown) <= NAME_MAX_CHARS:
        raise ValueError(f'place name must have 1-{NAME_MAX_CHARS} characters, got {name!r}')
    if '/' in shown or not shown.isprintable():
        raise ValueError(f'place name {name!r} must be printable and hold no "/"')
    return shown


def check_room(room: str) -> str:
    shown = normalise_name(room)
    if len(shown) > ROOM_MAX_CHARS or not shown.isprintable():
        raise ValueError(f'room label must be up to {ROOM_MAX_CHARS} printable characters')
    return shown


def place_text(name: str, room: str) -> str:
    return f'{name}\n{room}'


def name_and_room(record: FrameRecord) -> tuple[str, str]:
    """The name and room label a place row's text holds."""
    name, _, room = record.text.partition('\n')
    return name, room


def is_place_session(session: str) -> bool:
    return session.startswith(SESSION_PREFIX) and session[len(SESSION_PREFIX) :].isdigit()


def distinct_places(hits: Sequence[Hit]) -> list[Hit]:
    """The first (best) hit of each place, in the order given."""
    seen: set[str] = set()
    kept = []
    for hit in hits:
        if hit.record.session not in seen:
            seen.add(hit.record.session)
            kept.append(hit)
    return kept


class PlaceBook:
    """Stores, replaces and removes places in the store's place level.

    Shares the memory service's write lock, so a place and a keyframe are never written at
    once. Bounded by `max_places`: a new name beyond it is refused, a replacement is not.
    """

    def __init__(
        self,
        store: MemoryStore,
        image_store: ImageStore,
        views: Mapping[str, View],
        write_lock: threading.RLock,
        image_limits: ImageLimits,
        max_places: int = DEFAULT_MAX_PLACES,
    ) -> None:
        if max_places < 1 or max_places * ROWS_PER_PLACE > store.max_k:
            raise ValueError(
                f'max_places must be in [1, {store.max_k // ROWS_PER_PLACE}], got {max_places}'
            )
        self.store = store
        self.image_store = image_store
        self.max_places = max_places
        self.image_limits = image_limits
        names = [name for name in store.views(PLACE) if name in views]
        self._text_views = [views[name] for name in names if not views[name].image_queries]
        self._image_views = [views[name] for name in names if views[name].image_queries]
        self._write_lock = write_lock

    def put(self, place: PlaceInput) -> tuple[StoredPlace, int]:
        """Store a place, replacing every place of the same name; returns it as stored and
        how many were replaced. ValueError on bad input, with nothing changed."""
        name, room = check_name(place.name), check_room(place.room)
        if len(place.views) > MAX_VIEWS:
            raise ValueError(f'a place has at most {MAX_VIEWS} views, got {len(place.views)}')
        if not all(math.isfinite(view.yaw) for view in place.views):
            raise ValueError('view yaws must be finite')
        if place.map_epoch < 0 or place.stamp_ns < 0:
            raise ValueError('map epoch and stamp must not be negative')
        label = name if not room or name_key(room) == name_key(name) else f'{name}, {room}'
        base_vectors = {view.name: view.embed_text(label) for view in self._text_views}
        view_vectors = []
        for number, view in enumerate(place.views, start=1):
            try:
                image = decode_image(view.image, self.image_limits)
            except ValueError as error:
                raise ValueError(f'place {name!r} view {number}: {error}') from error
            view_vectors.append({v.name: v.embed_image(image) for v in self._image_views})
        with self._write_lock:
            same = self._sessions_named(name)
            if len(self._sessions()) - len(same) >= self.max_places:
                raise ValueError(
                    f'memory holds {self.max_places} places (max_places); remove one first'
                )
            session = f'{SESSION_PREFIX}{self._next_slot()}'
            x, y, z = place.pose.position
            rows = [(place.pose.yaw, '', base_vectors)]
            for view, vectors in zip(place.views, view_vectors, strict=True):
                rows.append((view.yaw, self._put_image(view), vectors))
            records = [
                FrameRecord(
                    session=session,
                    index=index,
                    stamp_ns=place.stamp_ns,
                    x=x,
                    y=y,
                    z=z,
                    yaw=yaw,
                    map_epoch=place.map_epoch,
                    pose_valid=True,
                    image_ref=ref,
                    text=place_text(name, room),
                    kind=PLACE,
                )
                for index, (yaw, ref, _) in enumerate(rows)
            ]
            # The new place is written before the old ones go: a failure in between leaves
            # both, and `places` shows the newest.
            try:
                self.store.add_many(records, [vectors for _, _, vectors in rows])
            except BaseException:
                # Nothing was stored: its new pictures must not stay behind unreferenced.
                refs = {ref for _, ref, _ in rows if ref}
                self.image_store.remove(refs - self.store.image_refs())
                raise
            self._delete(same)
            stored = self._read(session)
        return stored, len(same)

    def remove(self, name: str) -> int:
        """Remove every place of that name; returns how many (0 for an unknown name)."""
        check_name(name)
        with self._write_lock:
            same = self._sessions_named(name)
            self._delete(same)
        return len(same)

    def places(self) -> list[StoredPlace]:
        """Every place, by name; of places sharing a name (an interrupted replacement) the
        newest."""
        newest: dict[str, StoredPlace] = {}
        for session in sorted(self._sessions(), key=_slot):
            place = self._read(session)
            if place is not None:
                newest[name_key(place.name)] = place
        return sorted(newest.values(), key=lambda place: name_key(place.name))

    # -- internals -----------------------------------------------------------------------

    def _sessions(self) -> list[str]:
        return [s for s in self.store.sessions(PLACE) if is_place_session(s)]

    def _sessions_named(self, name: str) -> list[str]:
        key = name_key(name)
        found = []
        for session in self._sessions():
            base = self.store.get([_base_id(session)], PLACE)
            if base and name_key(name_and_room(base[0])[0]) == key:
                found.append(session)
        return found

    def _next_slot(self) -> int:
        return 1 + max((_slot(session) for session in self._sessions()), default=-1)

    def _put_image(self, view: PlaceViewImage) -> str:
        try:
            return self.image_store.put(view.image, view.image_format)
        except ImageStoreFullError:
            return ''  # the place keeps its pose and name without this picture

    def _delete(self, sessions: Sequence[str]) -> None:
        refs = set()
        for session in sessions:
            removed = self.store.delete_session(session, (PLACE,))
            refs.update(r.image_ref for r in removed[PLACE] if r.image_ref)
        if refs:
            self.image_store.remove(refs - self.store.image_refs())

    def _read(self, session: str) -> StoredPlace | None:
        rows = [
            hit.record
            for hit in self.store.search_index_range(
                session, 0, MAX_VIEWS, ROWS_PER_PLACE, level=PLACE
            )
        ]
        if not rows or rows[0].index != 0:
            return None
        base, views = rows[0], rows[1:]
        name, room = name_and_room(base)
        return StoredPlace(
            name=name,
            room=room,
            pose=base.pose,
            map_epoch=base.map_epoch,
            stamp_ns=base.stamp_ns,
            session=session,
            view_refs=tuple(view.image_ref for view in views),
            view_yaws=tuple(view.yaw for view in views),
        )


def _base_id(session: str) -> str:
    return f'{session}/v0'


def _slot(session: str) -> int:
    return int(session[len(SESSION_PREFIX) :])
