# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The reasoning agent as an evaluation row: `Agent` over the in-process memory.

Each question goes to the agent as a user would ask it, "now" being the question's own
time of asking when it has one, else just after the recording ends (so clock times in
questions mean the recorded day), with the question's
photo when it has one. The answer is read as the question's answer type asks: a position
from the goal, a time, a yes or no; an answer of another kind is no answer.

Besides the answer, each prediction carries what it cost: LLM calls and tokens, memory
retrievals, verifier calls, whether the agent fell back, and the distinct memory entries
put before the model (the hits of its searches, or the candidates a fallback chose
among) against those it could have been shown (frames, plus segments when Binary
Tracking is offered), which gives α.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any

import numpy as np
import openai

from waymark.agent.agent import NONE, Agent, AgentAnswer, AgentConfig, AgentQuestion
from waymark.agent.llm import ChatClient, LLMConfig
from waymark.agent.reply_cache import ReplyCache
from waymark.agent.verifier import Verifier, VerifierConfig
from waymark.evaluation.answerers import agent_name
from waymark.evaluation.metrics import Prediction
from waymark.evaluation.questions import AnswerType, Question
from waymark.llm_client import openai_client
from waymark.memory.entries import FRAME, SEGMENT
from waymark.memory.service import MemoryService

NS_PER_S = 1_000_000_000
# When the questions are asked: this long after the recording's last entry ends.
ASKED_AFTER_S = 60.0
# Stands for the model when the server cannot say which it serves (the agent then falls
# back on every question, and the report shows it).
UNKNOWN_MODEL = 'default'


def served_model(base_url: str, timeout_s: float = 5.0) -> str:
    """The first model an OpenAI-compatible server lists, `UNKNOWN_MODEL` if it cannot
    be asked."""
    client = openai_client(base_url, timeout_s=timeout_s)
    try:
        models = [model.id for model in client.models.list()]
    except (openai.OpenAIError, ValueError):
        return UNKNOWN_MODEL
    finally:
        client.close()
    return models[0] if models else UNKNOWN_MODEL


class _LastTrace:
    """Keeps the trace of the last question instead of writing it to disk."""

    def __init__(self) -> None:
        self.trace: dict[str, Any] = {}

    def write(self, trace: dict[str, Any]) -> None:
        self.trace = trace


class AgentAnswerer:
    """Answers each question with `Agent` (see the module docstring).

    `llm` is the OpenAI-compatible server the agent plans with; `config.search_between`
    decides the row (`agent` or `agent/no-bt`), `label` names the planner in the row name;
    `verifier`, when given, checks each answer once (as `Agent` does on the robot).
    `now_ns` defaults to `ASKED_AFTER_S` after the last entry in memory. With `cache`
    (evaluation's reply cache) a request asked before is not sent again.
    """

    def __init__(
        self,
        memory: MemoryService,
        llm: LLMConfig,
        config: AgentConfig | None = None,
        label: str = '',
        now_ns: int | None = None,
        verifier: VerifierConfig | None = None,
        cache: ReplyCache | None = None,
    ) -> None:
        self.memory = memory
        self.config = config or AgentConfig()
        self.llm = llm
        self.name = agent_name(self.config.search_between, label)
        self.chat = ChatClient(llm, cache=cache)
        self._trace = _LastTrace()
        self.agent = Agent(
            self.chat,
            memory,
            memory.image_store.image_of,
            self.config,
            verifier=Verifier.sharing(verifier, self.chat) if verifier else None,
            traces=self._trace,
        )
        self.now_ns = now_ns if now_ns is not None else self._end_of_memory()
        # What a stored prediction must have been made with to be reused (harness); not
        # the server's address, which a test server changes from run to run.
        self.settings = {
            'model': llm.model,
            'model_sha256': cache.model_sha256 if cache is not None else None,
            'max_tokens': llm.max_tokens,
            'temperature': llm.temperature,
            'accepts_images': llm.accepts_images,
            'agent': asdict(self.config),
            'verifier': verifier.llm.model if verifier else None,
            'now_ns': self.now_ns,
        }

    @property
    def last_trace(self) -> dict[str, Any]:
        """The trace of the last question answered (empty before the first)."""
        return self._trace.trace

    def answer(self, question: Question, image: np.ndarray | None = None) -> Prediction:
        started = time.perf_counter()
        self._trace.trace = {}
        now_ns = self.now_ns if question.now_ns is None else question.now_ns
        answer = self.agent.ask(AgentQuestion(question.question, now_ns, image=image))
        return self._prediction(question, answer, time.perf_counter() - started)

    def _prediction(self, question: Question, answer: AgentAnswer, elapsed: float) -> Prediction:
        position = (answer.goal.x, answer.goal.y, answer.goal.z) if answer.goal else None
        answered = (
            answer.kind != NONE
            and {
                AnswerType.POSITION: position is not None,
                AnswerType.TIME: answer.time_ns is not None,
                AnswerType.YES_NO: answer.yes is not None,
                AnswerType.TEXT: bool(answer.text),
            }[question.answer_type]
        )
        message = answer.fallback_reason or ('' if answered else answer.text)
        return Prediction(
            question_id=question.id,
            answered=answered,
            position=position,
            **_located(answer),
            time_ns=answer.time_ns,
            yes=answer.yes,
            text=answer.text,
            used_fallback=answer.used_fallback,
            entries_shown=len(self._shown_ids(answer)),
            memory_entries=self._searchable(),
            latency_s=elapsed,
            llm_calls=answer.llm_calls,
            tokens=answer.prompt_tokens + answer.completion_tokens,
            retrievals=answer.retrievals,
            verifier_calls=answer.verifier_calls,
            message=message[:300],
        )

    def _shown_ids(self, answer: AgentAnswer) -> set[str]:
        """Distinct entries put before the model, and those a fallback picked from."""
        steps = self._trace.trace.get('steps', [])
        shown = {str(hit[0]) for step in steps for hit in step.get('hits', [])}
        if answer.used_fallback:
            shown |= {hit.record.id for hit in answer.evidence}
        return shown

    def _searchable(self) -> int:
        """Entries the agent could be shown: its level's, plus segments for search_between."""
        store = self.memory.store
        total = store.count(level=self.config.level)
        if self.config.search_between and self.config.level != SEGMENT:
            total += store.count(level=SEGMENT)
        return total

    def _end_of_memory(self) -> int:
        store = self.memory.store
        ends = [
            store.summary(session, level).end_ns
            for session in store.sessions()
            for level in (FRAME, SEGMENT)
        ]
        return max(ends, default=0) + int(ASKED_AFTER_S * NS_PER_S)


def _located(answer: AgentAnswer) -> dict:
    """The answer's target and the pose of the memory it was located from."""
    target = answer.target
    if target is None:
        return {}
    source = next((h.record for h in answer.evidence if h.record.id in target.sources[:1]), None)
    return {
        'target': (target.x, target.y, target.z),
        'target_sigma_m': target.sigma_m,
        'target_method': target.method,
        'viewpoint': None if source is None else (source.x, source.y, source.z),
    }
