# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Reading a model's reply, which is untrusted text: JSON is searched for and decoded,
never evaluated, and the caller validates its shape."""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError


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


def validation_problems(error: ValidationError, whole: str, limit: int | None = None) -> str:
    """The first `limit` (None: all) problems pydantic found, each as 'field.path: message'
    (`whole` names the value itself), joined by '; ': short enough for a log or a reply."""
    return '; '.join(
        f'{".".join(map(str, issue["loc"])) or whole}: {issue["msg"]}'
        for issue in error.errors()[:limit]
    )
