# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Lessons in front of the agent's question, over a real memory and a scripted model."""

from __future__ import annotations

import pytest

from waymark.agent.agent import Agent, AgentQuestion, LessonsGiven
from waymark.agent.llm import ChatClient, LLMConfig
from waymark.agent.trace import TraceWriter
from waymark.lessons.bank import BankMode, LessonBank
from waymark.lessons.cards import LessonCard, Provenance, Snapshot
from waymark.lessons.prompt import HEADER, lesson_source
from waymark.lessons.retrieval import RetrievalParams
from waymark.lessons.trust import TrustPrior
from waymark_testing.agent_memory import (
    NOW,
    answer_with_first_hit,
    build_memory,
    image_loader,
    scripted,
)
from waymark_testing.scripted_llm import ScriptedLLMServer, tool_call

LESSON = 'When a shop is asked for, search for its sign text before its goods.'


@pytest.fixture(scope='module')
def memory(tmp_path_factory):
    service = build_memory(tmp_path_factory.mktemp('lessons_agent_memory'))
    yield service
    service.store.close()


@pytest.fixture(scope='module')
def embed(sentence_embedder):
    return lambda text: sentence_embedder.embed_texts([text])[0]


def ask(memory, lessons, script=None, traces=None, lesson_task=''):
    """The agent's answer over `script` (by default one search, then the first hit) and
    the first user message the model read."""
    script = script or scripted(
        tool_call('retrieve_from_text', {'query': 'bakery'}), answer_with_first_hit()
    )
    with ScriptedLLMServer(script) as server:
        chat = ChatClient(LLMConfig(base_url=server.base_url, model='test/llm', max_retries=0))
        agent = Agent(chat, memory, image_loader(memory), traces=traces, lessons=lessons)
        answer = agent.ask(AgentQuestion('Where is the bakery?', NOW, lesson_task=lesson_task))
        return answer, server.requests[0]['messages'][1]['content']


def shop_bank(embed) -> LessonBank:
    card = LessonCard(
        'shop-sign',
        'where is the pharmacy?',
        tuple(float(x) for x in embed('where is the pharmacy?')),
        'A shop question answered from its goods, not its sign.',
        LESSON,
        Provenance('run', 'q1', 'model', 0),
    )
    return LessonBank(
        Snapshot('all-MiniLM-L6-v2', 384, TrustPrior(), (card,)),
        embed,
        BankMode.ACQUIRE,
        RetrievalParams(min_similarity=0.3),
    )


def test_the_lessons_block_comes_before_the_question_and_its_ids_with_the_answer(memory, embed):
    answer, user = ask(memory, lesson_source(shop_bank(embed), embed))
    assert user.startswith(HEADER) and LESSON in user
    assert user.index(LESSON) < user.index('Question: Where is the bakery?')
    assert answer.lesson_ids == answer.lessons_shown == ('shop-sign',)
    assert answer.kind == 'position' and not answer.lessons_note


def test_the_lessons_are_looked_up_by_the_lesson_task_when_one_is_given(memory):
    asked: list[str] = []

    def source(task: str) -> LessonsGiven:
        asked.append(task)
        return LessonsGiven()

    ask(memory, source, lesson_task='the bakery')
    ask(memory, source)
    assert asked == ['the bakery', 'Where is the bakery?']


def test_a_failing_or_refusing_lesson_source_leaves_the_question_as_it_was_and_says_why(memory):
    def broken(question: str):
        raise RuntimeError('embedder away')

    answer, user = ask(memory, broken)
    assert answer.kind == 'position' and answer.lesson_ids == ()
    assert answer.lessons_note == 'no lessons: embedder away'
    assert HEADER not in user and 'Question: Where is the bakery?' in user
    refused, _ = ask(memory, lambda task: LessonsGiven(note='no lessons: the bank is off'))
    assert refused.kind == 'position' and refused.lessons_note == 'no lessons: the bank is off'


def test_a_fallback_answer_credits_no_lesson(memory, embed, tmp_path):
    bank = shop_bank(embed)
    traces = TraceWriter(tmp_path)
    failing = scripted(tool_call('no_such_tool', {}))  # the model never answers
    answer, user = ask(memory, lesson_source(bank, embed), failing, traces)
    assert LESSON in user  # the lesson was in front of the question all the same
    assert answer.used_fallback and answer.kind == 'position'
    assert answer.lessons_shown == ('shop-sign',) and answer.lesson_ids == ()
    assert answer.lessons_note.startswith('lessons shown, not credited')
    trace = traces.read(answer.trace_id)
    assert trace['lesson_ids'] == [] and trace['lessons_shown'] == ['shop-sign']
    # A verified outcome of the fallback's answer counts for none of its lessons ...
    assert bank.calibrate(answer.lesson_ids, 0.0, f'query {answer.trace_id}') == 0
    assert [card.visits.count for card in bank.snapshot().cards] == [0]
    # ... and one of the model's own answer, given the same lesson, does.
    model, _ = ask(memory, lesson_source(bank, embed), traces=traces)
    assert bank.calibrate(model.lesson_ids, 1.0, f'query {model.trace_id}') == 1
