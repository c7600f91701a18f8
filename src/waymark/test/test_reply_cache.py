# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The evaluation's reply cache: a request asked before costs nothing, anything else asks
the model, and the folder stays bounded."""

from __future__ import annotations

import logging

import pytest

from waymark.agent.llm import ChatClient, LLMConfig
from waymark.agent.reply_cache import ReplyCache, file_sha256
from waymark_testing.scripted_llm import ScriptedLLMServer, text, tool_call

MODEL_A = 'a' * 64
MODEL_B = 'b' * 64
MESSAGES = [{'role': 'user', 'content': 'Where is the bakery?'}]
OTHER = [{'role': 'user', 'content': 'Where is the pharmacy?'}]


def client(server, cache: ReplyCache | None, temperature: float = 0.0) -> ChatClient:
    config = LLMConfig(base_url=server.base_url, model='test/llm', temperature=temperature)
    return ChatClient(config, cache=cache)


def test_a_request_asked_before_is_answered_from_the_cache(tmp_path):
    replies = [tool_call('search_text', {'query': 'bakery'}), text('the pharmacy'), text('late')]
    with ScriptedLLMServer(replies) as server:
        first = client(server, ReplyCache(tmp_path, MODEL_A))
        asked = first.complete(MESSAGES)
        # another process, the same folder: nothing is sent again
        again = client(server, ReplyCache(tmp_path, MODEL_A))
        assert again.complete(MESSAGES) == asked
        assert again.usage.snapshot()['calls'] == 0 and again.usage.snapshot()['cached'] == 1
        # another request, and the same request to other weights, are asked
        assert again.complete(OTHER).content == 'the pharmacy'
        assert client(server, ReplyCache(tmp_path, MODEL_B)).complete(MESSAGES).content == 'late'
        assert len(server.requests) == 3
    [call] = asked.tool_calls
    assert call.name == 'search_text'


def test_a_sampled_model_is_never_answered_from_the_cache(tmp_path):
    with ScriptedLLMServer([text('one'), text('two')]) as server:
        chat = client(server, ReplyCache(tmp_path, MODEL_A), temperature=0.7)
        assert [chat.complete(MESSAGES).content for _ in range(2)] == ['one', 'two']
    assert not list(tmp_path.glob('*/*.json'))


def test_a_damaged_entry_is_asked_again(tmp_path):
    cache = ReplyCache(tmp_path, MODEL_A)
    with ScriptedLLMServer([text('first'), text('second')]) as server:
        chat = client(server, cache)
        chat.complete(MESSAGES)
        [stored] = tmp_path.glob('*/*.json')
        stored.write_text('{"content": "cut sh')
        assert chat.complete(MESSAGES).content == 'second'


def test_the_folder_is_bounded_and_says_so_once(tmp_path, caplog):
    cache = ReplyCache(tmp_path, MODEL_A, max_entries=1)
    with ScriptedLLMServer([text('kept'), text('not kept'), text('nor this')]) as server:
        chat = client(server, cache)
        with caplog.at_level(logging.WARNING, logger='waymark.agent.reply_cache'):
            for messages in (MESSAGES, OTHER, [{'role': 'user', 'content': 'third'}]):
                chat.complete(messages)
    assert len(list(tmp_path.glob('*/*.json'))) == 1
    assert len([r for r in caplog.records if 'its limit' in r.message]) == 1


def test_bad_settings_are_refused_and_a_file_hash_is_its_sha256(tmp_path):
    with pytest.raises(ValueError, match='64 lower-case hex'):
        ReplyCache(tmp_path, 'model.gguf')
    with pytest.raises(ValueError, match='max_entries'):
        ReplyCache(tmp_path, MODEL_A, max_entries=0)
    weights = tmp_path / 'model.gguf'
    weights.write_bytes(b'abc')
    expected = 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad'
    assert file_sha256(weights, chunk_bytes=2) == expected
