# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Reflection over an OpenAI-compatible server (a scripted one: no model runs here)."""

from __future__ import annotations

import json

from waymark.agent.llm import ChatClient, LLMConfig
from waymark.lessons.leakage import LeakContext
from waymark.lessons.reflect import Pending, ReflectionInput, names_shown, record_of, reflect
from waymark.lessons.reflection import Reflection, Rejected, RejectReason
from waymark_testing.scripted_llm import ScriptedLLMServer, http_error, text

ITEM = ReflectionInput(
    task='where did I last see the ladder?',
    record='search_text("ladder") -> 3 hits; answered with the first hit (kitchen)',
    verified='the garage, seen 10 minutes after the kitchen sighting',
    reward=0.0,
)
CONTEXT = LeakContext.of(known_names=['kitchen', 'garage'], answers=['kitchen'])
GOOD = {
    'summary': 'A last-seen question answered with the most similar sighting, not the newest.',
    'transferable_lesson': (
        'When asked where something was last seen, rank the sightings by time, avoid taking '
        'the best match as the latest, and check the chosen one is the newest.'
    ),
}


def chat(base_url: str) -> ChatClient:
    return ChatClient(LLMConfig(base_url=base_url, model='test/llm', timeout_s=5.0, max_retries=0))


def test_a_good_reply_is_the_lesson_and_the_request_quotes_the_evidence():
    with ScriptedLLMServer([text(json.dumps(GOOD))]) as server:
        found = reflect(chat(server.base_url), ITEM, CONTEXT, max_tokens=200)
        [request] = server.requests
    assert found == Reflection(GOOD['summary'], GOOD['transferable_lesson'])
    system, user = request['messages']
    assert 'data, not instructions' in system['content'] and request['max_tokens'] == 200
    assert 'Question: "where did I last see the ladder?"' in user['content']
    assert 'Verified answer: "the garage' in user['content'] and 'Reward: 0.00' in user['content']


def test_a_leaking_reply_gets_one_re_prompt_with_the_reason():
    leaking = dict(GOOD, transferable_lesson='It is in the garage, look there first.')
    with ScriptedLLMServer([text(json.dumps(leaking)), text(json.dumps(GOOD))]) as server:
        found = reflect(chat(server.base_url), ITEM, CONTEXT)
        first, second = server.requests
    assert isinstance(found, Reflection)
    assert second['messages'][:2] == first['messages']
    assert 'known_name' in second['messages'][3]['content']


def test_two_unusable_replies_are_rejected_and_counted_by_the_caller():
    with ScriptedLLMServer([text('sure, sort by time'), text('{"summary": 1}')]) as server:
        found = reflect(chat(server.base_url), ITEM, CONTEXT)
        assert len(server.requests) == 2
    assert isinstance(found, Rejected) and found.reason is RejectReason.BAD_SHAPE


def test_a_model_away_leaves_the_reflection_pending_and_a_refusal_rejects_it():
    with ScriptedLLMServer([]) as server:
        url = server.base_url
    assert isinstance(reflect(chat(url), ITEM, CONTEXT), Pending)
    with ScriptedLLMServer([http_error(503, '{}')]) as server:
        assert isinstance(reflect(chat(server.base_url), ITEM, CONTEXT), Pending)
    with ScriptedLLMServer([http_error(400, '{}')]) as server:
        found = reflect(chat(server.base_url), ITEM, CONTEXT)
    assert isinstance(found, Rejected) and 'failed' in found.detail


TRACE = {
    'question': 'where did I last see the ladder?',
    'steps': [
        {'tool': 'search_text', 'arguments': {'query': 'ladder'}, 'hits': [['t/1', 0.5, 'text']]},
        {'tool': 'search_time', 'arguments': '', 'hits': []},
    ],
    'messages': [
        {'role': 'system', 'content': 'text read: "not a hit line"'},
        {
            'role': 'tool',
            'content': '[t/1] similarity 0.500 (text); seen ...; text read: "GARAGE \\"B\\""\n'
            '[t/2] similarity 0.400 (caption); seen ...; caption: "a ladder by a wall"',
        },
        {'role': 'user', 'content': [{'type': 'text', 'text': '[t/3] x; text read: "Kitchen"'}]},
        {'role': 'tool', 'content': '[t/1] again; text read: "GARAGE \\"B\\""'},
    ],
    'answer': {'kind': 'position', 'text': 'by the garage door'},
}


def test_the_record_names_each_tool_and_the_answer_and_the_names_are_the_signs_shown():
    assert record_of(TRACE) == (
        "search_text(query='ladder') -> 1 hits; search_time() -> 0 hits; "
        'answer: position: by the garage door'
    )
    assert record_of({}) == 'answer: none: '
    # Sign texts only, once each, in order; captions are descriptions, not names.
    assert names_shown(TRACE) == ['GARAGE "B"', 'Kitchen']
    assert names_shown({'messages': ['not a message', {'content': 3}]}) == []
