# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""One chat completion at a time from any OpenAI-compatible server (vLLM), within a deadline.

The agent answers a question against a deadline, so every call here is bounded: each
attempt's timeout is cut to the time left, the openai package's own retries are off so
that `max_retries` is the only bound, and backoff never sleeps past the deadline.

Failures come in two kinds. `LLMUnavailableError` (unreachable, timed out, overloaded,
5xx) says the server is away, so the caller may fall back to answering without it.
Any other `LLMError` says the server answered with something unusable; retrying the
same request would not help.

The reply is parsed defensively and nothing in it is interpreted here: tool call
arguments stay the raw text the model wrote, and parsing them is the agent's job.
"""

from __future__ import annotations

import base64
import dataclasses
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any, Protocol

import openai

from waymark.llm_client import openai_client

_LOG = logging.getLogger(__name__)

# An attempt with less time than this cannot get an answer from a real server.
MIN_ATTEMPT_S = 0.05


@dataclass(frozen=True)
class LLMConfig:
    """Where the model is and how to ask it; see `ChatClient`."""

    base_url: str
    model: str
    api_key: str = 'EMPTY'
    timeout_s: float = 30.0  # per attempt
    max_tokens: int = 400
    temperature: float = 0.0
    top_p: float = 1.0
    max_retries: int = 2  # retries of unavailable errors only
    retry_backoff_s: float = 0.5  # before the first retry, doubling after each
    max_backoff_s: float = 4.0
    accepts_images: bool = False  # whether the model takes image content parts (a VLM)

    def __post_init__(self) -> None:
        if not self.base_url or not self.model:
            raise ValueError('an LLM needs a base_url and a model name')
        if not self.timeout_s > 0:
            raise ValueError(f'timeout_s must be positive, got {self.timeout_s}')
        if self.max_tokens < 1:
            raise ValueError(f'max_tokens must be at least 1, got {self.max_tokens}')
        if not 0.0 <= self.temperature <= 2.0 or not 0.0 < self.top_p <= 1.0:
            raise ValueError(
                f'need 0 <= temperature <= 2 and 0 < top_p <= 1, got {self.temperature}, '
                f'{self.top_p}'
            )
        if self.max_retries < 0:
            raise ValueError(f'max_retries must not be negative, got {self.max_retries}')
        if not 0.0 <= self.retry_backoff_s <= self.max_backoff_s:
            raise ValueError(
                'need 0 <= retry_backoff_s <= max_backoff_s, got '
                f'{self.retry_backoff_s}, {self.max_backoff_s}'
            )


class LLMError(RuntimeError):
    """The server answered with something that cannot be used (4xx, malformed reply)."""


class LLMUnavailableError(LLMError):
    """The server is unreachable, timed out, overloaded or failing, or the deadline left
    no time to ask: worth falling back from."""


@dataclass(frozen=True)
class ToolCallRequest:
    """A tool call as the model made it; `arguments` is its raw JSON text, unparsed."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ChatReply:
    """The first choice of a completion. `latency_s` is what the caller waited, retries
    and backoff included."""

    content: str
    tool_calls: list[ToolCallRequest]
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float


@dataclass
class LLMUsage:
    """Attempts and tokens over a client's life; updated under a lock, read any time."""

    calls: int = 0  # requests sent, retries included
    cached: int = 0  # requests answered from the reply cache, never sent
    failures: int = 0  # requests that gave no usable reply
    prompt_tokens: int = 0
    completion_tokens: int = 0
    _lock: threading.Lock = dataclasses.field(
        default_factory=threading.Lock, repr=False, compare=False
    )

    def add(
        self,
        calls: int = 0,
        failures: int = 0,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        cached: int = 0,
    ) -> None:
        with self._lock:
            self.calls += calls
            self.cached += cached
            self.failures += failures
            self.prompt_tokens += prompt_tokens
            self.completion_tokens += completion_tokens

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return {
                'calls': self.calls,
                'cached': self.cached,
                'failures': self.failures,
                'prompt_tokens': self.prompt_tokens,
                'completion_tokens': self.completion_tokens,
            }


class ReplyStore(Protocol):
    """Replies kept by their exact request (evaluation's `reply_cache.ReplyCache`)."""

    def get(self, request: dict[str, Any]) -> ChatReply | None: ...

    def put(self, request: dict[str, Any], reply: ChatReply) -> bool: ...


class ChatClient:
    """Chat completions with bounded retries and a deadline; safe to share between threads.

    With a `cache` (evaluation only) and temperature 0, a request asked before is answered
    from it and a new reply is kept in it."""

    def __init__(self, config: LLMConfig, client: Any = None, cache: ReplyStore | None = None):
        self.config = config
        self.cache = cache if config.temperature == 0.0 else None
        self.client = (
            client
            if client is not None
            # Retried here, within the deadline, never by the client.
            else openai_client(config.base_url, config.api_key, config.timeout_s, max_retries=0)
        )
        self.usage = LLMUsage()

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        deadline: float | None = None,
        max_tokens: int | None = None,
    ) -> ChatReply:
        """The model's reply to `messages`, offered `tools` if any.

        `deadline` is a `time.monotonic()` instant no attempt may outlast. Raises
        LLMUnavailableError when the server stays away through the retries or the deadline
        leaves no time, and LLMError when its reply cannot be used.
        """
        if max_tokens is not None and max_tokens < 1:
            raise ValueError(f'max_tokens must be at least 1, got {max_tokens}')
        request: dict[str, Any] = {
            'model': self.config.model,
            'messages': messages,
            'max_tokens': max_tokens if max_tokens is not None else self.config.max_tokens,
            'temperature': self.config.temperature,
            'top_p': self.config.top_p,
        }
        if tools:
            request['tools'] = tools
            request['tool_choice'] = 'auto'
        if self.cache is not None:
            kept = self.cache.get(request)
            if kept is not None:
                self.usage.add(cached=1)
                return kept
        reply = self._ask(request, deadline)
        if self.cache is not None:
            self.cache.put(request, reply)
        return reply

    def _ask(self, request: dict[str, Any], deadline: float | None) -> ChatReply:
        """The server's reply, through the bounded retries within the deadline."""
        started = time.monotonic()
        attempt = 0
        while True:
            timeout = self.config.timeout_s
            if deadline is not None:
                left = deadline - time.monotonic()
                if left < MIN_ATTEMPT_S:
                    raise LLMUnavailableError(
                        f'deadline: {max(left, 0.0):.3f} s left, too little to ask the model'
                    )
                timeout = min(timeout, left)
            try:
                return self._attempt(request, timeout, started)
            except LLMUnavailableError as error:
                if attempt >= self.config.max_retries:
                    raise
                pause = min(self.config.retry_backoff_s * 2**attempt, self.config.max_backoff_s)
                if deadline is not None and time.monotonic() + pause > deadline - MIN_ATTEMPT_S:
                    raise  # no time for another attempt after the pause
                _LOG.warning('%s; retrying in %.2f s', error, pause)
                time.sleep(pause)
                attempt += 1

    def _attempt(self, request: dict[str, Any], timeout: float, started: float) -> ChatReply:
        self.usage.add(calls=1)
        try:
            response = self.client.chat.completions.create(**request, timeout=timeout)
            reply = _parse_reply(response, started)
        except openai.APIConnectionError as error:  # timeouts included
            self.usage.add(failures=1)
            raise LLMUnavailableError(_describe(error)) from error
        except openai.APIStatusError as error:
            self.usage.add(failures=1)
            unavailable = error.status_code == 429 or error.status_code >= 500
            kind = LLMUnavailableError if unavailable else LLMError
            raise kind(_describe(error)) from error
        except (openai.OpenAIError, ValueError) as error:  # ValueError: a body that is not JSON
            self.usage.add(failures=1)
            raise LLMError(_describe(error)) from error
        except LLMError:
            self.usage.add(failures=1)
            raise
        self.usage.add(prompt_tokens=reply.prompt_tokens, completion_tokens=reply.completion_tokens)
        return reply


def _parse_reply(response: Any, started: float) -> ChatReply:
    """A ChatReply from a completion whose fields may be missing or of any type (the openai
    package does not validate replies, and returns the text of a non-JSON body)."""
    choices = getattr(response, 'choices', None)
    if not isinstance(choices, list) or not choices:
        raise LLMError(f'the reply has no choices: {_clip(repr(response))}')
    message = getattr(choices[0], 'message', None)
    if message is None:
        raise LLMError('the reply has no message')
    content = getattr(message, 'content', None)
    if content is not None and not isinstance(content, str):
        raise LLMError(f'the reply content is not text: {_clip(repr(content))}')
    calls = []
    for index, call in enumerate(getattr(message, 'tool_calls', None) or []):
        function = getattr(call, 'function', None)
        name = getattr(function, 'name', None)
        arguments = getattr(function, 'arguments', None)
        if not isinstance(name, str) or not name or not isinstance(arguments, str):
            raise LLMError(f'tool call {index} has no name or no text arguments')
        # A missing id is made up: the agent only needs ids that pair calls with results.
        call_id = getattr(call, 'id', None)
        if not isinstance(call_id, str) or not call_id:
            call_id = f'call_{index}'
        calls.append(ToolCallRequest(call_id, name, arguments))
    finish_reason = getattr(choices[0], 'finish_reason', None)
    usage = getattr(response, 'usage', None)
    return ChatReply(
        content=content or '',
        tool_calls=calls,
        finish_reason=finish_reason if isinstance(finish_reason, str) else '',
        prompt_tokens=_count(getattr(usage, 'prompt_tokens', 0)),
        completion_tokens=_count(getattr(usage, 'completion_tokens', 0)),
        latency_s=time.monotonic() - started,
    )


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _clip(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 3] + '...'


def _describe(error: Exception) -> str:
    """A short account of a client error; its text may quote the server, so it is capped."""
    status = getattr(error, 'status_code', None)
    return _clip(f'{type(error).__name__}' + (f' {status}' if status else '') + f': {error}')


def image_part(jpeg: bytes) -> dict[str, Any]:
    """A chat content part carrying a JPEG inline, as a base64 data URL."""
    if not jpeg:
        raise ValueError('an image part needs JPEG bytes')
    url = 'data:image/jpeg;base64,' + base64.b64encode(jpeg).decode('ascii')
    return {'type': 'image_url', 'image_url': {'url': url}}
