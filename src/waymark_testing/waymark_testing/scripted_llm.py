# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""A real OpenAI-compatible HTTP server whose answers are scripted, for agent tests.

vLLM cannot run in the tests, so this stands in for it over real HTTP: the client code
under test goes through the openai package, its timeouts and its error mapping exactly
as in production. Replies come from a list of steps consumed in order, or from a policy
called with each request body. A script that runs out answers HTTP 500 saying so, so a
test that under-scripts fails loudly instead of hanging.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any] | str  # a dict is JSON-encoded; a str is sent as it is


@dataclass(frozen=True)
class Reply:
    """A 200 chat completion: text, tool calls, or both."""

    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()


@dataclass(frozen=True)
class HttpError:
    status: int
    body: str = ''


@dataclass(frozen=True)
class Delay:
    seconds: float
    then: Step


@dataclass(frozen=True)
class Malformed:
    """A 200 whose body is not a completion."""

    body: str
    content_type: str


Step = Reply | HttpError | Delay | Malformed
Policy = Callable[[dict[str, Any]], Step]


def text(content: str) -> Reply:
    return Reply(content=content)


def tool_call(name: str, arguments: dict[str, Any] | str, content: str | None = None) -> Reply:
    return Reply(content=content, tool_calls=(ToolCall(name, arguments),))


def tool_calls(*calls: tuple[str, dict[str, Any] | str], content: str | None = None) -> Reply:
    """Several tool calls in one reply, each given as (name, arguments)."""
    return Reply(content=content, tool_calls=tuple(ToolCall(*call) for call in calls))


def http_error(status: int, body: str = '') -> HttpError:
    return HttpError(status, body)


def delay(seconds: float, then: Step | None = None) -> Delay:
    return Delay(seconds, then if then is not None else text('late'))


def malformed_body(
    body: str = '{"choices": [truncated', content_type: str = 'application/json'
) -> Malformed:
    return Malformed(body, content_type)


def _tokens(value: object) -> int:
    """A rough token count (about four characters a token), enough for usage figures."""
    return max(1, len(json.dumps(value)) // 4)


class ScriptedLLMServer:
    """Serves POST /v1/chat/completions from a script and GET /v1/models, on 127.0.0.1."""

    def __init__(self, script: Sequence[Step] | Policy, model: str = 'scripted/model') -> None:
        self.model = model
        self._policy = script if callable(script) else None
        self._steps: deque[Step] = deque() if callable(script) else deque(script)
        self._requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._httpd = ThreadingHTTPServer(('127.0.0.1', 0), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        self._httpd.scripted = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.02,), name='scripted-llm', daemon=True
        )
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f'http://127.0.0.1:{self._httpd.server_address[1]}/v1'

    @property
    def requests(self) -> list[dict[str, Any]]:
        """A copy of the chat request bodies received so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def remaining(self) -> int:
        """Scripted steps not yet used (0 with a policy)."""
        with self._lock:
            return len(self._steps)

    def close(self) -> None:
        self._stop.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5.0)

    def __enter__(self) -> ScriptedLLMServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _next_step(self, body: dict[str, Any]) -> tuple[int, Step | None]:
        """Records the request; returns its number (from 1) and the step that answers it."""
        with self._lock:
            self._requests.append(body)
            number = len(self._requests)
            if self._policy is None:
                return number, self._steps.popleft() if self._steps else None
        return number, self._policy(body)

    def _completion(self, number: int, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        calls = [
            {
                'id': f'call_{number}_{index}',
                'type': 'function',
                'function': {
                    'name': call.name,
                    'arguments': call.arguments
                    if isinstance(call.arguments, str)
                    else json.dumps(call.arguments),
                },
            }
            for index, call in enumerate(reply.tool_calls)
        ]
        prompt_tokens = _tokens(body.get('messages', [])) + _tokens(body.get('tools', []))
        completion_tokens = _tokens([reply.content, calls])
        message = {'role': 'assistant', 'content': reply.content, 'tool_calls': calls or None}
        return {
            'id': f'chatcmpl-{number}',
            'object': 'chat.completion',
            'created': int(time.time()),
            'model': body.get('model', self.model),
            'choices': [
                {
                    'index': 0,
                    'message': message,
                    'finish_reason': 'tool_calls' if calls else 'stop',
                }
            ],
            'usage': {
                'prompt_tokens': prompt_tokens,
                'completion_tokens': completion_tokens,
                'total_tokens': prompt_tokens + completion_tokens,
            },
        }


class _Handler(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def log_message(self, *args: object) -> None:  # keep the test output clean
        pass

    @property
    def _scripted(self) -> ScriptedLLMServer:
        return self.server.scripted  # type: ignore[attr-defined]

    def do_GET(self) -> None:
        if self.path.rstrip('/') != '/v1/models':
            return self._send(404, {'error': {'message': f'no route {self.path}'}})
        model = {'id': self._scripted.model, 'object': 'model', 'created': 0, 'owned_by': 'test'}
        self._send(200, {'object': 'list', 'data': [model]})

    def do_POST(self) -> None:
        data = self.rfile.read(int(self.headers.get('Content-Length', 0)))
        if self.path.rstrip('/') != '/v1/chat/completions':
            return self._send(404, {'error': {'message': f'no route {self.path}'}})
        try:
            body = json.loads(data)
        except ValueError:
            return self._send(400, {'error': {'message': 'the request body is not JSON'}})
        number, step = self._scripted._next_step(body)
        while isinstance(step, Delay):
            # Slept in slices, so that closing the server never waits for a long delay.
            until = time.monotonic() + step.seconds
            while time.monotonic() < until:
                if self._scripted._stop.is_set():
                    self.close_connection = True
                    return
                time.sleep(min(0.01, max(0.0, until - time.monotonic())))
            step = step.then
        if step is None:
            message = f'scripted LLM: the script is used up (request {number})'
            self._send(500, {'error': {'message': message, 'type': 'script_exhausted'}})
        elif isinstance(step, HttpError):
            self._send_raw(step.status, step.body.encode(), 'application/json')
        elif isinstance(step, Malformed):
            self._send_raw(200, step.body.encode(), step.content_type)
        else:
            self._send(200, self._scripted._completion(number, body, step))

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        self._send_raw(status, json.dumps(payload).encode(), 'application/json')

    def _send_raw(self, status: int, data: bytes, content_type: str) -> None:
        try:
            self.send_response(status)
            self.send_header('Content-Type', content_type)
            self.send_header('Content-Length', str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout)
            self.close_connection = True
