# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The agent's chat client against a scripted OpenAI-compatible server over real HTTP."""

from __future__ import annotations

import base64
import json
import socket
import time

import pytest

from waymark.agent.llm import (
    ChatClient,
    LLMConfig,
    LLMError,
    LLMUnavailableError,
    image_part,
)
from waymark_testing.scripted_llm import (
    ScriptedLLMServer,
    delay,
    http_error,
    malformed_body,
    text,
    tool_call,
    tool_calls,
)

MESSAGES = [{'role': 'user', 'content': 'Where did I leave the red mug?'}]
TOOLS = [
    {
        'type': 'function',
        'function': {
            'name': 'search_text',
            'description': 'Search memory by text.',
            'parameters': {
                'type': 'object',
                'properties': {'query': {'type': 'string'}},
                'required': ['query'],
            },
        },
    }
]


def client(base_url: str, **changes) -> ChatClient:
    settings = {'model': 'test/llm', 'timeout_s': 5.0, 'retry_backoff_s': 0.01, **changes}
    return ChatClient(LLMConfig(base_url=base_url, **settings))


def closed_port_url() -> str:
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        port = probe.getsockname()[1]
    return f'http://127.0.0.1:{port}/v1'


def test_a_tool_call_round_trip():
    with ScriptedLLMServer([tool_call('search_text', {'query': 'red mug'})]) as server:
        chat = client(server.base_url)
        reply = chat.complete(MESSAGES, tools=TOOLS)
    assert reply.finish_reason == 'tool_calls' and reply.content == ''
    [call] = reply.tool_calls
    assert call.name == 'search_text' and call.id
    assert json.loads(call.arguments) == {'query': 'red mug'}
    assert reply.prompt_tokens > 0 and reply.completion_tokens > 0
    assert chat.usage.snapshot() == {
        'calls': 1,
        'cached': 0,
        'failures': 0,
        'prompt_tokens': reply.prompt_tokens,
        'completion_tokens': reply.completion_tokens,
    }


def test_the_request_carries_the_tools_and_the_sampling_settings():
    with ScriptedLLMServer([text('hello'), text('short')]) as server:
        chat = client(server.base_url, max_tokens=123, temperature=0.3, top_p=0.9)
        reply = chat.complete(MESSAGES, tools=TOOLS)
        chat.complete(MESSAGES, max_tokens=7)
        first, second = server.requests
    assert reply.content == 'hello' and reply.finish_reason == 'stop' and not reply.tool_calls
    assert first['model'] == 'test/llm' and first['messages'] == MESSAGES
    assert first['tools'] == TOOLS and first['tool_choice'] == 'auto'
    assert (first['max_tokens'], first['temperature'], first['top_p']) == (123, 0.3, 0.9)
    assert 'tools' not in second and 'tool_choice' not in second
    assert second['max_tokens'] == 7


def test_several_tool_calls_and_malformed_arguments_pass_through_raw():
    script = [tool_calls(('search_text', '{"query": "mug"'), ('search_time', {'t': 1}))]
    with ScriptedLLMServer(script) as server:
        reply = client(server.base_url).complete(MESSAGES, tools=TOOLS)
    assert [(call.name, call.arguments) for call in reply.tool_calls] == [
        ('search_text', '{"query": "mug"'),
        ('search_time', '{"t": 1}'),
    ]
    assert len({call.id for call in reply.tool_calls}) == 2


def test_a_server_error_is_retried_once_then_succeeds():
    with ScriptedLLMServer([http_error(500, '{"error": "busy"}'), text('ok')]) as server:
        chat = client(server.base_url, max_retries=2)
        reply = chat.complete(MESSAGES)
        assert len(server.requests) == 2
    assert reply.content == 'ok'
    usage = chat.usage.snapshot()
    assert usage['calls'] == 2 and usage['failures'] == 1


@pytest.mark.parametrize('status', [500, 503, 429])
def test_a_server_that_keeps_failing_is_unavailable_after_the_retries(status):
    with ScriptedLLMServer(lambda body: http_error(status)) as server:
        chat = client(server.base_url, max_retries=2)
        with pytest.raises(LLMUnavailableError, match=str(status)):
            chat.complete(MESSAGES)
        assert len(server.requests) == 3
    assert chat.usage.snapshot()['failures'] == 3


def test_a_refused_request_is_an_error_and_not_retried():
    error = json.dumps({'error': {'message': 'context too long'}})
    with ScriptedLLMServer([http_error(400, error), text('never')]) as server:
        chat = client(server.base_url, max_retries=2)
        with pytest.raises(LLMError, match='context too long') as raised:
            chat.complete(MESSAGES)
        assert not isinstance(raised.value, LLMUnavailableError)
        assert len(server.requests) == 1 and server.remaining == 1


def test_a_slow_server_times_out_within_the_retry_bound():
    timeout_s, backoff_s = 0.3, 0.05
    with ScriptedLLMServer(lambda body: delay(5.0)) as server:
        chat = client(
            server.base_url, timeout_s=timeout_s, max_retries=1, retry_backoff_s=backoff_s
        )
        started = time.monotonic()
        with pytest.raises(LLMUnavailableError, match='Timeout'):
            chat.complete(MESSAGES)
        elapsed = time.monotonic() - started
        assert len(server.requests) == 2
    assert timeout_s * 2 <= elapsed < 3 * (timeout_s * 2 + backoff_s)


def test_the_deadline_cuts_the_attempts_short():
    with ScriptedLLMServer(lambda body: delay(5.0)) as server:
        chat = client(server.base_url, timeout_s=5.0, max_retries=3, retry_backoff_s=0.2)
        started = time.monotonic()
        with pytest.raises(LLMUnavailableError):
            chat.complete(MESSAGES, deadline=started + 0.4)
        elapsed = time.monotonic() - started
        # One attempt, cut to the deadline; no backoff can fit in what is left after it.
        assert len(server.requests) == 1
    assert 0.35 <= elapsed < 1.2


def test_retries_stop_at_the_deadline():
    with ScriptedLLMServer(lambda body: delay(5.0)) as server:
        chat = client(server.base_url, timeout_s=0.3, max_retries=10, retry_backoff_s=0.05)
        started = time.monotonic()
        with pytest.raises(LLMUnavailableError):
            chat.complete(MESSAGES, deadline=started + 1.0)
        elapsed = time.monotonic() - started
        attempts = len(server.requests)
    # Attempts at about 0, 0.35 and 0.75 s, the last cut to the 0.25 s left; a slow
    # machine may leave no room for the third.
    assert 2 <= attempts <= 3
    assert 0.6 <= elapsed < 1.5


def test_a_spent_deadline_sends_nothing():
    with ScriptedLLMServer([text('never')]) as server:
        chat = client(server.base_url)
        with pytest.raises(LLMUnavailableError, match='deadline'):
            chat.complete(MESSAGES, deadline=time.monotonic() + 0.01)
        assert server.requests == []
    assert chat.usage.snapshot()['calls'] == 0


def test_an_unreachable_server_is_unavailable():
    chat = client(closed_port_url(), max_retries=1)
    started = time.monotonic()
    with pytest.raises(LLMUnavailableError, match='APIConnectionError'):
        chat.complete(MESSAGES)
    assert time.monotonic() - started < 5.0
    assert chat.usage.snapshot()['calls'] == 2


@pytest.mark.parametrize(
    'body',
    [malformed_body(), malformed_body('<html>gateway</html>', 'text/html')],
    ids=['broken-json', 'html'],
)
def test_a_malformed_body_is_an_error_and_not_retried(body):
    with ScriptedLLMServer([body, text('never')]) as server:
        chat = client(server.base_url, max_retries=2)
        with pytest.raises(LLMError) as raised:
            chat.complete(MESSAGES)
        assert not isinstance(raised.value, LLMUnavailableError)
        assert len(server.requests) == 1
    assert chat.usage.snapshot()['failures'] == 1


def test_an_exhausted_script_fails_loudly():
    with (
        ScriptedLLMServer([]) as server,
        pytest.raises(LLMUnavailableError, match='script is used up'),
    ):
        client(server.base_url, max_retries=0).complete(MESSAGES)


def test_image_part_is_a_jpeg_data_url():
    part = image_part(b'\xff\xd8jpeg\xff\xd9')
    prefix, data = part['image_url']['url'].split(',', 1)
    assert part['type'] == 'image_url' and prefix == 'data:image/jpeg;base64'
    assert base64.b64decode(data) == b'\xff\xd8jpeg\xff\xd9'
    with pytest.raises(ValueError):
        image_part(b'')


@pytest.mark.parametrize(
    'changes',
    [
        {'model': ''},
        {'timeout_s': 0},
        {'max_tokens': 0},
        {'max_retries': -1},
        {'top_p': 0},
        {'retry_backoff_s': 10, 'max_backoff_s': 1},
    ],
)
def test_config_validation(changes):
    with pytest.raises(ValueError):
        LLMConfig(**{'base_url': 'http://127.0.0.1:1/v1', 'model': 'm', **changes})
