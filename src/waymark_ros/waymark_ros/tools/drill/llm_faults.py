# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""A fault injector that stands where the vLLM server would: an OpenAI-compatible endpoint
on 127.0.0.1 whose chat completions fail in one chosen way.

It exists so the drills can show what the reasoner does when its model misbehaves; the
model list (GET /v1/models) always answers, so only the questions meet the fault.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODES = ('hang', 'fail', 'garbage', 'slow')
MODEL = 'drill/faulty'


def completion(content: str | None, calls: list[tuple[str, str]]) -> bytes:
    """A well-formed chat completion carrying `content` and tool calls (name, raw args)."""
    tool_calls = [
        {'id': f'call_{i}', 'type': 'function', 'function': {'name': name, 'arguments': args}}
        for i, (name, args) in enumerate(calls)
    ]
    message = {'role': 'assistant', 'content': content, 'tool_calls': tool_calls or None}
    body = {
        'id': 'chatcmpl-drill',
        'object': 'chat.completion',
        'created': int(time.time()),
        'model': MODEL,
        'choices': [
            {'index': 0, 'message': message, 'finish_reason': 'tool_calls' if calls else 'stop'}
        ],
        'usage': {'prompt_tokens': 1, 'completion_tokens': 1, 'total_tokens': 2},
    }
    return json.dumps(body).encode()


# What a confused or broken server sends back: bodies that are not JSON, JSON that is not a
# completion, and completions whose tool calls name unknown tools or carry bad arguments.
GARBAGE: tuple[tuple[str, bytes], ...] = (
    ('application/json', b'{"choices": [{"message": '),
    ('text/html', b'<html><body>502 Bad Gateway</body></html>'),
    ('application/json', b'{"unexpected": true}'),
    ('application/json', completion(None, [('retrieve_from_text', '{"query": "door", "k":')])),
    ('application/json', completion(None, [('retrieve_from_text', '{"query": 7, "k": -1e9}')])),
    ('application/json', completion(None, [('retrieve_from_position', '{"x": "NaN", "y": []}')])),
    ('application/json', completion(None, [('format_disk', '{}')])),
    ('application/json', completion(None, [('final_answer', '["not", "an", "object"]')])),
)


class FaultyLLM:
    """Serves one fault: `hang` (takes the request, never answers), `fail` (HTTP 500),
    `garbage` (the GARBAGE replies in turn), `slow` (a plain answer after `delay_s`)."""

    def __init__(self, mode: str, delay_s: float = 2.0) -> None:
        if mode not in MODES:
            raise ValueError(f'unknown LLM fault {mode!r}; use one of {", ".join(MODES)}')
        self.mode = mode
        self.delay_s = delay_s
        self.requests = 0
        self._garbage = itertools.cycle(GARBAGE)
        self._lock = threading.Lock()
        self.stopped = threading.Event()
        self._httpd = ThreadingHTTPServer(('127.0.0.1', 0), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        self._httpd.faulty = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.05,), name='faulty-llm', daemon=True
        )
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f'http://127.0.0.1:{self._httpd.server_address[1]}/v1'

    def reply(self) -> tuple[int, str, bytes] | None:
        """(status, content type, body) for the next chat request; None: never answer."""
        with self._lock:
            self.requests += 1
            garbage = next(self._garbage)
        if self.mode == 'hang':
            return None
        if self.mode == 'fail':
            error = {'error': {'message': 'injected failure', 'type': 'server_error'}}
            return 500, 'application/json', json.dumps(error).encode()
        if self.mode == 'garbage':
            return 200, *garbage
        self.stopped.wait(self.delay_s)
        return 200, 'application/json', completion('I could not find it.', [])

    def close(self) -> None:
        self.stopped.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5.0)

    def __enter__(self) -> FaultyLLM:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def log_message(self, *args: object) -> None:  # the drill prints its own table
        pass

    def do_GET(self) -> None:
        models = {'object': 'list', 'data': [{'id': MODEL, 'object': 'model', 'owned_by': 'drill'}]}
        self._send(200, 'application/json', json.dumps(models).encode())

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get('Content-Length', 0)))
        faulty: FaultyLLM = self.server.faulty  # type: ignore[attr-defined]
        reply = faulty.reply()
        if reply is None:
            # Hold the connection open without a byte of answer until the drill ends.
            faulty.stopped.wait()
            self.close_connection = True
            return
        self._send(*reply)

    def _send(self, status: int, content_type: str, data: bytes) -> None:
        try:
            self.send_response(status)
            self.send_header('Content-Type', content_type)
            self.send_header('Content-Length', str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout)
            self.close_connection = True
