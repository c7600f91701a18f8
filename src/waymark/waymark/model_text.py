# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Reading a model's reply, which is untrusted text: JSON is searched for and decoded,
never evaluated, and the caller validates its shape."""

from __future__ import annotations

import json
from typing import Any


def first_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object anywhere in `text` (models wrap JSON in prose and code fences),
    or None. Callers bound `text`: each '{' is one decode attempt."""
    decoder = json.JSONDecoder()
    start = text.find('{')
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            value = None
        if isinstance(value, dict):
            return value
        start = text.find('{', start + 1)
    return None
