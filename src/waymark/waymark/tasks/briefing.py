# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""What a task reads before its first move: the newest ledger lines and the house notes.

Both are the robot's own earlier claims and summaries, possibly stale: the briefing is
evidence for the agent, never an instruction to it, and never a certificate. Reading it
cannot fail a task: an unreadable part is named in the briefing instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from waymark.tasks.house_notes import HouseNotesReader, NotesFormatError
from waymark.tasks.ledger import LedgerReader, index_line, unreadable_line

MAX_RECORDS_CAP = 100
MAX_CHARS_CAP = 20_000


@dataclass(frozen=True)
class BriefingLimits:
    """How much of the past a task is given: the newest `records` ledger lines, and at
    most `max_chars` characters in all (the notes are cut first)."""

    records: int = 10
    max_chars: int = 4_000

    def __post_init__(self) -> None:
        if not 0 <= self.records <= MAX_RECORDS_CAP:
            raise ValueError(f'records must be in [0, {MAX_RECORDS_CAP}], got {self.records}')
        if not 200 <= self.max_chars <= MAX_CHARS_CAP:
            raise ValueError(f'max_chars must be in [200, {MAX_CHARS_CAP}], got {self.max_chars}')


def briefing(ledger: LedgerReader, notes: HouseNotesReader | None, limits: BriefingLimits) -> str:
    """The briefing text, '' when there is no past to tell."""
    parts = []
    if limits.records:
        page = ledger.records(limits.records)
        lines = [index_line(record) for record in page.records]
        lines += [unreadable_line(bad) for bad in page.unreadable]
        if lines:
            heading = 'Earlier tasks, newest first (status from the judge):'
            parts.append('\n'.join([heading, *lines]))
    if notes is not None:
        try:
            text = notes.read().render()
        except (NotesFormatError, OSError) as error:
            text = f'(the house notes could not be read: {error})'
        if text:
            parts.append('House notes (summaries of earlier runs, may be stale):\n' + text)
    text = '\n\n'.join(parts)
    if len(text) <= limits.max_chars:
        return text
    marker = '\n[cut to fit the briefing limit]'
    return text[: limits.max_chars - len(marker)] + marker
