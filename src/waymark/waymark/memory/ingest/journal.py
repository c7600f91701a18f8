# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""A write-ahead journal of keyframes accepted for ingestion but not yet stored.

memory_node writes each keyframe here before queueing it and removes it once it is in
the database, so a killed process, a database that is away, or a shutdown with a full
queue loses nothing that was accepted: the next start ingests what the journal holds
(storing a keyframe twice is harmless, memory keeps one entry per session and stamp).

One file per keyframe, named after its session and stamp: a 4-byte big-endian header
length, a JSON header, the image bytes. Files are written to a temporary name, fsynced and
renamed, so a file is whole or absent. capture_node keeps its outbox in the same format.
"""

from __future__ import annotations

import json
import os
import struct
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from waymark.durable import replace_atomically
from waymark.geometry import Pose
from waymark.memory.entries import CameraModel, DepthSamples, Keyframe, check_session_name

_HEADER = struct.Struct('>I')
_SUFFIX = '.keyframe'


class JournalFullError(OSError):
    """The journal reached its size cap; the keyframe was not journaled."""


@dataclass(frozen=True)
class JournalEntry:
    path: Path
    keyframe: Keyframe


class KeyframeJournal:
    def __init__(self, directory: str | os.PathLike, max_bytes: int, fsync: bool = True) -> None:
        if max_bytes < 1:
            raise ValueError(f'journal max_bytes must be >= 1, got {max_bytes}')
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.max_bytes = max_bytes
        self.fsync = fsync
        self.counts: Counter[str] = Counter()
        for stale in self.directory.glob('.*.tmp'):
            stale.unlink(missing_ok=True)
        self._used = sum(path.stat().st_size for path in self.directory.glob(f'*{_SUFFIX}'))

    @property
    def used_bytes(self) -> int:
        return self._used

    def write(self, keyframe: Keyframe) -> Path:
        """Journal one keyframe; JournalFullError at the cap, OSError on a full disk.

        A keyframe with the session and stamp of a journaled one replaces it."""
        data = _encode(keyframe)
        target = self.path_of(keyframe)
        replaced = target.stat().st_size if target.exists() else 0
        if self._used - replaced + len(data) > self.max_bytes:
            raise JournalFullError(f'keyframe journal full ({self._used} of {self.max_bytes} B)')
        replace_atomically(target, data, fsync=self.fsync)
        self._used += len(data) - replaced
        return target

    def path_of(self, keyframe: Keyframe) -> Path:
        return self.directory / f'{keyframe.session}-{keyframe.stamp_ns:020d}{_SUFFIX}'

    def holds(self, keyframe: Keyframe) -> bool:
        """Whether this very keyframe (same bytes) is journaled: a sender's resend."""
        try:
            return self.path_of(keyframe).read_bytes() == _encode(keyframe)
        except OSError:
            return False

    def paths(self) -> list[Path]:
        """The journaled files, oldest stamp first, without reading them (the journal may
        hold more than should sit in memory at once)."""
        return sorted(self.directory.glob(f'*{_SUFFIX}'), key=_stamp_of)

    def read(self, path: Path) -> Keyframe | None:
        """One journaled keyframe; None when it is gone or unreadable (set aside, counted)."""
        try:
            return _read(path)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError, struct.error):
            self._set_aside(path)
            return None

    def remove(self, path: Path) -> None:
        try:
            size = path.stat().st_size
            path.unlink()
        except FileNotFoundError:
            return
        self._used = max(0, self._used - size)

    def pending(self) -> list[JournalEntry]:
        """What the journal holds, oldest first; unreadable files are set aside, counted."""
        entries = []
        for path in self.paths():
            keyframe = self.read(path)
            if keyframe is not None:
                entries.append(JournalEntry(path, keyframe))
        return sorted(entries, key=lambda entry: entry.keyframe.stamp_ns)

    def _set_aside(self, path: Path) -> None:
        """Kept for inspection under another name, out of the journal's count."""
        self.counts['journal_unreadable'] += 1
        try:
            size = path.stat().st_size
            path.rename(path.with_suffix('.unreadable'))
        except OSError:
            return
        self._used = max(0, self._used - size)


def _stamp_of(path: Path) -> tuple[int, str]:
    """Sort key from the file name (session-stamp); a foreign name sorts first."""
    stamp = path.stem.rpartition('-')[2]
    return (int(stamp) if stamp.isdigit() else -1, path.name)


def _encode(keyframe: Keyframe) -> bytes:
    header = json.dumps(_header(keyframe)).encode('utf-8')
    return _HEADER.pack(len(header)) + header + keyframe.image


def _header(keyframe: Keyframe) -> dict:
    return {
        'session': keyframe.session,
        'index': keyframe.index,
        'stamp_ns': keyframe.stamp_ns,
        'position': list(keyframe.pose.position),
        'orientation': list(keyframe.pose.orientation),
        'pose_valid': keyframe.pose_valid,
        'map_epoch': keyframe.map_epoch,
        'image_format': keyframe.image_format,
        'frame_id': keyframe.frame_id,
        'camera': None if keyframe.camera is None else vars(keyframe.camera),
        'depth': None if keyframe.depth is None else vars(keyframe.depth),
    }


def _read(path: Path) -> Keyframe:
    data = path.read_bytes()
    (length,) = _HEADER.unpack_from(data)
    header = json.loads(data[_HEADER.size : _HEADER.size + length])
    image = data[_HEADER.size + length :]
    if not image:
        raise ValueError(f'{path.name}: no image data')
    position = tuple(float(value) for value in header['position'])
    orientation = tuple(float(value) for value in header['orientation'])
    Pose.checked(position, orientation)  # refuses what a valid keyframe never holds
    # Files written before keyframes carried intrinsics and depth have neither.
    camera, depth = header.get('camera'), header.get('depth')
    return Keyframe(
        session=check_session_name(header['session']),
        index=int(header['index']),
        stamp_ns=int(header['stamp_ns']),
        # Exactly as written: renormalising would change the last bits of the quaternion.
        pose=Pose(position, orientation),
        pose_valid=bool(header['pose_valid']),
        map_epoch=int(header['map_epoch']),
        image=image,
        image_format=str(header['image_format']),
        frame_id=str(header['frame_id']),
        camera=None if camera is None else CameraModel(**camera),
        depth=None
        if depth is None
        else DepthSamples(
            int(depth['columns']), int(depth['rows']), tuple(map(float, depth['metres']))
        ),
    )


def _depth(data: dict) -> DepthSamples:
    return DepthSamples(int(data['columns']), int(data['rows']), tuple(map(float, data['metres'])))
