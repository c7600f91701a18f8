# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""A write-ahead journal of keyframes accepted for ingestion but not yet stored.

memory_node writes each keyframe here before queueing it and removes it once it is in
the database, so a killed process, a database that is away, or a shutdown with a full
queue loses nothing that was accepted: the next start ingests what the journal holds
(storing a keyframe twice is harmless, memory keeps one entry per session and stamp).

One file per keyframe: a 4-byte big-endian header length, a JSON header, the image bytes.
Files are written to a temporary name, fsynced and renamed, so a file is whole or absent.
"""

from __future__ import annotations

import json
import os
import struct
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from waymark.geometry import Pose
from waymark.memory.entries import Keyframe, check_session_name

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
        """Journal one keyframe; JournalFullError at the cap, OSError on a full disk."""
        header = json.dumps(_header(keyframe)).encode('utf-8')
        data = _HEADER.pack(len(header)) + header + keyframe.image
        if self._used + len(data) > self.max_bytes:
            raise JournalFullError(f'keyframe journal full ({self._used} of {self.max_bytes} B)')
        name = f'{keyframe.session}-{keyframe.stamp_ns:020d}{_SUFFIX}'
        target = self.directory / name
        temporary = self.directory / f'.{name}.tmp'
        try:
            with open(temporary, 'wb') as stream:
                stream.write(data)
                if self.fsync:
                    stream.flush()
                    os.fsync(stream.fileno())
            os.replace(temporary, target)
        except OSError:
            temporary.unlink(missing_ok=True)
            raise
        self._used += len(data)
        return target

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
        for path in sorted(self.directory.glob(f'*{_SUFFIX}')):
            try:
                entries.append(JournalEntry(path, _read(path)))
            except (OSError, ValueError, KeyError, TypeError, struct.error):
                # Kept for inspection under another name, out of the journal's count.
                self.counts['journal_unreadable'] += 1
                size = path.stat().st_size
                path.rename(path.with_suffix('.unreadable'))
                self._used = max(0, self._used - size)
        return sorted(entries, key=lambda entry: entry.keyframe.stamp_ns)


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
    )
