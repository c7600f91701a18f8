# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Cleaning a handover before the ledger keeps it.

A handover is the session's own prose for the next task. Metric coordinates in it go
stale the moment the map is re-anchored, so they are removed, while the words that carry
the meaning ("north of the sofa", "the second door") stay. The rule, applied in order:

1. Control and format characters are dropped (newlines kept, tabs become spaces).
2. The text is cut to `max_chars` before anything else reads it.
3. Removed: bracketed groups of two or three numbers ("(3.4, -2)", "[1, 2, 0.5]");
   bare comma-separated pairs or triples whose every number is signed or decimal
   ("3.2, -1.5"); axis assignments ("x=1.2", "yaw: -0.3"); and a number with a length or
   angle unit ("1.5 m", "90 degrees", "45°"). Counts and labels ("3 chairs", "room 2")
   stay: they survive a re-anchoring.
4. At most `max_words` words are kept.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

MAX_HANDOVER_WORDS = 120
MAX_HANDOVER_CHARS = 6_000

_NUMBER = r'[-+\u2212]?\d+(?:\.\d+)?'
_MARKED = r'(?:[-+\u2212]\d+(?:\.\d+)?|[-+\u2212]?\d+\.\d+)'  # signed or decimal
_AXES = r'x|y|z|yaw|pitch|roll|theta|heading|pos|pose|position'
_UNITS = (
    r'km|cm|mm|m|metres?|meters?|kilometres?|kilometers?|centimetres?|centimeters?'
    r'|°|deg|degrees?|rad|radians?'
)
_COORDINATES = re.compile(
    '|'.join(
        (
            rf'[(\[{{]\s*{_NUMBER}(?:\s*[,;]\s*{_NUMBER}){{1,2}}\s*[)\]}}]',
            rf'(?<![\w.]){_MARKED}(?:\s*,\s*{_MARKED}){{1,2}}(?![\w.])',
            rf'\b(?:{_AXES})\s*[=:]\s*{_NUMBER}(?:\s*(?:{_UNITS})(?![\w]))?',
            rf'(?<![\w.]){_NUMBER}\s*(?:{_UNITS})(?!\w)',
        )
    ),
    re.IGNORECASE,
)
_SPACES = re.compile(r'[ ]{2,}')
_SPACE_BEFORE_PUNCTUATION = re.compile(r' +([,.;:!?)])')
_WORD = re.compile(r'\S+')


@dataclass(frozen=True)
class SanitizedHandover:
    """A cleaned handover and what cleaning it cost, so the runner can report it."""

    text: str
    removed: tuple[str, ...] = ()
    control_characters: int = 0
    chars_dropped: int = 0
    words_dropped: int = 0

    @property
    def truncated(self) -> bool:
        return self.chars_dropped > 0 or self.words_dropped > 0


def sanitize_handover(
    text: str, max_words: int = MAX_HANDOVER_WORDS, max_chars: int = MAX_HANDOVER_CHARS
) -> SanitizedHandover:
    """The handover under the rule in this module's docstring."""
    if max_words < 1 or max_chars < 1:
        raise ValueError(f'max_words and max_chars must be >= 1, got {max_words}, {max_chars}')
    printable, control = _drop_control(text)
    chars_dropped = max(0, len(printable) - max_chars)
    printable = printable[:max_chars]
    removed = tuple(match.group(0) for match in _COORDINATES.finditer(printable))
    scrubbed = _tidy(_COORDINATES.sub(' ', printable))
    words = list(_WORD.finditer(scrubbed))
    words_dropped = max(0, len(words) - max_words)
    if words_dropped:
        scrubbed = scrubbed[: words[max_words - 1].end()]
    return SanitizedHandover(scrubbed, removed, control, chars_dropped, words_dropped)


def _drop_control(text: str) -> tuple[str, int]:
    kept, dropped = [], 0
    for character in text:
        if character == '\n':
            kept.append(character)
        elif character == '\t':
            kept.append(' ')
        elif unicodedata.category(character) in ('Cc', 'Cf', 'Cs', 'Co'):
            dropped += 1
        else:
            kept.append(character)
    return ''.join(kept), dropped


def _tidy(text: str) -> str:
    lines = (
        _SPACE_BEFORE_PUNCTUATION.sub(r'\1', _SPACES.sub(' ', line)) for line in text.split('\n')
    )
    return '\n'.join(line.strip() for line in lines).strip()
