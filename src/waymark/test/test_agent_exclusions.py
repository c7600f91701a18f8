# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""A task's searched places, carried to the agent: never shown, never answered, by the
model or the fallback (over a scripted OpenAI-compatible server and a real memory)."""

from __future__ import annotations

import math

import pytest

from waymark.agent.agent import Agent, AgentConfig, AgentQuestion
from waymark.agent.exclusions import MAX_EXCLUDED, Exclusions
from waymark.agent.llm import ChatClient, LLMConfig
from waymark_testing.agent_memory import (
    NOW,
    answer_with_first_hit,
    build_memory,
    image_loader,
    scripted,
    shown_hits,
    tool_results,
)
from waymark_testing.scripted_llm import ScriptedLLMServer, tool_call

BAKERY = 'route/37'  # the only frame showing the bakery
WHERE_BAKERY = 'Where is the bakery?'


@pytest.fixture(scope='module')
def memory(tmp_path_factory):
    service = build_memory(tmp_path_factory.mktemp('agent_exclusions_memory'))
    yield service
    service.store.close()


def agent(memory, server=None) -> Agent:
    client = None
    if server is not None:
        config = LLMConfig(base_url=server.base_url, model='test/llm', timeout_s=5.0, max_retries=0)
        client = ChatClient(config)
    return Agent(client, memory, image_loader(memory), AgentConfig())


def ask(an_agent: Agent, exclusions: Exclusions):
    return an_agent.ask(AgentQuestion(WHERE_BAKERY, NOW, exclusions=exclusions))


@pytest.fixture(scope='module')
def bakery(memory):
    """Where the fallback finds the bakery with nothing excluded."""
    answer = ask(agent(memory), Exclusions())
    assert answer.evidence[0].record.id == BAKERY
    return answer.target.x, answer.target.y


def test_the_fallback_passes_over_an_excluded_entry(memory, bakery):
    answer = ask(agent(memory), Exclusions(entry_ids=(BAKERY,)))
    assert answer.used_fallback and answer.goal is not None
    assert all(hit.record.id != BAKERY for hit in answer.evidence[:1])
    assert math.dist((answer.target.x, answer.target.y), bakery) > 0.5


def test_the_fallback_passes_over_a_place_ruled_out(memory, bakery):
    ruled_out = Exclusions(positions=(bakery,), radius_m=2.0)
    answer = ask(agent(memory), ruled_out)
    assert answer.goal is not None and answer.evidence[0].record.id != BAKERY
    assert math.dist((answer.target.x, answer.target.y), bakery) > 2.0


def test_an_excluded_entry_is_never_shown_to_the_model(memory):
    search = tool_call('retrieve_from_text', {'query': 'bakery'})
    with ScriptedLLMServer(scripted(search, answer_with_first_hit())) as server:
        answer = ask(agent(memory, server), Exclusions(entry_ids=(BAKERY,)))
        shown = [hit.id for hit in shown_hits(tool_results(server.requests[-1])[-1])]
    assert shown and BAKERY not in shown
    assert not answer.used_fallback and answer.evidence[0].record.id != BAKERY


def test_the_models_answer_at_a_place_ruled_out_is_refused_then_the_fallback_avoids_it(
    memory, bakery
):
    search = tool_call('retrieve_from_text', {'query': 'bakery'})
    stubborn = answer_with_first_hit()
    with ScriptedLLMServer(scripted(search, stubborn, stubborn)) as server:
        answer = ask(agent(memory, server), Exclusions(positions=(bakery,), radius_m=2.0))
        told = tool_results(server.requests[-1])[-1]
    assert 'already searched and ruled out' in told
    assert answer.used_fallback and 'refused twice' in answer.fallback_reason
    assert math.dist((answer.target.x, answer.target.y), bakery) > 2.0


@pytest.mark.parametrize(
    'bad',
    [
        {'entry_ids': tuple(f'e{i}' for i in range(MAX_EXCLUDED + 1))},
        {'entry_ids': ('',)},
        {'positions': ((math.nan, 0.0),)},
        {'positions': ((1.0,),)},
        {'radius_m': -1.0},
        {'radius_m': 101.0},
    ],
)
def test_exclusions_out_of_bounds_are_refused(bad):
    with pytest.raises(ValueError):
        Exclusions(**bad)


def test_nothing_is_excluded_by_an_empty_value_or_a_zero_radius():
    assert not Exclusions() and not Exclusions(positions=((0.0, 0.0),))
    assert Exclusions(positions=((0.0, 0.0),), radius_m=1.0).excludes_point(0.5, 0.5)
    assert not Exclusions(positions=((0.0, 0.0),), radius_m=1.0).excludes_point(1.0, 1.0)
