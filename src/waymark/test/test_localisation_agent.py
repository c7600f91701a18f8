# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The agent's position answers carry the located target and a standoff goal facing it,
whether the model chose the memory or the fallback did."""

from __future__ import annotations

import math

import numpy as np
import pytest

from waymark.agent.agent import Agent, AgentQuestion
from waymark.agent.llm import ChatClient, LLMConfig
from waymark.agent.trace import TraceWriter
from waymark.localisation.estimate import ROBOT, TRIANGULATED
from waymark.memory.entries import Hit, TextBox
from waymark.memory.search_query import Mode, SearchQuery
from waymark_testing.agent_memory import NOW, answer_with_first_hit, scripted
from waymark_testing.scripted_llm import ScriptedLLMServer, tool_call
from waymark_testing.sightings import POSES, SIGN, seeing

QUESTION = 'Where is the pharmacy?'


class SightedMemory:
    """Memory whose frames carry sightings: three views of the pharmacy sign, and a
    frame of another session that read the same words (never combined with them)."""

    def __init__(self) -> None:
        self.records = [seeing(i, x, y) for i, (x, y) in enumerate(POSES)]
        self.records.append(seeing(0, 3.0, 1.0, session='other'))

    def search(self, query: SearchQuery) -> list[Hit]:
        assert query.mode == Mode.TEXT, f'this memory answers text searches, not {query.mode}'
        return [Hit(r, 0.9 - 0.1 * i, 'text') for i, r in enumerate(self.records[: query.k])]


def make_agent(base_url: str | None, traces=None, free_space=None) -> Agent:
    chat = None
    if base_url is not None:
        chat = ChatClient(LLMConfig(base_url=base_url, model='test/llm', max_retries=0))
    return Agent(chat, SightedMemory(), lambda record: None, traces=traces, free_space=free_space)


def check_located(answer) -> None:
    target, goal = answer.target, answer.goal
    assert target.method == TRIANGULATED
    assert math.hypot(target.x - SIGN[0], target.y - SIGN[1]) < 0.05
    assert target.sources == ('walk/0', 'walk/1', 'walk/2')
    assert (goal.session, goal.map_epoch) == ('walk', 0)
    assert math.hypot(goal.x - target.x, goal.y - target.y) == pytest.approx(1.0)
    assert goal.yaw == pytest.approx(math.atan2(target.y - goal.y, target.x - goal.x))


def test_the_fallback_answer_is_located(tmp_path):
    answer = make_agent(None).ask(AgentQuestion(QUESTION, NOW))
    assert answer.used_fallback and answer.kind == 'position'
    check_located(answer)


def test_the_models_answer_is_located_and_traced(tmp_path):
    traces = TraceWriter(tmp_path)
    search = tool_call('retrieve_from_text', {'query': 'pharmacy'})
    with ScriptedLLMServer(scripted(search, answer_with_first_hit())) as server:
        answer = make_agent(server.base_url, traces).ask(AgentQuestion(QUESTION, NOW))
    assert not answer.used_fallback and answer.evidence[0].record.id == 'walk/0'
    check_located(answer)
    trace = traces.read(answer.trace_id)
    assert trace['answer']['target']['method'] == TRIANGULATED
    assert trace['localisation']['source'] == 'walk/0'
    assert trace['localisation']['goal'] == trace['answer']['goal']


def test_a_blocked_standoff_spot_moves_the_goal_to_a_free_one():
    direct = make_agent(None).ask(AgentQuestion(QUESTION, NOW)).goal

    def free(x: float, y: float) -> bool:
        return math.hypot(x - direct.x, y - direct.y) > 0.2

    goal = make_agent(None, free_space=free).ask(AgentQuestion(QUESTION, NOW)).goal
    assert free(goal.x, goal.y) and math.hypot(goal.x - direct.x, goal.y - direct.y) > 0.2


class PhotoMemory:
    """Memory that answers a photo search with one frame, verified with the photo's
    region at the pharmacy sign's box in its picture (as photo_rerank gives it)."""

    def __init__(self, region: bool) -> None:
        self.record = seeing(0, *POSES[0])
        box = self.record.sighting.text_boxes[1]
        self.region = TextBox('', box.left, box.top, box.right, box.bottom) if region else None

    def search(self, query: SearchQuery) -> list[Hit]:
        assert query.mode == Mode.IMAGE, f'this memory answers photo searches, not {query.mode}'
        return [Hit(self.record, 0.8, 'photo', self.region)]


@pytest.mark.parametrize('verified', [True, False])
def test_a_photo_answer_looks_along_where_the_photo_matched(verified):
    memory = PhotoMemory(verified)
    agent = Agent(None, memory, lambda record: None)
    photo = np.zeros((240, 320, 3), np.uint8)
    answer = agent.ask(AgentQuestion('Take me to what this photo shows.', NOW, image=photo))
    record = memory.record
    bearing = math.atan2(answer.target.y - record.y, answer.target.x - record.x)
    towards_sign = math.atan2(SIGN[1] - record.y, SIGN[0] - record.x)
    # Verified: along the sign; not verified: along the picture's centre, the camera's yaw.
    assert bearing == pytest.approx(towards_sign if verified else record.yaw, abs=1e-6)
    assert abs(towards_sign - record.yaw) > 0.1  # the two cases differ


def test_where_the_robot_was_is_answered_with_its_pose_not_a_target_ahead():
    search = tool_call('retrieve_from_text', {'query': 'pharmacy'})
    question = AgentQuestion('Where was I when I saw the pharmacy?', NOW)
    with ScriptedLLMServer(scripted(search, answer_with_first_hit())) as server:
        answer = make_agent(server.base_url).ask(question)
    seen_from = answer.evidence[0].record
    assert not answer.used_fallback and seen_from.id == 'walk/0'
    assert (answer.target.method, answer.target.x, answer.target.y) == (
        ROBOT,
        seen_from.x,
        seen_from.y,
    )
    assert (answer.goal.x, answer.goal.y, answer.goal.yaw) == (
        seen_from.x,
        seen_from.y,
        seen_from.yaw,
    )
