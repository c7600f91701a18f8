# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The agent loop over real HTTP (a scripted OpenAI-compatible server) on a real memory.

Each test scripts what the model says and checks what the agent sent it, what it did
with the replies, and what it answered: the happy path, the budget, every kind of bad
reply, an unreachable or slow server, cancellation, step events, traces and pictures.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import re
import socket
import time

import pytest

from waymark.agent import prompts
from waymark.agent.agent import (
    PREFETCH,
    Agent,
    AgentConfig,
    AgentQuestion,
    Goal,
    StepEvent,
)
from waymark.agent.evidence import NS_PER_S
from waymark.agent.llm import ChatClient, LLMConfig
from waymark.agent.memory_api import MemoryUnavailableError
from waymark.agent.trace import TraceWriter
from waymark.memory.entries import Hit
from waymark.memory.search_query import Mode, SearchQuery
from waymark_testing.agent_memory import (
    NOW,
    ROUTE_EPOCH,
    T0,
    CountingMemory,
    answer_with_first_hit,
    build_memory,
    image_loader,
    scripted,
    shown_hits,
    tool_results,
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

SEARCH_TOOLS = [
    'retrieve_from_text',
    'retrieve_from_time',
    'retrieve_from_position',
    'retrieve_in_range',
    'search_between',
    'final_answer',
]
BAKERY = 'route/37'  # the only frame showing the bakery, at x=18.5 y=0
WHERE_BAKERY = 'Where is the bakery?'


@pytest.fixture(scope='module')
def memory(tmp_path_factory):
    service = build_memory(tmp_path_factory.mktemp('agent_loop_memory'))
    yield service
    service.store.close()


class AwayMemory:
    """A memory backend whose database is away."""

    def __getattr__(self, name):
        def away(*args, **kwargs):
            raise MemoryUnavailableError('database away')

        return away


def chat(base_url: str, **changes) -> ChatClient:
    settings = {
        'model': 'test/llm',
        'timeout_s': 5.0,
        'max_retries': 0,
        'retry_backoff_s': 0.01,
        **changes,
    }
    return ChatClient(LLMConfig(base_url=base_url, **settings))


def agent(server, memory, config=None, traces=None, **llm) -> Agent:
    client = chat(server.base_url, **llm) if server is not None else None
    return Agent(client, memory, image_loader(memory), config or AgentConfig(), traces=traces)


def ask(an_agent: Agent, question: str = WHERE_BAKERY, **kwargs):
    events: list[StepEvent] = []
    options = {key: kwargs.pop(key) for key in ('cancelled',) if key in kwargs}
    answer = an_agent.ask(AgentQuestion(question, NOW, **kwargs), events.append, **options)
    return answer, events


def record(memory, entry_id: str):
    [found] = memory.store.get([entry_id])
    return found


def goal_of(memory, entry_id: str) -> Goal:
    r = record(memory, entry_id)
    return Goal(r.x, r.y, r.z, r.yaw, r.map_epoch, r.session)


def closed_port_url() -> str:
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        port = probe.getsockname()[1]
    return f'http://127.0.0.1:{port}/v1'


def server_tokens(body: dict) -> int:
    """The prompt tokens the scripted server bills for a request (its own rule)."""
    return max(1, len(json.dumps(body.get('messages', []))) // 4) + max(
        1, len(json.dumps(body.get('tools', []))) // 4
    )


def offered(body: dict) -> list[str]:
    return [spec['function']['name'] for spec in body.get('tools', [])]


def search(query: str):
    return tool_call('retrieve_from_text', {'query': query})


def final(**fields):
    return tool_call('final_answer', {'kind': 'position', 'text': 'There.', **fields})


# -- the happy path ------------------------------------------------------------------------


def test_a_search_then_an_answer_citing_its_hit_gives_that_memorys_pose(memory):
    with ScriptedLLMServer(scripted(search('bakery'), answer_with_first_hit())) as server:
        the_agent = agent(server, memory)
        answer, _ = ask(the_agent)
        requests = server.requests
    stored = record(memory, BAKERY)
    assert answer.kind == 'position' and not answer.used_fallback and not answer.cancelled
    assert answer.goal == goal_of(memory, BAKERY)
    assert answer.goal.map_epoch == ROUTE_EPOCH and answer.goal.session == stored.session != ''
    assert (answer.goal.x, answer.goal.y) == (18.5, 0.0) and answer.goal.map_epoch == 2
    assert [hit.record.id for hit in answer.evidence] == [BAKERY]
    assert answer.text == 'Found it.' and answer.confidence == 0.9
    assert answer.time_ns == stored.stamp_ns == T0 + 37 * NS_PER_S // 2
    assert (answer.steps, answer.llm_calls, answer.retrievals, answer.verifier_calls) == (
        2,
        2,
        1,
        0,
    )
    # Tokens are the sums of what the server billed.
    assert answer.prompt_tokens == sum(server_tokens(body) for body in requests)
    usage = the_agent.chat.usage.snapshot()
    assert answer.prompt_tokens == usage['prompt_tokens']
    assert answer.completion_tokens == usage['completion_tokens'] > 0
    assert re.fullmatch(r'[0-9a-f]{32}', answer.trace_id) and answer.latency_s > 0


def test_the_requests_carry_the_question_the_time_the_tools_and_the_hits(memory):
    script = scripted(search('bakery'), answer_with_first_hit())
    with ScriptedLLMServer(script) as server:
        ask(agent(server, memory), robot_pose=(1.0, 2.0, 0.0, 1.5707963))
        first, second = server.requests
    system, user = first['messages']
    assert system['role'] == 'system' and 'at most 4 searches' in system['content']
    assert user['role'] == 'user'
    assert 'Question: Where is the bakery?' in user['content']
    assert 'Now: 2025-06-15 17:06:40 UTC.' in user['content']
    assert 'The robot is at x=1.00 y=2.00 z=0.00 m, heading 90 deg.' in user['content']
    # No photo came with the question, so there is no image search to offer.
    assert offered(first) == SEARCH_TOOLS and first['tool_choice'] == 'auto'
    assert first['model'] == 'test/llm' and first['max_tokens'] == 400
    assert first['temperature'] == 0.0

    assert second['messages'][:2] == first['messages']
    assistant, tool = second['messages'][2:4]
    assert assistant['role'] == 'assistant'
    [sent_call] = assistant['tool_calls']
    assert sent_call['function'] == {
        'name': 'retrieve_from_text',
        'arguments': json.dumps({'query': 'bakery'}),
    }
    assert tool['role'] == 'tool' and tool['tool_call_id'] == sent_call['id']
    lines = tool['content'].splitlines()
    assert len(lines) == 5  # top_k
    assert lines[0] == (
        '[route/37] similarity 1.000 (text); seen 2025-06-15 15:06:58 UTC (1 h 59 min ago); '
        'at x=18.50 y=0.00 z=0.40 m, heading 8 deg (map epoch 2); text read: "BAKERY"'
    )
    for line in lines:
        assert re.match(r'\[(route|plaza)/\d+\] similarity \d\.\d{3} \(text\); seen ', line)
        assert ' ago); at x=' in line and 'map epoch' in line


def test_the_context_grows_by_every_search_result(memory):
    script = scripted(search('bakery'), search('station'), answer_with_first_hit())
    with ScriptedLLMServer(script) as server:
        answer, _ = ask(agent(server, memory, AgentConfig(top_k=5), accepts_images=True))
        requests = server.requests
    assert len(requests) == 3 and answer.retrievals == 2 and not answer.used_fallback
    # R(t+1) = R(t) + hits: each request extends the one before.
    for before, after in itertools.pairwise(requests):
        assert after['messages'][: len(before['messages'])] == before['messages']
    # A reply that only calls tools goes back with empty content, which every server takes.
    calls = [m for m in requests[2]['messages'] if m['role'] == 'assistant']
    assert [m['content'] for m in calls] == ['', ''] and all(m['tool_calls'] for m in calls)
    results = tool_results(requests[2])
    assert len(results) == 2
    hits = [shown_hits(content) for content in results]
    assert [len(found) for found in hits] == [5, 5]  # the 10 hits, with their scores
    assert hits[0][0].id == BAKERY and hits[1][0].id == 'route/58'
    assert all('similarity' in line for content in results for line in content.splitlines())
    # ... and their pictures, each labelled with its hit's id.
    labels = [
        part['text']
        for message in requests[2]['messages']
        if isinstance(message['content'], list)
        for part in message['content']
        if part['type'] == 'text' and part['text'].startswith('[')
    ]
    assert labels == [f'[{hit.id}]' for found in hits for hit in found]
    assert (
        sum(
            part['type'] == 'image_url'
            for message in requests[2]['messages']
            if isinstance(message['content'], list)
            for part in message['content']
        )
        == 10
    )
    assert answer.goal == goal_of(memory, 'route/58')


def test_a_time_search_shows_memories_from_that_time_on_in_recording_order(memory):
    script = scripted(
        tool_call('retrieve_from_time', {'time': '15:06:42'}),
        tool_call('retrieve_from_time', {'time': '2025-06-15T15:06:42.2Z'}),
        tool_call('final_answer', {'kind': 'time', 'text': 'At 15:06:42.', 'time': '15:06:42 UTC'}),
    )
    with ScriptedLLMServer(script) as server:
        answer, _ = ask(agent(server, memory), 'When did I set off?')
        requests = server.requests
    exact, later = (shown_hits(content) for content in tool_results(requests[2]))
    # At the requested time (a frame was stamped exactly then) and after it, never before.
    assert [hit.id for hit in exact] == [f'route/{i}' for i in range(4, 9)]
    assert [hit.id for hit in later] == [f'route/{i}' for i in range(5, 10)]
    lines = tool_results(requests[2])[1].splitlines()
    assert lines[0].startswith('[route/5] 0.3 s after the requested time; seen 2025-06-15 15:06:42')
    assert lines[4].startswith('[route/9] 2.3 s after the requested time')
    assert answer.kind == 'time' and answer.time_ns == T0 + 2 * NS_PER_S
    assert answer.goal is None and not answer.used_fallback


# -- the budget ----------------------------------------------------------------------------


@pytest.mark.parametrize('max_steps', [3, 15])
def test_a_model_that_never_stops_searching_gets_the_budget_then_the_fallback(memory, max_steps):
    counting = CountingMemory(memory)
    with ScriptedLLMServer(lambda body: search('bakery')) as server:
        the_agent = Agent(
            chat(server.base_url), counting, image_loader(memory), AgentConfig(max_steps=max_steps)
        )
        answer, events = ask(the_agent)
        requests = server.requests
    # Exactly max_steps searches ran; then only final_answer was offered, three times.
    assert len(requests) == answer.llm_calls == max_steps + 3
    assert [offered(body) for body in requests[:max_steps]] == [SEARCH_TOOLS] * max_steps
    assert [offered(body) for body in requests[max_steps:]] == [['final_answer']] * 3
    assert [event.hits for event in events] == [5] * max_steps + [0] * 3
    assert prompts.BUDGET_SPENT in [
        m['content'] for m in requests[max_steps]['messages'] if m['role'] == 'user'
    ]
    refusals = tool_results(requests[-1])[max_steps:]
    assert (
        refusals
        == ["Error: there is no tool 'retrieve_from_text' here; use one of: final_answer"] * 2
    )
    # The model's max_steps searches and the fallback's own (embedder-only top-1).
    assert counting.calls == [Mode.TEXT] * (max_steps + 1)
    assert answer.retrievals == max_steps + 1
    assert answer.used_fallback and answer.kind == 'position'
    assert answer.fallback_reason == f'no usable answer within {max_steps} searches'
    assert answer.goal == goal_of(memory, BAKERY)  # what the embedder finds for the question
    assert answer.evidence[0].record.id == BAKERY
    assert answer.llm_calls <= max_steps + 3


# -- the embedder's hits shown first -------------------------------------------------------


def test_prefetched_hits_can_be_cited_at_once_and_spend_no_search(memory):
    config = AgentConfig(max_steps=1, prefetch_hits=3)
    script = scripted(final(evidence_ids=[BAKERY], confidence=0.9))
    with ScriptedLLMServer(script) as server:
        answer, events = ask(agent(server, memory, config))
        [request] = server.requests
    listing = request['messages'][-1]['content']
    assert listing.startswith(prompts.PREFETCHED)
    assert [hit.id for hit in shown_hits(listing)][:1] == [BAKERY]
    assert len(shown_hits(listing)) == 3
    assert offered(request) == SEARCH_TOOLS  # the one search is still there
    assert not answer.used_fallback and answer.goal == goal_of(memory, BAKERY)
    assert answer.retrievals == 1 and answer.llm_calls == 1
    assert [event.tool for event in events] == [PREFETCH, 'final_answer']

    # A model that then gives no answer falls back on the same hits, not searched again.
    counting = CountingMemory(memory)
    with ScriptedLLMServer(lambda body: text('Thinking.')) as server:
        the_agent = Agent(chat(server.base_url), counting, image_loader(memory), config)
        answer, _ = ask(the_agent)
    assert answer.used_fallback and answer.goal == goal_of(memory, BAKERY)
    assert counting.calls == [Mode.TEXT] and answer.retrievals == 1

    # Without them, the same reply answers before anything was searched.
    script = scripted(final(evidence_ids=[BAKERY]), final(evidence_ids=[BAKERY]))
    with ScriptedLLMServer(script) as server:
        answer, _ = ask(agent(server, memory, AgentConfig(max_steps=1)))
    assert answer.used_fallback and 'nothing was searched yet' in answer.fallback_reason


# -- bad replies ---------------------------------------------------------------------------


def test_each_bad_call_gets_an_error_message_and_the_loop_goes_on(memory):
    script = scripted(
        tool_call('retrieve_from_text', '{"query": "bakery"'),
        tool_call('retrieve_everything', {'query': 'bakery'}),
        tool_call('retrieve_from_position', {'x': 'east', 'y': 0}),
        search('bakery'),
        final(evidence_ids=['route/9999'], goal={'x': 18.5, 'y': 0}),
        answer_with_first_hit(),
    )
    with ScriptedLLMServer(script) as server:
        answer, events = ask(agent(server, memory, AgentConfig(max_steps=5)))
        requests = server.requests
    errors = tool_results(requests[-1])
    assert errors[0].startswith('Error: arguments are not valid JSON: ')
    assert errors[1].startswith("Error: there is no tool 'retrieve_everything' here; use one of")
    assert errors[2].startswith(
        'Error: invalid arguments for retrieve_from_position: x: Input should be a valid number'
    )
    assert shown_hits(errors[3])[0].id == BAKERY
    assert errors[4] == prompts.REJECTED_ANSWER.format(why='ids never shown: route/9999')
    assert len(errors) == 5
    assert not answer.used_fallback and answer.goal == goal_of(memory, BAKERY)
    assert answer.llm_calls == 6 and answer.retrievals == 1
    assert [(event.tool, event.hits) for event in events] == [
        ('retrieve_from_text', 0),
        ('retrieve_everything', 0),
        ('retrieve_from_position', 0),
        ('retrieve_from_text', 5),
        ('final_answer', 0),
        ('final_answer', 0),
    ]


def test_steps_spent_on_bad_calls_also_end_the_searches(memory):
    script = scripted(
        tool_call('retrieve_everything', {}),
        text('Hmm.'),
        tool_call('retrieve_from_text', '{"query": '),
        text('Still thinking.'),
        tool_call(
            'final_answer', {'kind': 'text', 'text': 'I could not find it.', 'confidence': 0.1}
        ),
    )
    with ScriptedLLMServer(script) as server:
        answer, _ = ask(agent(server, memory))
        requests = server.requests
    assert [offered(body) for body in requests] == [SEARCH_TOOLS] * 4 + [['final_answer']]
    assert requests[4]['messages'][-1] == {'role': 'user', 'content': prompts.BUDGET_SPENT}
    assert requests[2]['messages'][-1] == {'role': 'user', 'content': prompts.NO_TOOL}
    # A text answer needs no evidence; it is taken as it is.
    assert (answer.kind, answer.text, answer.confidence) == ('text', 'I could not find it.', 0.1)
    assert not answer.used_fallback and answer.goal is None and answer.evidence == []
    assert answer.retrievals == 0 and answer.llm_calls == 5


def test_an_answer_before_any_search_is_sent_back_to_search(memory):
    script = scripted(
        final(kind='yes_no', yes=True, text='Yes, I saw it.'),
        search('bakery'),
        answer_with_first_hit(),
    )
    with ScriptedLLMServer(script) as server:
        answer, events = ask(agent(server, memory))
        requests = server.requests
    assert tool_results(requests[1]) == [
        prompts.REJECTED_ANSWER.format(
            why='nothing was searched yet: search memory before answering'
        )
    ]
    tools = [event.tool for event in events]
    assert tools == ['final_answer', 'retrieve_from_text', 'final_answer']
    assert not answer.used_fallback and answer.goal == goal_of(memory, BAKERY)
    assert answer.retrievals == 1 and answer.llm_calls == 3


def test_a_goal_far_from_the_evidence_is_refused_then_a_second_refusal_falls_back(memory):
    far = {'x': 25.0, 'y': 0.0, 'z': 0.0, 'yaw': 0.0}
    script = scripted(
        search('bakery'),
        final(evidence_ids=[BAKERY], goal=far),
        final(evidence_ids=[BAKERY], goal=far),
        search('never asked'),
    )
    with ScriptedLLMServer(script) as server:
        answer, _ = ask(agent(server, memory))
        requests = server.requests
    assert len(requests) == 3
    why = (
        'the goal is 6.5 m from the nearest memory returned to this question; a goal must '
        'be the pose of one of them'
    )
    assert tool_results(requests[2])[-1] == prompts.REJECTED_ANSWER.format(why=why)
    assert answer.used_fallback and answer.fallback_reason == f'final answer refused twice: {why}'
    assert answer.goal == goal_of(memory, BAKERY) and answer.goal.x != 25.0


def test_a_goal_citing_nothing_and_matching_no_memory_is_refused(memory):
    script = scripted(
        search('bakery'),
        final(goal={'x': 40.0, 'y': 9.0}),
        final(kind='location'),  # unreadable: the second refusal
    )
    with ScriptedLLMServer(script) as server:
        answer, _ = ask(agent(server, memory))
        requests = server.requests
    assert tool_results(requests[2])[-1] == prompts.REJECTED_ANSWER.format(
        why='the goal is 23.3 m from the nearest memory returned to this question; a goal '
        'must be the pose of one of them'
    )
    assert answer.used_fallback and answer.fallback_reason.startswith(
        'final answer refused twice: invalid arguments for final_answer: kind'
    )


def test_a_refused_answer_leaves_nothing_in_a_cancelled_answer(memory):
    # Refused for its goal, after its kind, text and evidence were read.
    far = {'x': 25.0, 'y': 0.0}
    script = scripted(search('bakery'), final(evidence_ids=[BAKERY], goal=far, text='Here.'))
    with ScriptedLLMServer(script) as server:
        events: list[StepEvent] = []
        answer = agent(server, memory).ask(
            AgentQuestion(WHERE_BAKERY, NOW), events.append, lambda: len(events) >= 2
        )
    assert answer.cancelled and answer.llm_calls == 2
    assert (answer.kind, answer.text, answer.evidence, answer.goal) == ('none', '', [], None)


def test_a_time_that_cannot_be_read_costs_a_step_but_no_retrieval(memory):
    script = scripted(
        tool_call('retrieve_from_time', {'time': 'soon'}),
        search('bakery'),
        answer_with_first_hit(),
    )
    counting = CountingMemory(memory)
    with ScriptedLLMServer(script) as server:
        the_agent = Agent(chat(server.base_url), counting, image_loader(memory))
        answer, events = ask(the_agent)
        requests = server.requests
    assert tool_results(requests[1]) == [
        "Error: 'soon' is not a time: use ISO 8601 (2026-11-30T19:04:02), HH:MM:SS, or "
        'words such as "five minutes ago" or "two minutes after I started"'
    ]
    assert [(event.tool, event.hits) for event in events] == [
        ('retrieve_from_time', 0),
        ('retrieve_from_text', 5),
        ('final_answer', 0),
    ]
    assert counting.calls == [Mode.TEXT] and answer.retrievals == 1
    assert not answer.used_fallback and answer.goal == goal_of(memory, BAKERY)


def test_empty_replies_are_asked_again_without_spending_the_searches(memory):
    # One search allowed: two replies that say nothing leave it unspent, a third spends it.
    config = AgentConfig(max_steps=1, free_empty_replies=2)
    script = scripted(text(''), text(''), search('bakery'), answer_with_first_hit())
    with ScriptedLLMServer(script) as server:
        answer, _ = ask(agent(server, memory, config))
        requests = server.requests
    assert [offered(body) for body in requests] == [SEARCH_TOOLS] * 3 + [['final_answer']]
    assert requests[1]['messages'][-1] == {'role': 'user', 'content': prompts.NO_TOOL}
    assert answer.retrievals == 1 and not answer.used_fallback
    assert answer.goal == goal_of(memory, BAKERY)

    script = scripted(text(''), text(''), text(''), answer_with_first_hit())
    with ScriptedLLMServer(script) as server:
        ask(agent(server, memory, config))
        requests = server.requests
    assert [offered(body) for body in requests] == [SEARCH_TOOLS] * 3 + [['final_answer']]
    # and text without a tool call is no empty reply: it spends the search
    script = scripted(text('Thinking.'), answer_with_first_hit())
    with ScriptedLLMServer(script) as server:
        ask(agent(server, memory, config))
        requests = server.requests
    assert [offered(body) for body in requests] == [SEARCH_TOOLS, ['final_answer']]


def test_a_reply_without_a_tool_call_is_nudged_and_extra_calls_are_ignored(memory):
    script = scripted(
        text('Let me think about the bakery.'),
        tool_calls(('retrieve_from_text', {'query': 'bakery'}), ('retrieve_from_text', '{}')),
        answer_with_first_hit(),
    )
    with ScriptedLLMServer(script) as server:
        answer, events = ask(agent(server, memory))
        second, third = server.requests[1:]
    assert second['messages'][-1] == {'role': 'user', 'content': prompts.NO_TOOL}
    ignored, result = [m for m in third['messages'] if m['role'] == 'tool']
    assert ignored['content'] == prompts.ONE_TOOL and ignored['tool_call_id'] == 'call_2_1'
    assert result['tool_call_id'] == 'call_2_0' and shown_hits(result['content'])[0].id == BAKERY
    assert [event.tool for event in events] == ['retrieve_from_text', 'final_answer']
    assert answer.retrievals == 1 and answer.llm_calls == 3 and not answer.used_fallback


# -- the goal ------------------------------------------------------------------------------


def test_a_goal_next_to_a_shown_memory_is_that_memorys_exact_pose(memory):
    close = {'x': 18.6, 'y': 0.1, 'z': 0.0, 'yaw': 0.0}  # 0.14 m from the bakery frame
    with ScriptedLLMServer(
        scripted(search('bakery'), final(evidence_ids=[BAKERY], goal=close))
    ) as server:
        answer, _ = ask(agent(server, memory))
    assert not answer.used_fallback and answer.goal == goal_of(memory, BAKERY)


def test_a_position_answer_without_a_goal_takes_the_first_cited_pose(memory):
    with ScriptedLLMServer(scripted(search('bakery'), final(evidence_ids=[BAKERY]))) as server:
        answer, _ = ask(agent(server, memory))
    assert not answer.used_fallback and answer.goal == goal_of(memory, BAKERY)


# -- the server away -----------------------------------------------------------------------


@pytest.mark.parametrize('retries', [0, 2])
def test_an_unreachable_server_falls_back_to_the_embedder_only_top_hit(memory, retries):
    client = chat(closed_port_url(), max_retries=retries)
    counting = CountingMemory(memory)
    answer = Agent(client, counting, image_loader(memory)).ask(AgentQuestion(WHERE_BAKERY, NOW))
    assert answer.used_fallback and answer.fallback_reason.startswith('LLM unreachable: ')
    assert answer.goal == goal_of(memory, BAKERY) and answer.kind == 'position'
    assert answer.evidence[0].record.id == BAKERY and 0 < answer.confidence <= 1
    assert answer.llm_calls == 0 and counting.calls == [Mode.TEXT]
    assert client.usage.snapshot()['calls'] == 1 + retries


def test_server_errors_fall_back_after_the_retries(memory):
    with ScriptedLLMServer([http_error(500, '{"error": {"message": "boom"}}')] * 3) as server:
        answer, _ = ask(agent(server, memory, max_retries=2))
        assert len(server.requests) == 3 and server.remaining == 0
    assert answer.used_fallback and answer.fallback_reason.startswith('LLM unreachable: ')
    assert '500' in answer.fallback_reason and answer.goal == goal_of(memory, BAKERY)


def test_an_unusable_reply_falls_back(memory):
    with ScriptedLLMServer([malformed_body()]) as server:
        answer, _ = ask(agent(server, memory))
    assert answer.used_fallback and answer.fallback_reason.startswith('LLM reply unusable: ')
    assert answer.goal == goal_of(memory, BAKERY)


def test_a_server_slower_than_the_deadline_cannot_hold_the_answer(memory):
    with ScriptedLLMServer(scripted(delay(30.0, search('bakery')))) as server:
        started = time.monotonic()
        answer, _ = ask(agent(server, memory, AgentConfig(deadline_s=1.0), max_retries=2))
        waited = time.monotonic() - started
    assert waited < 1.0 + 2.0  # the deadline and a generous margin, not the 30 s delay
    assert answer.used_fallback and answer.fallback_reason.startswith('LLM unreachable: ')
    assert answer.goal == goal_of(memory, BAKERY) and answer.llm_calls == 0


class SlowMemory(CountingMemory):
    """The memory, taking `seconds` over its first search."""

    def __init__(self, memory, seconds: float) -> None:
        super().__init__(memory)
        self.seconds = seconds

    def search(self, query: SearchQuery) -> list[Hit]:
        if not self.calls:
            time.sleep(self.seconds)
        return super().search(query)


def test_the_deadline_is_checked_between_steps(memory):
    slow = SlowMemory(memory, seconds=1.2)
    script = scripted(search('bakery'), search('station'))
    with ScriptedLLMServer(script) as server:
        the_agent = Agent(
            chat(server.base_url), slow, image_loader(memory), AgentConfig(deadline_s=1.0)
        )
        answer, events = ask(the_agent)
        assert len(server.requests) == 1  # the second step never started
    assert [event.hits for event in events] == [5] and answer.llm_calls == 1
    assert answer.used_fallback and answer.fallback_reason == 'deadline of 1 s reached'
    assert answer.goal == goal_of(memory, BAKERY) and slow.calls == [Mode.TEXT, Mode.TEXT]


def test_without_an_llm_the_answer_is_the_fallback(memory):
    answer, events = ask(agent(None, memory))
    assert answer.used_fallback and answer.fallback_reason == 'no LLM configured'
    assert answer.goal == goal_of(memory, BAKERY) and answer.llm_calls == 0 and events == []
    assert 'x=18.50, y=0.00' in answer.text and '"BAKERY"' in answer.text


def test_unavailable_memory_gives_no_answer_and_says_why(memory):
    with ScriptedLLMServer(scripted(search('bakery'))) as server:
        answer = Agent(chat(server.base_url), AwayMemory(), image_loader(memory)).ask(
            AgentQuestion(WHERE_BAKERY, NOW)
        )
    assert answer.kind == 'none' and answer.goal is None and not answer.used_fallback
    assert answer.fallback_reason == 'memory unavailable: database away'
    assert answer.text == answer.fallback_reason and answer.llm_calls == 1
    offline = Agent(None, AwayMemory(), image_loader(memory)).ask(AgentQuestion('x?', NOW))
    assert offline.kind == 'none' and offline.fallback_reason == 'memory unavailable: database away'


# -- cancellation and step events ----------------------------------------------------------


def test_cancelling_after_the_first_step_stops_the_loop(memory):
    script = scripted(search('bakery'), search('station'), answer_with_first_hit())
    with ScriptedLLMServer(script) as server:
        events: list[StepEvent] = []
        answer = agent(server, memory).ask(
            AgentQuestion(WHERE_BAKERY, NOW), events.append, lambda: len(events) >= 1
        )
        assert len(server.requests) == 1
    assert answer.cancelled and answer.fallback_reason == 'cancelled'
    assert not answer.used_fallback and answer.kind == 'none' and answer.goal is None
    assert answer.llm_calls == 1 and answer.steps == 1 and len(events) == 1


def test_one_step_event_per_tool_call(memory):
    script = scripted(
        search('bakery'),
        tool_call('retrieve_from_position', {'x': 18.5, 'y': 0.0}),
        answer_with_first_hit(),
    )
    with ScriptedLLMServer(script) as server:
        answer, events = ask(agent(server, memory, AgentConfig(top_k=4)))
    assert [event.step for event in events] == [1, 2, 3] and answer.steps == 3
    assert [event.tool for event in events] == [
        'retrieve_from_text',
        'retrieve_from_position',
        'final_answer',
    ]
    assert json.loads(events[0].arguments) == {'query': 'bakery'}
    assert json.loads(events[1].arguments) == {'x': 18.5, 'y': 0.0}
    assert [event.hits for event in events] == [4, 4, 0]
    elapsed = [event.elapsed_s for event in events]
    assert 0 < elapsed[0] < elapsed[1] < elapsed[2] <= answer.latency_s


# -- traces --------------------------------------------------------------------------------


def test_every_question_writes_a_trace_named_by_its_id(memory, tmp_path):
    traces = TraceWriter(tmp_path / 'traces')
    script = scripted(search('bakery'), answer_with_first_hit())
    with ScriptedLLMServer(script) as server:
        answer, _ = ask(agent(server, memory, traces=traces, accepts_images=True))
    path = tmp_path / 'traces' / f'{answer.trace_id}.json'
    raw = path.read_text()
    assert 'data:image' not in raw  # pictures are replaced by their size
    trace = json.loads(raw)
    assert trace == traces.read(answer.trace_id)
    assert trace['trace_id'] == answer.trace_id and trace['question'] == WHERE_BAKERY
    assert trace['model'] == 'test/llm' and trace['now'] == '2025-06-15 17:06:40 UTC'
    assert [step['tool'] for step in trace['steps']] == ['retrieve_from_text', 'final_answer']
    assert trace['steps'][0]['hits'][0][0] == BAKERY and len(trace['steps'][0]['hits']) == 5
    assert json.loads(trace['steps'][0]['arguments']) == {'query': 'bakery'}
    roles = [message['role'] for message in trace['messages']]
    assert roles == ['system', 'user', 'assistant', 'tool', 'user', 'assistant']
    pictures = [part for part in trace['messages'][4]['content'] if part['type'] == 'image']
    assert len(pictures) == 5 and all(part['base64_chars'] > 100 for part in pictures)
    assert trace['answer']['goal'] == {
        'x': 18.5,
        'y': 0.0,
        'z': answer.goal.z,
        'yaw': answer.goal.yaw,
        'map_epoch': 2,
        'session': 'route',
    }
    assert trace['answer']['evidence'] == [BAKERY]
    assert (trace['llm_calls'], trace['retrievals'], trace['verifier_calls']) == (2, 1, 0)
    assert trace['prompt_tokens'] == answer.prompt_tokens > 0
    assert trace['used_fallback'] is False and trace['fallback_reason'] == ''
    assert trace['config']['max_steps'] == 4


def test_a_fallback_is_traced_and_old_traces_are_pruned(memory, tmp_path):
    traces = TraceWriter(tmp_path / 'traces', max_traces=3)
    the_agent = agent(None, memory, traces=traces)
    ids = []
    for number in range(5):
        ids.append(ask(the_agent)[0].trace_id)
        # Spread the files' times apart, so that the order does not rest on how finely
        # this file system stamps them (the next write is newer than all of them).
        stamp = time.time_ns() - (100 - number) * NS_PER_S
        os.utime(tmp_path / 'traces' / f'{ids[-1]}.json', ns=(stamp, stamp))
    kept = sorted(path.stem for path in (tmp_path / 'traces').glob('*.json'))
    assert kept == sorted(ids[-3:])
    trace = traces.read(ids[-1])
    assert trace['used_fallback'] is True and trace['fallback_reason'] == 'no LLM configured'
    assert trace['model'] is None and trace['retrievals'] == 1 and trace['messages'] == []


def test_a_trace_that_cannot_be_written_does_not_lose_the_answer(memory, tmp_path):
    blocked = tmp_path / 'not_a_directory'
    blocked.write_text('a file where the traces should go')
    script = scripted(search('bakery'), answer_with_first_hit())
    with ScriptedLLMServer(script) as server:
        answer, _ = ask(agent(server, memory, traces=TraceWriter(blocked / 'traces')))
    assert answer.goal == goal_of(memory, BAKERY) and not answer.used_fallback
    assert blocked.read_text() == 'a file where the traces should go'


# -- pictures ------------------------------------------------------------------------------


@pytest.mark.parametrize('cap', [2, 5])
def test_a_model_that_takes_images_sees_the_hits_pictures(memory, cap):
    config = AgentConfig(max_images_per_step=cap)
    script = scripted(search('bakery'), answer_with_first_hit())
    with ScriptedLLMServer(script) as server:
        ask(agent(server, memory, config, accepts_images=True))
        second = server.requests[1]
    tool_index = next(i for i, m in enumerate(second['messages']) if m['role'] == 'tool')
    shown = shown_hits(second['messages'][tool_index]['content'])
    pictures = second['messages'][tool_index + 1]
    assert pictures['role'] == 'user'
    parts = pictures['content']
    assert parts[0] == {'type': 'text', 'text': prompts.IMAGES}
    labels = [part['text'] for part in parts[1:] if part['type'] == 'text']
    urls = [part['image_url']['url'] for part in parts if part['type'] == 'image_url']
    assert labels == [f'[{hit.id}]' for hit in shown[:cap]] and len(urls) == cap
    for hit, url in zip(shown, urls, strict=False):
        prefix, data = url.split(',', 1)
        assert prefix == 'data:image/jpeg;base64'
        stored = record(memory, hit.id)
        assert base64.b64decode(data) == memory.image_store.get(stored.image_ref)


def test_a_model_without_images_gets_no_pictures(memory):
    script = scripted(search('bakery'), answer_with_first_hit())
    with ScriptedLLMServer(script) as server:
        ask(agent(server, memory))
        second = server.requests[1]
    assert all(isinstance(message['content'], str | None) for message in second['messages'])
