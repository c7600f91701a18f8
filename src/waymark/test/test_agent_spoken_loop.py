# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The agent with spoken times: the question's time resolved in its prompt, the time tool
reading words against the session's start, and every time shown in the session's zone."""

from __future__ import annotations

import pytest

from waymark.agent.agent import Agent, AgentConfig, AgentQuestion
from waymark.agent.llm import ChatClient, LLMConfig
from waymark.memory.search_query import Mode
from waymark_testing.agent_memory import (
    NOW,
    PLAZA,
    PLAZA_T0,
    CountingMemory,
    S,
    answer_with_first_hit,
    build_memory,
    image_loader,
    scripted,
    tool_results,
)
from waymark_testing.scripted_llm import ScriptedLLMServer, tool_call

BERLIN = 'Europe/Berlin'  # UTC+2 in June


@pytest.fixture(scope='module')
def memory(tmp_path_factory):
    service = build_memory(tmp_path_factory.mktemp('agent_spoken_memory'))
    yield service
    service.store.close()


def _ask(server, memory, question: str, zone: str = BERLIN):
    chat = ChatClient(LLMConfig(base_url=server.base_url, model='test/llm', max_retries=0))
    config = AgentConfig(time_zone=zone)
    the_agent = Agent(chat, memory, image_loader(memory.memory), config)
    return the_agent.ask(AgentQuestion(question, NOW, sessions=(PLAZA,)))


def test_a_time_after_the_start_is_resolved_in_the_prompt_and_by_the_tool(memory):
    counting = CountingMemory(memory)
    script = scripted(
        tool_call('retrieve_from_time', {'time': 'ten seconds after I started'}),
        answer_with_first_hit(),
    )
    with ScriptedLLMServer(script) as server:
        answer = _ask(server, counting, 'Where was I ten seconds after I started?')
        first, second = server.requests
    prompt = first['messages'][1]['content']
    assert 'Now: 2025-06-15 19:06:40 +02:00 (Europe/Berlin).' in prompt
    assert 'The session started at 2025-06-15 18:06:40 +02:00.' in prompt  # the plaza's
    assert '"ten seconds after i started" is 2025-06-15 18:06:50 +02:00.' in prompt
    [hits] = tool_results(second)
    assert hits.startswith('[plaza/20] 0.0 s after the requested time; seen 2025-06-15 18:06:50')
    # The start is looked up once, for the prompt, and reused by the tool.
    assert counting.calls == [Mode.TIME, Mode.TIME]
    assert answer.time_ns == PLAZA_T0 + 10 * S and answer.retrievals == 2


def test_a_time_before_now_needs_no_start(memory):
    counting = CountingMemory(memory)
    script = scripted(
        tool_call('retrieve_from_time', {'time': 'an hour and 50 seconds ago'}),
        answer_with_first_hit(),
    )
    with ScriptedLLMServer(script) as server:
        _ask(server, counting, 'Where was I an hour and 50 seconds ago?', zone='UTC')
        first, second = server.requests
    assert 'is 2025-06-15 16:05:50 UTC.' in first['messages'][1]['content']
    assert 'session started' not in first['messages'][1]['content']
    assert tool_results(second)[0].startswith('[plaza/0]')
    assert counting.calls == [Mode.TIME]


def test_a_local_clock_time_from_the_model_is_read_in_the_sessions_zone(memory):
    script = scripted(
        tool_call('retrieve_from_time', {'time': '18:06:50'}), answer_with_first_hit()
    )
    with ScriptedLLMServer(script) as server:
        answer = _ask(server, CountingMemory(memory), 'Where was I at 18:06:50?')
    assert answer.time_ns == PLAZA_T0 + 10 * S


def test_a_bad_zone_is_refused_before_any_question():
    with pytest.raises(ValueError, match='IANA'):
        AgentConfig(time_zone='Europe/Atlantis')
