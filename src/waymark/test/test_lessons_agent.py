# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Lessons in front of the agent's question, over a real memory and a scripted model."""

from __future__ import annotations

import pytest

from waymark.agent.agent import Agent, AgentQuestion, LessonsGiven
from waymark.agent.llm import ChatClient, LLMConfig
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


def ask(memory, lessons):
    script = scripted(tool_call('retrieve_from_text', {'query': 'bakery'}), answer_with_first_hit())
    with ScriptedLLMServer(script) as server:
        chat = ChatClient(LLMConfig(base_url=server.base_url, model='test/llm', max_retries=0))
        agent = Agent(chat, memory, image_loader(memory), lessons=lessons)
        answer = agent.ask(AgentQuestion('Where is the bakery?', NOW))
        return answer, server.requests[0]['messages'][1]['content']


def test_the_lessons_block_comes_before_the_question_and_its_ids_with_the_answer(memory, embed):
    card = LessonCard(
        'shop-sign',
        'where is the pharmacy?',
        tuple(float(x) for x in embed('where is the pharmacy?')),
        'A shop question answered from its goods, not its sign.',
        LESSON,
        Provenance('run', 'q1', 'model', 0),
    )
    bank = LessonBank(
        Snapshot('all-MiniLM-L6-v2', 384, TrustPrior(), (card,)),
        embed,
        BankMode.READ_ONLY,
        RetrievalParams(min_similarity=0.3),
    )
    answer, user = ask(memory, lesson_source(bank, embed))
    assert user.startswith(HEADER) and LESSON in user
    assert user.index(LESSON) < user.index('Question: Where is the bakery?')
    assert answer.lesson_ids == ('shop-sign',) and answer.kind == 'position'


def test_a_failing_lesson_source_leaves_the_question_as_it_was(memory):
    def broken(question: str):
        raise RuntimeError('embedder away')

    answer, user = ask(memory, broken)
    assert answer.kind == 'position' and answer.lesson_ids == ()
    assert HEADER not in user and 'Question: Where is the bakery?' in user


def test_an_answer_that_falls_back_still_names_the_lessons_it_was_given(memory):
    def given(question: str) -> LessonsGiven:
        return LessonsGiven('Lessons: none that matter here.', ('a-lesson',))

    script = scripted(tool_call('no_such_tool', {}))  # the model never answers
    with ScriptedLLMServer(script) as server:
        chat = ChatClient(LLMConfig(base_url=server.base_url, model='test/llm', max_retries=0))
        agent = Agent(chat, memory, image_loader(memory), lessons=given)
        answer = agent.ask(AgentQuestion('Where is the bakery?', NOW))
    assert answer.used_fallback and answer.lesson_ids == ('a-lesson',)
