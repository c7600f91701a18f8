# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Named places: a name the robot was given at a pose, with the views it took there.

A place keeps three things apart because they fail differently: the pose is an estimate
(valid only in the map epoch it was taken in), each view is an observation, and the name is
a claim someone made. Marking a name again replaces the old place, so a wrong mark is fixed
by marking it again where it belongs.

The book is one JSON file, rewritten whole on each change through a temporary file that is
fsynced and renamed, so a crash leaves the old book or the new one, never a mix. A file
that cannot be read is reported and left alone: the book refuses to start rather than
overwrite what an operator may still recover.
"""

from __future__ import annotations

import difflib
import json
import math
import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from waymark.durable import is_temporary, replace_atomically
from waymark.memory.entries import check_session_name
from waymark.navigation.epochs import MapEpoch
from waymark.tasks.stop_views import heading_bucket

NAME_MAX_CHARS = 64
IMAGE_REF_MAX_CHARS = 256
FILE_VERSION = 1
DEFAULT_MAX_PLACES = 256
DEFAULT_MAX_MARKS = 1024
# In the marking record, where a removed place's marks were (no name is empty).
REMOVED = ''
_SEPARATORS = ('/', '\\')


class PlaceNameError(ValueError):
    """A name (or room label) that cannot name a place."""


class UnknownPlaceError(LookupError):
    """No place has this name; the message names the closest known ones."""

    def __str__(self) -> str:  # LookupError would quote the message like a key
        return str(self.args[0]) if self.args else ''


class PlaceBookFullError(RuntimeError):
    """A new name would take the book past its cap; nothing was changed."""


class PlaceBookCorruptError(ValueError):
    """The book's file exists but cannot be read; it was not touched."""


def clean_name(name: object) -> str:
    """The name as kept (runs of whitespace made one space, ends trimmed); PlaceNameError
    when it cannot name a place: empty, longer than NAME_MAX_CHARS, not printable, or with
    a path separator (names reach file names, topics and prompts)."""
    if not isinstance(name, str):
        raise PlaceNameError(f'a place name must be text, got {type(name).__name__}')
    cleaned = ' '.join(name.split())
    if not cleaned:
        raise PlaceNameError('a place name must not be empty')
    if len(cleaned) > NAME_MAX_CHARS:
        raise PlaceNameError(
            f'place name {cleaned[:20]!r}... has {len(cleaned)} characters, at most '
            f'{NAME_MAX_CHARS} allowed'
        )
    if not cleaned.isprintable():
        raise PlaceNameError(f'place name {cleaned!r} has characters that are not printable')
    if any(separator in cleaned for separator in _SEPARATORS):
        raise PlaceNameError(f'place name {cleaned!r} must not contain "/" or "\\"')
    return cleaned


def name_key(name: object) -> str:
    """What two names are compared by: case and spacing do not make a different place."""
    return clean_name(name).casefold()


def _finite(*values: float) -> bool:
    return all(
        isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in values
    )


@dataclass(frozen=True)
class PlacePose:
    """A planar pose estimate in the map frame (m, rad)."""

    x: float
    y: float
    yaw: float

    def __post_init__(self) -> None:
        if not _finite(self.x, self.y, self.yaw):
            raise ValueError(f'a place pose must be finite, got {self}')


@dataclass(frozen=True)
class PlaceView:
    """One view taken at a place: where its image is kept, the camera's heading and the
    pose estimate when it was taken."""

    image_ref: str
    heading: float
    pose: PlacePose
    stamp_ns: int

    def __post_init__(self) -> None:
        if (
            not isinstance(self.image_ref, str)
            or not 0 < len(self.image_ref) <= IMAGE_REF_MAX_CHARS
        ):
            raise ValueError(
                f'a view needs an image reference of 1-{IMAGE_REF_MAX_CHARS} characters'
            )
        if not _finite(self.heading):
            raise ValueError(f'a view heading must be finite, got {self.heading!r}')
        if not isinstance(self.pose, PlacePose):
            raise TypeError(f'a view pose must be a PlacePose, got {type(self.pose).__name__}')
        if type(self.stamp_ns) is not int or self.stamp_ns < 0:
            raise ValueError(f'a view stamp must be a non-negative integer, got {self.stamp_ns!r}')

    @property
    def bucket(self) -> int:
        return heading_bucket(self.heading)


def bucket_views(views: Iterable[PlaceView]) -> tuple[PlaceView, ...]:
    """At most one view per heading bucket, the latest by stamp (the later given on a tie),
    ordered by bucket."""
    chosen: dict[int, PlaceView] = {}
    for view in views:
        kept = chosen.get(view.bucket)
        if kept is None or view.stamp_ns >= kept.stamp_ns:
            chosen[view.bucket] = view
    return tuple(chosen[bucket] for bucket in sorted(chosen))


@dataclass(frozen=True)
class NamedPlace:
    """A place: the name (claim), the pose estimate in its map epoch and floor, the views
    (observations), its room label and when it was marked. `sequence` orders the marks."""

    name: str
    pose: PlacePose
    floor: int
    epoch: MapEpoch
    stamp_ns: int
    room: str
    views: tuple[PlaceView, ...]
    sequence: int

    @property
    def key(self) -> str:
        return name_key(self.name)

    def to_dict(self) -> dict:
        return {
            'name': self.name,
            'pose': _pose_dict(self.pose),
            'floor': self.floor,
            'epoch': {'session': self.epoch[0], 'map_epoch': self.epoch[1]},
            'stamp_ns': self.stamp_ns,
            'room': self.room,
            'views': [
                {
                    'image_ref': view.image_ref,
                    'heading': view.heading,
                    'pose': _pose_dict(view.pose),
                    'stamp_ns': view.stamp_ns,
                }
                for view in self.views
            ],
            'sequence': self.sequence,
        }

    @classmethod
    def from_dict(cls, data: dict) -> NamedPlace:
        """A place read back from the book; raises on anything malformed."""
        views = tuple(
            PlaceView(v['image_ref'], v['heading'], PlacePose(**v['pose']), v['stamp_ns'])
            for v in data['views']
        )
        if bucket_views(views) != views:
            raise ValueError(f'views of {data["name"]!r} are not one per heading bucket')
        return _make_place(
            data['name'],
            PlacePose(**data['pose']),
            views,
            floor=data['floor'],
            epoch=(data['epoch']['session'], data['epoch']['map_epoch']),
            stamp_ns=data['stamp_ns'],
            room=data['room'],
            sequence=data['sequence'],
        )


def _pose_dict(pose: PlacePose) -> dict:
    return {'x': pose.x, 'y': pose.y, 'yaw': pose.yaw}


def _make_place(
    name: str,
    pose: PlacePose,
    views: Iterable[PlaceView],
    *,
    floor: int,
    epoch: MapEpoch,
    stamp_ns: int,
    room: str | None,
    sequence: int,
) -> NamedPlace:
    if not isinstance(pose, PlacePose):
        raise TypeError(f'pose must be a PlacePose, got {type(pose).__name__}')
    if type(floor) is not int:
        raise ValueError(f'floor must be an integer, got {floor!r}')
    session, map_epoch = epoch
    check_session_name(session)
    if type(map_epoch) is not int or map_epoch < 0:
        raise ValueError(f'map epoch must be a non-negative integer, got {map_epoch!r}')
    if type(stamp_ns) is not int or stamp_ns < 0:
        raise ValueError(f'stamp_ns must be a non-negative integer, got {stamp_ns!r}')
    if type(sequence) is not int or sequence < 0:
        raise ValueError(f'sequence must be a non-negative integer, got {sequence!r}')
    views = list(views)
    if not all(isinstance(view, PlaceView) for view in views):
        raise TypeError('views must be PlaceView instances')
    cleaned = clean_name(name)
    return NamedPlace(
        name=cleaned,
        pose=pose,
        floor=floor,
        epoch=(session, map_epoch),
        stamp_ns=stamp_ns,
        room=cleaned if room is None else clean_name(room),
        views=bucket_views(views),
        sequence=sequence,
    )


class PlaceBook:
    """The robot's named places, kept in one JSON file; safe to share between threads.

    Besides the places it keeps the marking record (the names in the order they were
    marked, the last `max_marks`), which the place graph is built from.
    """

    def __init__(
        self,
        path: str | os.PathLike,
        max_places: int = DEFAULT_MAX_PLACES,
        max_marks: int = DEFAULT_MAX_MARKS,
        fsync: bool = True,
    ) -> None:
        if not 1 <= max_places <= 100_000:
            raise ValueError(f'max_places must be in [1, 100000], got {max_places}')
        if not 1 <= max_marks <= 1_000_000:
            raise ValueError(f'max_marks must be in [1, 1000000], got {max_marks}')
        self.path = Path(path)
        self.max_places = max_places
        self.max_marks = max_marks
        self.fsync = fsync
        self._lock = threading.Lock()
        self._places: dict[str, NamedPlace] = {}
        self._marks: list[str] = []
        self._next_sequence = 0
        self._load()

    # -- reading -------------------------------------------------------------------------

    def get(self, name: str) -> NamedPlace:
        """The place of this name; UnknownPlaceError naming the closest known ones."""
        key = name_key(name)
        with self._lock:
            place = self._places.get(key)
            if place is None:
                raise UnknownPlaceError(self._unknown_message(clean_name(name)))
            return place

    def all(self) -> tuple[NamedPlace, ...]:
        """Every place, in the order they were (last) marked."""
        with self._lock:
            return tuple(sorted(self._places.values(), key=lambda place: place.sequence))

    def marks(self) -> tuple[str, ...]:
        """The marking record: name keys as marked, oldest first. REMOVED stands where a
        removed place's marks were, so the places around them do not become neighbours."""
        with self._lock:
            return tuple(self._marks)

    def __len__(self) -> int:
        with self._lock:
            return len(self._places)

    def __contains__(self, name: object) -> bool:
        try:
            key = name_key(name)
        except PlaceNameError:
            return False
        with self._lock:
            return key in self._places

    # -- writing -------------------------------------------------------------------------

    def mark(
        self,
        name: str,
        pose: PlacePose,
        views: Iterable[PlaceView] = (),
        *,
        floor: int,
        epoch: MapEpoch,
        stamp_ns: int,
        room: str | None = None,
    ) -> NamedPlace:
        """Name the place at `pose`, replacing any place of the same name; the views are
        bucketed by heading (one per bucket, the latest wins). Nothing changes when the
        input is bad, the book is full or the file cannot be written."""
        with self._lock:
            place = _make_place(
                name,
                pose,
                views,
                floor=floor,
                epoch=epoch,
                stamp_ns=stamp_ns,
                room=room,
                sequence=self._next_sequence,
            )
            if place.key not in self._places and len(self._places) >= self.max_places:
                raise PlaceBookFullError(
                    f'cannot mark {place.name!r}: the book holds {len(self._places)} places, '
                    f'its cap; remove a place or re-mark an existing name'
                )
            places = {**self._places, place.key: place}
            marks = [*self._marks, place.key][-self.max_marks :]
            self._commit(places, marks, self._next_sequence + 1)
            return place

    def remove(self, name: str) -> NamedPlace:
        """Forget a place and its marks; UnknownPlaceError when there is none."""
        key = name_key(name)
        with self._lock:
            place = self._places.get(key)
            if place is None:
                raise UnknownPlaceError(self._unknown_message(clean_name(name)))
            places = {k: p for k, p in self._places.items() if k != key}
            marks = [REMOVED if mark == key else mark for mark in self._marks]
            self._commit(places, marks, self._next_sequence)
            return place

    # -- internals -----------------------------------------------------------------------

    def _unknown_message(self, name: str) -> str:
        if not self._places:
            return f'no place named {name!r}: no places are marked yet'
        by_key = {key: place.name for key, place in self._places.items()}
        close = difflib.get_close_matches(name.casefold(), list(by_key), n=3, cutoff=0.6)
        if close:
            names = ', '.join(repr(by_key[key]) for key in close)
            return f'no place named {name!r}; closest known: {names}'
        return f'no place named {name!r}; none of the {len(by_key)} known names is close'

    def _commit(self, places: dict[str, NamedPlace], marks: list[str], sequence: int) -> None:
        """Write the new state to disk, then adopt it: a failed write changes nothing."""
        document = {
            'version': FILE_VERSION,
            'next_sequence': sequence,
            'marks': marks,
            'places': [place.to_dict() for place in places.values()],
        }
        data = json.dumps(document, indent=1, allow_nan=False).encode()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        replace_atomically(self.path, data, self.fsync)
        self._places, self._marks, self._next_sequence = places, marks, sequence

    def _load(self) -> None:
        # A temporary file is a write that never reached its rename: the book is the
        # file it would have replaced.
        for temporary in self.path.parent.glob(f'.{self.path.name}.*'):
            if is_temporary(temporary.name):
                temporary.unlink(missing_ok=True)
        if not self.path.exists():
            return
        try:
            document = json.loads(self.path.read_bytes())
            version = document['version']
            if version != FILE_VERSION:
                raise ValueError(f'version {version!r}, this code reads version {FILE_VERSION}')
            places: dict[str, NamedPlace] = {}
            for entry in document['places']:
                place = NamedPlace.from_dict(entry)
                if place.key in places:
                    raise ValueError(f'the name {place.name!r} is marked twice')
                places[place.key] = place
            marks = [name_key(mark) if mark else REMOVED for mark in document['marks']]
            sequence = document['next_sequence']
            if type(sequence) is not int or any(p.sequence >= sequence for p in places.values()):
                raise ValueError(f'next_sequence {sequence!r} is not after every place')
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
            raise PlaceBookCorruptError(
                f'the place book {self.path} cannot be read ({type(error).__name__}: {error}); '
                'it was left as it is: repair or move it away to start with an empty book'
            ) from error
        self._places = places
        self._marks = [mark if mark in places else REMOVED for mark in marks][-self.max_marks :]
        self._next_sequence = sequence
