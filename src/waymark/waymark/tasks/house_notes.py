# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The house notes: four text files that carry what the robot learnt from one run to the
next (index, overview, room notes, navigation skills).

Layout of the notes directory:

    v000007/<note>.md, manifest.json   one whole set of notes, written once
    CURRENT                            the name of the set readers see

A new set is written into a temporary folder, made durable, renamed to its version, and
only then does `CURRENT` switch to it (a file replaced whole). A crash before the switch
leaves the old set current and whole; the half-written folder is removed by the next
write. A few older sets are kept, so a reader that looked at `CURRENT` just before a switch
still finds its set.

Only consolidation writes, through `HouseNotesStore`; a task reads the notes before its
first move through a `HouseNotesReader`, which has no method that writes.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from waymark.durable import fsync_directory

NOTE_NAMES = ('index', 'overview', 'rooms', 'skills')
NOTE_TITLES = {
    'index': 'Index',
    'overview': 'House overview',
    'rooms': 'Room notes',
    'skills': 'Navigation skills',
}
Origin = Literal['llm', 'mechanical']
POINTER_FILE = 'CURRENT'
MANIFEST_FILE = 'manifest.json'
NOTES_FORMAT = 1
_VERSION_DIR = re.compile(r'v(\d{6,})')
_TEMP_PREFIX = '.tmp-'


class NotesFormatError(ValueError):
    """A notes directory whose current set is missing or damaged."""


@dataclass(frozen=True)
class NotesLimits:
    """Caps: each note, and what one read returns of the whole set (the must-read list
    of a task shares a context window with everything else)."""

    max_note_chars: int = 6_000
    max_read_chars: int = 20_000
    keep_versions: int = 3

    def __post_init__(self) -> None:
        if not 100 <= self.max_note_chars <= 1_000_000:
            raise ValueError(f'max_note_chars must be in [100, 1e6]: {self}')
        if not 1 <= self.max_read_chars <= 4_000_000:
            raise ValueError(f'max_read_chars must be in [1, 4e6]: {self}')
        if not 2 <= self.keep_versions <= 100:
            raise ValueError(f'keep_versions must be in [2, 100]: {self}')


@dataclass(frozen=True)
class HouseNotes:
    """The text of the four notes."""

    index: str = ''
    overview: str = ''
    rooms: str = ''
    skills: str = ''

    def text(self, name: str) -> str:
        if name not in NOTE_NAMES:
            raise KeyError(f'no note {name!r}; the notes are {", ".join(NOTE_NAMES)}')
        return getattr(self, name)


@dataclass(frozen=True)
class NotesView:
    """A prefix of the current set, in note order; `truncated` says the reader did not see
    all of it. Version 0 is a house with no notes yet."""

    notes: HouseNotes
    version: int
    origin: str
    written_ns: int
    truncated: bool

    def render(self) -> str:
        """The notes as one text, each under its title, for a task's must-read list."""
        if self.version == 0:
            return ''
        parts = [f'House notes, version {self.version} ({self.origin})']
        for name in NOTE_NAMES:
            if self.notes.text(name):
                parts.append(f'## {NOTE_TITLES[name]}\n{self.notes.text(name)}')
        if self.truncated:
            parts.append('[the notes were cut to the read cap here]')
        return '\n\n'.join(parts)


@dataclass(frozen=True)
class WriteReport:
    """What a write did: the new version and the characters each capped note lost."""

    version: int
    chars_dropped: dict[str, int]

    @property
    def truncated(self) -> tuple[str, ...]:
        return tuple(name for name in NOTE_NAMES if self.chars_dropped.get(name, 0))


class _Manifest(BaseModel):
    model_config = ConfigDict(extra='forbid', frozen=True, strict=True)

    format: Literal[1]
    version: int = Field(ge=1)
    origin: Origin
    written_ns: int = Field(ge=0)
    chars_dropped: dict[str, int]


class HouseNotesReader:
    """Reads the notes that consolidation owns. The directory need not exist yet."""

    def __init__(self, root: str | os.PathLike, limits: NotesLimits | None = None) -> None:
        self.root = Path(root)
        self.limits = limits or NotesLimits()

    def current_version(self) -> int:
        """The version readers see; 0 when no set was ever switched to."""
        try:
            text = (self.root / POINTER_FILE).read_text(encoding='utf-8')[:64].strip()
        except FileNotFoundError:
            return 0
        match = _VERSION_DIR.fullmatch(text)
        if match is None:
            raise NotesFormatError(f'{POINTER_FILE} does not name a notes version: {text!r}')
        return int(match.group(1))

    def read(self, max_chars: int | None = None) -> NotesView:
        """The current set's first `max_chars` characters in note order (the cap shared
        by all four notes), and whether anything was cut."""
        limit = self.limits.max_read_chars if max_chars is None else max_chars
        if not 1 <= limit <= self.limits.max_read_chars:
            raise ValueError(f'max_chars must be in [1, {self.limits.max_read_chars}]')
        version = self.current_version()
        if version == 0:
            return NotesView(HouseNotes(), 0, '', 0, False)
        folder = self.root / _version_name(version)
        manifest = self._manifest(folder)
        texts, left, truncated = {}, limit, False
        for name in NOTE_NAMES:
            text = self._prefix(folder / f'{name}.md', left)
            if len(text) > left:
                text, truncated = text[:left], True
            texts[name] = text
            left -= len(text)
        return NotesView(
            HouseNotes(**texts), version, manifest.origin, manifest.written_ns, truncated
        )

    def _manifest(self, folder: Path) -> _Manifest:
        try:
            raw = (folder / MANIFEST_FILE).read_text(encoding='utf-8')[:4_000]
            manifest = _Manifest.model_validate(json.loads(raw))
        except FileNotFoundError:
            raise NotesFormatError(f'the current notes {folder.name} are missing') from None
        except (ValueError, ValidationError) as error:
            raise NotesFormatError(f'the manifest of {folder.name} is damaged: {error}') from None
        if _version_name(manifest.version) != folder.name:
            raise NotesFormatError(f'{folder.name} holds the manifest of {manifest.version}')
        return manifest

    @staticmethod
    def _prefix(path: Path, limit: int) -> str:
        """At most limit + 1 characters, so a cut can be told from an exact fit."""
        try:
            with open(path, encoding='utf-8', errors='replace') as stream:
                return stream.read(limit + 1)
        except FileNotFoundError:
            raise NotesFormatError(f'{path.parent.name} has no {path.name}') from None


class HouseNotesStore(HouseNotesReader):
    """The notes' only writer (consolidation). One process writes a notes directory at a
    time."""

    def __init__(
        self, root: str | os.PathLike, limits: NotesLimits | None = None, fsync: bool = True
    ) -> None:
        super().__init__(root, limits)
        self.fsync = fsync
        self.root.mkdir(parents=True, exist_ok=True)

    def reader(self) -> HouseNotesReader:
        return HouseNotesReader(self.root, self.limits)

    def write(self, notes: HouseNotes, origin: Origin, now_ns: int | None = None) -> WriteReport:
        """Write `notes` as a new set and switch to it; each note is cut to
        `max_note_chars` (on a line end where one is near) and the cut is reported."""
        current = self.current_version()
        self._prune(current)  # sets a crash kept from being switched to go first
        version = current + 1
        texts, dropped = {}, {}
        for name in NOTE_NAMES:
            texts[name], dropped[name] = cap_note(
                _printable(notes.text(name)), self.limits.max_note_chars
            )
        manifest = _Manifest(
            format=NOTES_FORMAT,
            version=version,
            origin=origin,
            written_ns=time.time_ns() if now_ns is None else now_ns,
            chars_dropped=dropped,
        )
        temporary = self.root / f'{_TEMP_PREFIX}{_version_name(version)}-{secrets.token_hex(4)}'
        temporary.mkdir()
        try:
            for name, text in texts.items():
                self._write_file(temporary / f'{name}.md', text)
            self._write_file(temporary / MANIFEST_FILE, manifest.model_dump_json())
            self._sync_directory(temporary)
            os.rename(temporary, self.root / _version_name(version))
        except BaseException:
            shutil.rmtree(temporary, ignore_errors=True)
            raise
        self._sync_directory(self.root)
        self._switch(version)
        self._prune(version)
        return WriteReport(version, dropped)

    def _switch(self, version: int) -> None:
        """The commit point: `CURRENT` is replaced whole by the new version's name."""
        pointer = self.root / f'{_TEMP_PREFIX}{POINTER_FILE}-{secrets.token_hex(4)}'
        try:
            self._write_file(pointer, _version_name(version) + '\n')
            os.replace(pointer, self.root / POINTER_FILE)
        except BaseException:
            pointer.unlink(missing_ok=True)
            raise
        self._sync_directory(self.root)

    def _prune(self, current: int) -> None:
        """Keep the current set and the newest older ones; remove the rest, sets never
        switched to, and what torn writes left."""
        kept = {v for v in self._versions() if v <= current}
        kept = set(sorted(kept)[-self.limits.keep_versions :])
        for entry in self.root.iterdir():
            match = _VERSION_DIR.fullmatch(entry.name)
            stale = entry.name.startswith(_TEMP_PREFIX) or (
                match is not None and int(match.group(1)) not in kept
            )
            if stale:
                if entry.is_dir():
                    shutil.rmtree(entry, ignore_errors=True)
                else:
                    entry.unlink(missing_ok=True)

    def _versions(self) -> list[int]:
        return [
            int(match.group(1))
            for entry in self.root.iterdir()
            if (match := _VERSION_DIR.fullmatch(entry.name)) and entry.is_dir()
        ]

    def _write_file(self, path: Path, text: str) -> None:
        with open(path, 'x', encoding='utf-8') as stream:
            stream.write(text)
            stream.flush()
            if self.fsync:
                os.fsync(stream.fileno())

    def _sync_directory(self, directory: Path) -> None:
        if self.fsync:
            fsync_directory(directory)


def cap_note(text: str, max_chars: int) -> tuple[str, int]:
    """`text` cut to `max_chars`, at the last line end in the final quarter if there is
    one, so that a cut note does not end mid-statement; and how many characters went."""
    if len(text) <= max_chars:
        return text, 0
    cut = text[:max_chars]
    line_end = cut.rfind('\n')
    if line_end >= max_chars * 3 // 4:
        cut = cut[: line_end + 1]
    return cut, len(text) - len(cut)


def _printable(text: str) -> str:
    """Control and format characters dropped (a newline stays, a tab becomes a space)."""
    return ''.join(
        ' ' if c == '\t' else c
        for c in text
        if c in '\n\t' or not unicodedata.category(c).startswith('C')
    )


def _version_name(version: int) -> str:
    return f'v{version:06d}'
