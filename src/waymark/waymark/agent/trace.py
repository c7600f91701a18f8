# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""One JSON file per question: what the agent asked, what it got, and what it cost.

Traces are how a wrong answer is debugged and how the evaluation counts retrievals,
verifier calls and tokens, so they are written for every question, including those that
ended in a fallback. Pictures are replaced by their size, so a trace stays small. The
directory keeps the newest `max_traces` files; older ones are deleted.
"""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
import threading
from pathlib import Path
from typing import Any

_LOG = logging.getLogger(__name__)
TRACE_ID = re.compile(r'[0-9a-f]{32}')


class TraceWriter:
    def __init__(self, directory: str | os.PathLike, max_traces: int = 1000) -> None:
        if max_traces < 1:
            raise ValueError(f'max_traces must be at least 1, got {max_traces}')
        self.directory = Path(directory)
        self.max_traces = max_traces
        self._lock = threading.Lock()

    def write(self, trace: dict[str, Any]) -> Path | None:
        """Write `trace` as <trace_id>.json; None (and a warning) when the disk refuses:
        a lost trace must not lose the answer."""
        trace_id = str(trace.get('trace_id', ''))
        if not TRACE_ID.fullmatch(trace_id):
            raise ValueError(f'trace_id must be 32 hex digits, got {trace_id!r}')
        path = self.directory / f'{trace_id}.json'
        temporary = None
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(
                'w', dir=self.directory, prefix='.', suffix='.tmp', delete=False
            ) as stream:
                temporary = Path(stream.name)
                json.dump(trace, stream, indent=1, default=_plain)
            os.replace(temporary, path)
        except OSError as error:
            _LOG.warning('could not write trace %s: %s', trace_id, error)
            if temporary is not None:
                temporary.unlink(missing_ok=True)
            return None
        self._prune()
        return path

    def read(self, trace_id: str) -> dict[str, Any]:
        if not TRACE_ID.fullmatch(trace_id):
            raise ValueError(f'not a trace id: {trace_id!r}')
        return json.loads((self.directory / f'{trace_id}.json').read_text())

    def _prune(self) -> None:
        with self._lock:
            try:
                files = sorted(self.directory.glob('*.json'), key=lambda p: p.stat().st_mtime)
            except OSError:
                return
            for old in files[: max(0, len(files) - self.max_traces)]:
                old.unlink(missing_ok=True)


def redact_images(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages with every picture replaced by a note of its size."""
    out = []
    for message in messages:
        content = message.get('content')
        if isinstance(content, list):
            parts = []
            for part in content:
                if part.get('type') == 'image_url':
                    url = part.get('image_url', {}).get('url', '')
                    parts.append({'type': 'image', 'base64_chars': len(url)})
                else:
                    parts.append(part)
            message = {**message, 'content': parts}
        out.append(message)
    return out


def _plain(value: Any) -> Any:
    """JSON for what json cannot write itself (numpy numbers, sets, dataclasses)."""
    if hasattr(value, 'item'):
        return value.item()
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    if hasattr(value, '__dataclass_fields__'):
        return {name: getattr(value, name) for name in value.__dataclass_fields__}
    return str(value)
