# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The optional slow tier: the agent against a real model on a real server.

The scripted server proves the agent's logic; this proves that a real OpenAI-compatible
server takes every request the agent makes and that, whatever a real model says, the
answer stays grounded in memory and within its budgets. A tiny model (SmolLM2-135M on
llama.cpp, `make test-llm`) is enough for that, and shows the guards at work: it answers
badly and often. Point WAYMARK_LLM_URL and WAYMARK_LLM_MODEL at vLLM to run it there.
Without a model these tests are skipped, with the reason shown.
"""

from __future__ import annotations

import math
import time

import pytest
from support.local_llm import real_model, unavailable_reason

from waymark.agent.agent import Agent, AgentAnswer, AgentConfig, AgentQuestion
from waymark.agent.llm import ChatClient, LLMConfig
from waymark.agent.trace import TraceWriter
from waymark_testing.agent_memory import NOW, build_memory, image_loader

pytestmark = [
    pytest.mark.real_llm,
    pytest.mark.skipif(unavailable_reason() is not None, reason=str(unavailable_reason())),
]

QUESTIONS = [
    'Where is the bakery?',
    'Where is the coffee shop on the way from the office to the station?',
    'When did I last see the kiosk?',
    'Did I see a fountain?',
]
# Generous: a CPU model on a busy machine may take a minute for a long prompt.
CONFIG = AgentConfig(max_steps=3, deadline_s=300.0)
CALL_TIMEOUT_S = 120.0
# What a refused request or an unreadable reply leaves in the fallback's reason (a timeout
# is the machine's load, not the server's verdict on the request).
REFUSALS = ('BadRequestError', 'UnprocessableEntityError', 'InternalServerError', 'unusable')


@pytest.fixture(scope='module')
def model(tmp_path_factory):
    with real_model(tmp_path_factory.mktemp('real_llm')) as served:
        yield served


@pytest.fixture(scope='module')
def memory(tmp_path_factory):
    service = build_memory(tmp_path_factory.mktemp('real_llm_memory'))
    yield service
    service.store.close()


@pytest.fixture(scope='module')
def answers(model, memory, tmp_path_factory):
    """Each question asked once; the tests below read what came of them."""
    traces = TraceWriter(tmp_path_factory.mktemp('real_llm_traces'))
    llm = LLMConfig(base_url=model.base_url, model=model.model, timeout_s=CALL_TIMEOUT_S)
    client = ChatClient(llm)
    agent = Agent(client, memory, image_loader(memory), CONFIG, traces=traces)
    asked = []
    for question in QUESTIONS:
        started = time.monotonic()
        answer = agent.ask(AgentQuestion(question, NOW))
        asked.append((question, answer, time.monotonic() - started))
        print(
            f'[{model.description}] {question!r}: {answer.kind} {answer.text[:60]!r} '
            f'goal={answer.goal} fallback={answer.fallback_reason[:60]!r} '
            f'calls={answer.llm_calls} tokens={answer.prompt_tokens}+{answer.completion_tokens} '
            f'in {answer.latency_s:.1f} s'
        )
    return traces, asked


def test_the_server_takes_every_request_the_agent_makes(answers):
    _, asked = answers
    for question, answer, _ in asked:
        assert not any(word in answer.fallback_reason for word in REFUSALS), (question, answer)
        assert answer.llm_calls >= 1 and answer.prompt_tokens > 0, question


def test_every_goal_is_grounded_in_what_memory_showed(answers, memory):
    _, asked = answers
    for question, answer, _ in asked:
        if answer.goal is None:
            continue
        assert math.isfinite(answer.goal.x) and math.isfinite(answer.goal.y)
        assert answer.evidence, (question, answer)
        # A goal is the pose of an entry memory returned, and the answer cites it.
        poses = [(h.record.x, h.record.y, h.record.z, h.record.yaw) for h in answer.evidence]
        goal = (answer.goal.x, answer.goal.y, answer.goal.z, answer.goal.yaw)
        assert goal in poses, (question, answer)
        for hit in answer.evidence:  # every cited id is a real memory
            assert memory.store.get([hit.record.id])


def test_the_budgets_hold_whatever_the_model_does(answers):
    _, asked = answers
    for question, answer, wall_s in asked:
        assert answer.llm_calls <= CONFIG.max_steps + 3, question
        assert wall_s <= CONFIG.deadline_s + 5.0, question
        assert answer.used_fallback == bool(answer.fallback_reason), question


def test_each_answer_has_a_trace_of_what_the_model_was_told_and_said(answers):
    traces, asked = answers
    for question, answer, _ in asked:
        trace = traces.read(answer.trace_id)
        assert trace['question'] == question
        assert trace['llm_calls'] == answer.llm_calls and trace['model']
        # Every reply of the model is there: one assistant message per call.
        said = [m for m in trace['messages'] if m['role'] == 'assistant']
        assert len(said) == answer.llm_calls
        assert trace['answer']['evidence'] == [hit.record.id for hit in answer.evidence]


def test_a_short_deadline_cuts_a_real_model_off_with_a_fallback(model, memory):
    client = ChatClient(LLMConfig(base_url=model.base_url, model=model.model, max_retries=0))
    config = AgentConfig(deadline_s=1.0)
    agent = Agent(client, memory, image_loader(memory), config)
    started = time.monotonic()
    answer: AgentAnswer = agent.ask(AgentQuestion(QUESTIONS[1], NOW))
    assert time.monotonic() - started < config.deadline_s + 3.0
    if answer.used_fallback:  # a fast server may finish; a cut-off run must say so
        assert answer.fallback_reason
        assert answer.goal is not None and answer.evidence  # the embedder-only top hit
