# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""A model's replies kept for evaluation reruns.

At temperature 0 one model file gives one request the same reply. Evaluation can then
keep it: a rerun, a resumed run or a row another run already asked costs nothing. The key
is the model file's sha256 with the exact request. The model's name is not part of it,
because a server may serve other weights under the same name. Evaluation only: the robot
never answers from a cache.

One JSON file per reply, written atomically, so runs in parallel processes may share the
folder. The folder is bounded (`max_entries`). Past that, replies are still answered but
no longer kept, and the log says so once. A damaged file counts as absent.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import re
import threading
from pathlib import Path
from typing import Any

from waymark.agent.llm import ChatReply, ToolCallRequest

_LOG = logging.getLogger(__name__)
_SHA256 = re.compile(r'[0-9a-f]{64}')
MAX_ENTRIES = 200_000


def file_sha256(path: Path, chunk_bytes: int = 1 << 20) -> str:
    """The sha256 of a file (a model's weights), read in chunks."""
    digest = hashlib.sha256()
    with path.open('rb') as file:
        while chunk := file.read(chunk_bytes):
            digest.update(chunk)
    return digest.hexdigest()


class ReplyCache:
    """Replies of the model whose file has `model_sha256`, in `directory`."""

    def __init__(self, directory: Path, model_sha256: str, max_entries: int = MAX_ENTRIES):
        if not _SHA256.fullmatch(model_sha256):
            raise ValueError(f'model_sha256 must be 64 lower-case hex digits, got {model_sha256!r}')
        if not 1 <= max_entries <= 10_000_000:
            raise ValueError(f'max_entries must be in [1, 1e7], got {max_entries}')
        self.directory = Path(directory)
        self.model_sha256 = model_sha256
        self.max_entries = max_entries
        self.directory.mkdir(parents=True, exist_ok=True)
        self._entries = sum(1 for _ in self.directory.glob('*/*.json'))
        self._lock = threading.Lock()
        self._full_said = False

    def key(self, request: dict[str, Any]) -> str:
        keyed = {'model_sha256': self.model_sha256, 'request': request}
        text = json.dumps(keyed, sort_keys=True, separators=(',', ':'), ensure_ascii=False)
        return hashlib.sha256(text.encode()).hexdigest()

    def get(self, request: dict[str, Any]) -> ChatReply | None:
        """The kept reply to `request`, or None (never asked, or its file is damaged)."""
        try:
            stored = json.loads(self._path(self.key(request)).read_text())
            calls = [ToolCallRequest(**call) for call in stored.pop('tool_calls')]
            return ChatReply(tool_calls=calls, **stored)
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            return None

    def put(self, request: dict[str, Any], reply: ChatReply) -> bool:
        """Keep `reply` to `request`; False when the folder holds `max_entries` already."""
        path = self._path(self.key(request))
        with self._lock:
            if path.is_file():
                return True
            if self._entries >= self.max_entries:
                if not self._full_said:
                    _LOG.warning(
                        'reply cache %s holds %d replies (its limit): new replies are not kept',
                        self.directory,
                        self.max_entries,
                    )
                    self._full_said = True
                return False
            path.parent.mkdir(exist_ok=True)
            temporary = path.with_suffix(f'.{os.getpid()}.{threading.get_ident()}.tmp')
            temporary.write_text(json.dumps(dataclasses.asdict(reply)))
            os.replace(temporary, path)
            self._entries += 1
        return True

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f'{key}.json'
