# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""What a question may bring: its length, the sessions it names and the photo with it.

Checked before a question is queued or anything is decoded, so that input from outside
costs nothing beyond its bytes when it is refused (a small PNG can decode to gigabytes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from waymark.memory.entries import is_session_name
from waymark.memory.storage.image_codec import ImageLimits, check_image_limits, decode_image


@dataclass(frozen=True)
class InputLimits:
    question_chars: int
    sessions: int
    photo: ImageLimits

    def problem(self, question: str, sessions: Sequence[str], photo: bytes = b'') -> str:
        """Why a question is refused, in one line; '' when it is within the limits."""
        if len(question) > self.question_chars:
            return (
                f'the question is {len(question)} characters, over the limit of '
                f'{self.question_chars}'
            )
        if not question.strip():
            return 'empty question'
        if len(sessions) > self.sessions:
            return f'{len(sessions)} sessions named, over the limit of {self.sessions}'
        bad = next((name for name in sessions if not is_session_name(name)), None)
        if bad is not None:
            return (
                f'invalid session name {bad[:70]!r}: use 1-64 letters, digits, "_", "." or '
                '"-", starting with a letter or digit'
            )
        if photo:
            try:
                check_image_limits(photo, self.photo)
            except ValueError as error:
                return f'the photo cannot be used: {error}'
        return ''

    def decode_photo(self, photo: bytes) -> np.ndarray:
        """The photo of an admitted question as an RGB array; raises ValueError, saying
        why, when it cannot be used."""
        try:
            return decode_image(photo, self.photo)
        except ValueError as error:
            raise ValueError(f'the photo cannot be used: {error}') from error
