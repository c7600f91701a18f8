# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Segment captions from a VLM behind any OpenAI-compatible server (vLLM), off the ingest path.

A single caption of a 2x2 grid from a 7B VLM tends to be generic ("a corridor"), so each
segment is captioned three ways (BinTrack): the whole grid as a description, a grid of
centre crops read up close for text and small things, and the whole grid as a list of
nouns. Each caption becomes its own searchable entry.

Captioning is slow (about a second per request) and the server may be away, so a worker
thread does it from a bounded queue: ingest never waits, and a segment not captioned yet
is still found by its other views. Captions are cached on disk by model, prompt and
image, so a restart or a replayed recording never asks for the same caption twice.

The model's answer is untrusted text: it is only normalised, capped and stored, never
interpreted.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
import tempfile
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai

from waymark.llm_client import openai_client

_LOG = logging.getLogger(__name__)

CAPTION_VIEWS = ('caption_full', 'caption_center', 'caption_detail')

# The prompts are part of the cache key: editing one re-captions everything once.
PROMPTS = {
    'caption_full': (
        'The picture is a 2x2 grid of four photos taken a moment apart by the forward '
        'camera of a moving robot. In about 80 words, say concretely what can be seen: '
        'objects, signs, doors and entrances, rooms, notable structures, and what kind of '
        'place this is (for example an office corridor, a car park, a shop front, a lobby). '
        'Name specific things instead of giving general impressions. Use plain sentences, '
        'without lists or headings.'
    ),
    'caption_center': (
        'Each tile of this 2x2 grid is an enlarged crop of the middle of a robot camera '
        'view, four views taken a moment apart. In about 80 words, report what lies '
        'straight ahead in fine detail: copy every legible piece of text exactly (signs, '
        'room or door numbers, brand names, labels on equipment or packaging) and name the '
        'small objects and their colours. If no text is legible, say so in a few words and '
        'describe the objects instead. Use plain sentences, without headings.'
    ),
    'caption_detail': (
        'The picture is a 2x2 grid of four photos taken a moment apart by the forward '
        'camera of a moving robot. List the concrete things visible in it as short '
        'comma-separated noun phrases, grouped by category, one line per category, each '
        'line starting with its category and a colon. Categories: objects, furniture, '
        'equipment, signage, building features, natural features; skip the empty ones. '
        'About 80 words in all. Only list what is visible; no sentences, no guesses.'
    ),
}

# What the worker and the captioner count; all keys exist from the start, so that a
# monitoring thread can copy the counters while the worker thread updates them.
_CAPTIONER_COUNTS = ('requests', 'request_failures', 'cache_hits', 'cache_corrupt')
_WORKER_COUNTS = (
    'jobs_queued',
    'jobs_rejected_full',
    'jobs_rejected_stopped',
    'jobs_done',
    'jobs_failed',
    'jobs_failed_unavailable',
    'backoffs',
    'callback_errors',
    'results_dropped_at_stop',
)


@dataclass(frozen=True)
class CaptionerConfig:
    """Where the VLM is and how to ask it; see `Captioner`."""

    base_url: str
    model: str
    api_key: str = 'EMPTY'
    timeout_s: float = 60.0
    max_tokens: int = 200
    temperature: float = 0.0
    max_retries: int = 2
    views: tuple[str, ...] = CAPTION_VIEWS
    cache_dir: Path | None = None
    max_caption_chars: int = 2000

    def __post_init__(self) -> None:
        unknown = [view for view in self.views if view not in CAPTION_VIEWS]
        if not self.views or unknown:
            raise ValueError(f'caption views must be some of {CAPTION_VIEWS}, got {self.views}')
        if not self.model:
            raise ValueError('a caption model name is required')
        if not self.timeout_s > 0:
            raise ValueError(f'timeout_s must be positive, got {self.timeout_s}')
        if self.max_tokens < 1 or self.max_retries < 0 or self.max_caption_chars < 1:
            raise ValueError(
                'max_tokens and max_caption_chars must be positive and max_retries not '
                f'negative: {self.max_tokens}, {self.max_caption_chars}, {self.max_retries}'
            )


@dataclass(frozen=True)
class CaptionJob:
    """One segment to caption: its entry id and its two JPEG pictures."""

    key: str
    grid_jpeg: bytes
    center_jpeg: bytes


class CaptionError(RuntimeError):
    """No caption: the answer was empty or unusable, or the request was refused."""


class CaptionUnavailableError(CaptionError):
    """No caption because the server is unreachable, timed out or overloaded: worth
    trying again later, after a pause."""


class Captioner:
    """Asks the VLM for each configured view of a segment, through the on-disk cache.

    Not thread-safe: one caller at a time (the CaptionWorker's thread).
    """

    def __init__(self, config: CaptionerConfig, client: Any = None) -> None:
        self.config = config
        self.client = (
            client
            if client is not None
            else openai_client(
                config.base_url, config.api_key, config.timeout_s, config.max_retries
            )
        )
        self.counts: Counter[str] = Counter(dict.fromkeys(_CAPTIONER_COUNTS, 0))
        self.cache_dir = Path(config.cache_dir) if config.cache_dir is not None else None

    def caption(self, job: CaptionJob) -> dict[str, str]:
        """Every configured view's caption of the job (view -> text).

        Raises CaptionError (CaptionUnavailableError when the server is away) if any view
        fails; the views that did succeed are cached, so a retry asks only for the rest.
        """
        captions = {}
        for view in self.config.views:
            image = job.center_jpeg if view == 'caption_center' else job.grid_jpeg
            if not image:
                raise CaptionError(f'{job.key}: no picture for {view}')
            cache_path = self._cache_path(view, image)
            text = self._cached(cache_path)
            if text is None:
                text = self._request(job.key, view, image)
                self._store(cache_path, view, text)
            else:
                self.counts['cache_hits'] += 1
            captions[view] = text
        return captions

    def _request(self, key: str, view: str, image: bytes) -> str:
        url = 'data:image/jpeg;base64,' + base64.b64encode(image).decode('ascii')
        messages = [
            {
                'role': 'user',
                'content': [
                    {'type': 'image_url', 'image_url': {'url': url}},
                    {'type': 'text', 'text': PROMPTS[view]},
                ],
            }
        ]
        self.counts['requests'] += 1
        try:
            response = self.client.chat.completions.create(
                model=self.config.model,
                messages=messages,
                max_tokens=self.config.max_tokens,
                temperature=self.config.temperature,
            )
        except (openai.APIConnectionError, openai.InternalServerError) as error:
            # APIConnectionError includes timeouts; 5xx: the server is up but failing.
            self.counts['request_failures'] += 1
            raise CaptionUnavailableError(f'{key} {view}: {_describe(error)}') from error
        except openai.APIStatusError as error:
            self.counts['request_failures'] += 1
            kind = CaptionUnavailableError if error.status_code == 429 else CaptionError
            raise kind(f'{key} {view}: {_describe(error)}') from error
        except openai.OpenAIError as error:  # e.g. a body that is not a completion
            self.counts['request_failures'] += 1
            raise CaptionError(f'{key} {view}: {_describe(error)}') from error
        text = clean_caption(_answer_text(response), self.config.max_caption_chars)
        if not text:
            self.counts['request_failures'] += 1
            raise CaptionError(f'{key} {view}: the model gave no usable text')
        return text

    # -- cache ---------------------------------------------------------------------------

    def _cache_path(self, view: str, image: bytes) -> Path | None:
        if self.cache_dir is None:
            return None
        name = hashlib.sha256(
            json.dumps(
                [self.config.model, PROMPTS[view], hashlib.sha256(image).hexdigest()]
            ).encode()
        ).hexdigest()
        # Two hex digits of fan-out keep directories small over thousands of segments.
        return self.cache_dir / name[:2] / f'{name}.json'

    def _cached(self, path: Path | None) -> str | None:
        if path is None:
            return None
        try:
            entry = json.loads(path.read_text(encoding='utf-8'))
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            self.counts['cache_corrupt'] += 1
            return None
        text = entry.get('caption') if isinstance(entry, dict) else None
        cleaned = clean_caption(text, self.config.max_caption_chars)
        if not cleaned or entry.get('model') != self.config.model:
            self.counts['cache_corrupt'] += 1
            return None
        return cleaned

    def _store(self, path: Path | None, view: str, text: str) -> None:
        """Write a cache file atomically (temporary file, then rename); a cache that
        cannot be written costs a repeated request later, not the caption."""
        if path is None:
            return
        entry = {'model': self.config.model, 'view': view, 'caption': text}
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=path.parent, suffix='.tmp')
            try:
                with os.fdopen(handle, 'w', encoding='utf-8') as out:
                    json.dump(entry, out, ensure_ascii=False)
                os.replace(temporary, path)
            except BaseException:
                Path(temporary).unlink(missing_ok=True)
                raise
        except OSError as error:
            _LOG.warning('caption cache %s not written: %s', path, error)


def clean_caption(text: object, max_chars: int) -> str:
    """Model output made safe to store: text only, control characters removed, whitespace
    collapsed within lines, blank lines dropped, at most `max_chars`; '' if nothing left."""
    if not isinstance(text, str):
        return ''
    lines = []
    for line in text.splitlines():
        printable = ''.join(c if c.isprintable() else ' ' for c in line)
        line = ' '.join(printable.split())
        if line:
            lines.append(line)
    return '\n'.join(lines)[:max_chars].strip()


def _answer_text(response: Any) -> object:
    """The first choice's message text, or None when the answer has no text."""
    try:
        return response.choices[0].message.content
    except (AttributeError, IndexError, KeyError, TypeError):
        return None


def _describe(error: Exception) -> str:
    """A short account of a client error; its text may quote the server, so it is capped."""
    status = getattr(error, 'status_code', None)
    text = f'{type(error).__name__}' + (f' {status}' if status else '') + f': {error}'
    return text if len(text) <= 300 else text[:297] + '...'


class CaptionWorker:
    """A daemon thread with a bounded queue: ingest never waits for a VLM.

    Jobs are captioned one at a time. A job that fails is reported through `on_error`
    (the caller may submit it again later); when the server is unavailable the worker
    also pauses before the next job, doubling the pause up to `max_backoff_s` while the
    failures last, so a dead server costs a request every few minutes, not a busy loop.
    Callbacks run on the worker thread; an exception in one is logged and counted.
    """

    def __init__(
        self,
        captioner: Captioner,
        on_done: Callable[[str, dict[str, str]], None],
        on_error: Callable[[str, Exception], None],
        queue_size: int = 1000,
        backoff_s: float = 5.0,
        max_backoff_s: float = 300.0,
    ) -> None:
        if queue_size < 1:
            raise ValueError(f'queue_size must be at least 1, got {queue_size}')
        if not 0 < backoff_s <= max_backoff_s:
            raise ValueError(
                f'need 0 < backoff_s <= max_backoff_s, got {backoff_s}, {max_backoff_s}'
            )
        self.captioner = captioner
        self.on_done = on_done
        self.on_error = on_error
        self.queue_size = queue_size
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self._counts: Counter[str] = Counter(dict.fromkeys(_WORKER_COUNTS, 0))
        self._jobs: deque[CaptionJob] = deque()
        self._busy = False
        self._stopping = False
        self._closed = False
        self._pause_s = 0.0  # the current backoff; 0 while the server answers
        self._cond = threading.Condition()
        # Held while a result is delivered, so that stop() can make sure none is
        # delivered after it returns (the caller may close its store then).
        self._deliver = threading.Lock()
        self._thread = threading.Thread(target=self._run, name='caption-worker', daemon=True)
        self._thread.start()

    @property
    def counts(self) -> Counter[str]:
        """A snapshot of the worker's and the captioner's counters."""
        with self._cond:
            merged = Counter(dict(getattr(self.captioner, 'counts', {})))
            merged.update(self._counts)
            return merged

    @property
    def pending(self) -> int:
        """Jobs queued or in progress."""
        with self._cond:
            return len(self._jobs) + int(self._busy)

    def submit(self, job: CaptionJob) -> bool:
        """Queue a job; False (counted) when the queue is full or the worker stopped."""
        with self._cond:
            if self._stopping:
                self._counts['jobs_rejected_stopped'] += 1
                return False
            if len(self._jobs) >= self.queue_size:
                self._counts['jobs_rejected_full'] += 1
                return False
            self._jobs.append(job)
            self._counts['jobs_queued'] += 1
            self._cond.notify_all()  # the worker, not only a caller waiting for idleness
        return True

    def wait_until_idle(self, timeout_s: float) -> int:
        """Wait at most `timeout_s` for the queue to empty and the job in progress to
        finish; returns how many jobs were still pending. A run over a finite recording
        uses it to collect its captions before it stops the worker."""
        with self._cond:
            self._cond.wait_for(
                lambda: self._stopping or not (self._jobs or self._busy), max(0.0, timeout_s)
            )
            return len(self._jobs) + int(self._busy)

    def stop(self, timeout_s: float) -> int:
        """Stop after the job in progress (waiting at most `timeout_s` for it); returns
        how many jobs were left uncaptioned. No callback runs after this returns."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        self._thread.join(max(0.0, timeout_s))
        with self._deliver:
            self._closed = True
        with self._cond:
            left = len(self._jobs) + int(self._busy)
            self._jobs.clear()
        return left

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._jobs and not self._stopping:
                    self._cond.wait()
                if self._stopping:
                    return
                job = self._jobs.popleft()
                self._busy = True
            self._process(job)
            with self._cond:
                self._busy = False
                self._cond.notify_all()
                pause = self._pause_s
                if pause > 0:
                    self._counts['backoffs'] += 1
                    # Woken early by stop(); new submissions do not shorten the pause.
                    deadline = time.monotonic() + pause
                    while not self._stopping and time.monotonic() < deadline:
                        self._cond.wait(deadline - time.monotonic())

    def _process(self, job: CaptionJob) -> None:
        try:
            captions = self.captioner.caption(job)
        except CaptionUnavailableError as error:
            with self._cond:
                self._counts['jobs_failed_unavailable'] += 1
                self._pause_s = min(self.max_backoff_s, max(self.backoff_s, 2 * self._pause_s))
            self._deliver_result(self.on_error, job.key, error)
            return
        except Exception as error:  # a bad answer, or a bug: report it and carry on
            with self._cond:
                self._counts['jobs_failed'] += 1
                if isinstance(error, CaptionError):
                    self._pause_s = 0.0  # the server answered, if unhelpfully
            if not isinstance(error, CaptionError):
                _LOG.exception('captioning %s failed unexpectedly', job.key)
            self._deliver_result(self.on_error, job.key, error)
            return
        with self._cond:
            self._counts['jobs_done'] += 1
            self._pause_s = 0.0
        self._deliver_result(self.on_done, job.key, captions)

    def _deliver_result(self, callback: Callable[[str, Any], None], key: str, value: Any) -> None:
        with self._deliver:
            with self._cond:
                if self._closed:
                    self._counts['results_dropped_at_stop'] += 1
                    return
                self._busy = False  # delivered: no longer left over if stop() comes now
            try:
                callback(key, value)
            except Exception:
                _LOG.exception('caption callback for %s failed', key)
                with self._cond:
                    self._counts['callback_errors'] += 1
