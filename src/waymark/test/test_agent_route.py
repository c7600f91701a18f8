# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""search_between (Binary Tracking) on a real memory of an out-and-back walk, directly and
through the agent, with a scripted verifier that looks at the candidate pictures; and the
lock-on-Y fallback for "the Z nearest to Y" questions."""

from __future__ import annotations

import contextlib
import json
import socket

import pytest

from waymark.agent.agent import Agent, AgentQuestion, Goal
from waymark.agent.bintrack import BinTrackParams
from waymark.agent.llm import ChatClient, LLMConfig, LLMUnavailableError
from waymark.agent.route import RouteSearch
from waymark.agent.trace import TraceWriter
from waymark.agent.verifier import Verifier, VerifierConfig
from waymark.memory.entries import SEGMENT
from waymark_testing.agent_memory import (
    BAKERY_SEGMENT,
    COFFEE_SEGMENT,
    NOW,
    OFFICE_SEGMENT,
    RETURN_COFFEE_SEGMENT,
    ROUTE,
    STATION_SEGMENT,
    answer_with_first_hit,
    build_memory,
    image_loader,
    oracle_verifier,
    scripted,
    segment_centre,
    shown_hits,
    tool_results,
    words_in_picture,
)
from waymark_testing.scripted_llm import ScriptedLLMServer, http_error, text, tool_call
from waymark_testing.scripted_vlm import verification_targets

OFFICE = (0.5, 0.0)  # where the walk starts, outbound
STATION = (29.0, 0.0)  # where it turns back
ON_THE_WAY = 'Where was the coffee shop on the way from the office to the station?'
KIOSK_NEAR_FOUNTAIN = 'Where is the kiosk nearest to the fountain?'


@pytest.fixture(scope='module')
def memory(tmp_path_factory):
    service = build_memory(tmp_path_factory.mktemp('agent_route_memory'))
    yield service
    service.store.close()


def seg(index: int) -> str:
    return f'{ROUTE}/s{index}'


def llm(base_url: str, **changes) -> LLMConfig:
    settings = {'model': 'test/llm', 'timeout_s': 5.0, 'max_retries': 0, **changes}
    return LLMConfig(base_url=base_url, **settings)


def verifier(base_url: str) -> Verifier:
    config = VerifierConfig(llm=llm(base_url, model='test/vlm', accepts_images=True))
    return Verifier(ChatClient(config.llm), config)


def targets(requests: list[dict]) -> list[str]:
    """What each verification request asked to find."""
    return [json.dumps(target) for body in requests for target in verification_targets(body)]


def pictures(body: dict) -> int:
    return sum(part['type'] == 'image_url' for part in body['messages'][0]['content'])


def goal_of(memory, entry_id: str, level: str = SEGMENT) -> Goal:
    [r] = memory.store.get([entry_id], level)
    return Goal(r.x, r.y, r.z, r.yaw, r.map_epoch, r.session)


def closed_port_url() -> str:
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        port = probe.getsockname()[1]
    return f'http://127.0.0.1:{port}/v1'


def test_the_memory_is_the_walk_the_tests_assume(memory):
    assert memory.store.count(ROUTE, level=SEGMENT) == 40
    for index, word in [
        (OFFICE_SEGMENT, 'office'),
        (COFFEE_SEGMENT, 'coffee shop'),
        (BAKERY_SEGMENT, 'bakery'),
        (STATION_SEGMENT, 'station'),
        (RETURN_COFFEE_SEGMENT, 'coffee shop'),
    ]:
        [found] = memory.store.get([seg(index)], SEGMENT)
        assert word.upper() in found.text
        assert (found.x, found.y) == pytest.approx(segment_centre(ROUTE, index))
        assert word in words_in_picture(image_loader(memory)(found))


# -- RouteSearch directly ------------------------------------------------------------------


@pytest.mark.parametrize(
    'start, end',
    [('office', 'station'), (OFFICE, STATION)],
    ids=['names', 'positions'],
)
def test_the_target_between_the_anchors_is_found_not_the_one_off_the_route(memory, start, end):
    result = RouteSearch(memory, image_loader(memory)).run('coffee shop', start, end, None)
    assert result.anchors['from'].record.id == seg(OFFICE_SEGMENT)
    assert result.anchors['to'].record.id == seg(STATION_SEGMENT)
    assert result.chosen.record.id == seg(COFFEE_SEGMENT)
    assert not result.verified and result.verifier_calls == 0 and result.message == ''
    # The segments strictly between the anchors, halved once (18 > k_leaf = 16).
    assert result.track.intervals == [(1, 18), (1, 9)] and result.track.leaf == (1, 9)
    assert result.track.splits[0].left_evidence > result.track.splits[0].right_evidence
    # Two anchor look-ups, two halves, the leaf by similarity and by nearness to the start.
    assert result.retrievals == 6
    indices = {hit.record.index for hit in result.track.candidates}
    assert indices == set(range(1, 10)) and RETURN_COFFEE_SEGMENT not in indices


def test_smaller_leaves_take_more_halvings_to_the_same_segment(memory):
    params = BinTrackParams(k_leaf=4)
    result = RouteSearch(memory, image_loader(memory), params=params).run(
        'coffee shop', 'office', 'station', None
    )
    assert result.track.intervals == [(1, 18), (1, 9), (6, 9)]
    assert [split.kept for split in result.track.splits] == ['left', 'right']
    assert result.chosen.record.id == seg(COFFEE_SEGMENT) and result.retrievals == 2 + 4 + 2


def test_the_second_position_anchor_is_looked_up_after_the_first(memory):
    # From the station back towards the office: the office's own segment (0) comes before
    # the station, so the end is the segment nearest the office on the way back (39),
    # and the coffee shop found is the one passed on the way back.
    result = RouteSearch(memory, image_loader(memory)).run('coffee shop', STATION, OFFICE, None)
    assert result.anchors['from'].record.id == seg(STATION_SEGMENT)
    assert result.anchors['to'].record.id == seg(39)
    assert result.track.intervals[0] == (20, 38)
    assert result.chosen.record.id == seg(RETURN_COFFEE_SEGMENT)
    assert (result.chosen.record.x, result.chosen.record.y) == pytest.approx((14.0, 3.0))


def test_the_verifier_is_asked_once_for_the_leaf_and_never_for_the_anchors(memory):
    with ScriptedLLMServer(oracle_verifier) as vlm:
        route = RouteSearch(memory, image_loader(memory), verifier(vlm.base_url))
        named = route.run('coffee shop', 'office', 'station', None)
        assert targets(vlm.requests) == ['"coffee shop"']
        by_position = route.run('coffee shop', OFFICE, STATION, None)
        requests = vlm.requests
    assert named.anchors['from'].record.id == by_position.anchors['from'].record.id
    assert named.verifier_calls == by_position.verifier_calls == 1
    assert named.verified and by_position.verified
    assert named.chosen.record.id == by_position.chosen.record.id == seg(COFFEE_SEGMENT)
    assert len(requests) == 2 and targets(requests[1:]) == ['"coffee shop"']
    # The leaf's pool is bounded by verifier_pool (12); the leaf has 9 segments.
    assert pictures(requests[0]) == pictures(requests[1]) == 9


def test_with_its_verifier_call_spent_a_route_search_answers_unverified(memory):
    with ScriptedLLMServer(oracle_verifier) as vlm:
        route = RouteSearch(memory, image_loader(memory), verifier(vlm.base_url))
        result = route.run('coffee shop', 'office', 'station', None, may_verify=False)
        assert vlm.requests == []
    assert result.verifier_calls == 0 and not result.verified
    assert result.chosen.record.id == seg(COFFEE_SEGMENT)  # the leaf's best ranked


# -- through the agent ---------------------------------------------------------------------


@pytest.mark.parametrize(
    'anchors',
    [
        {'from_place': 'office', 'to_place': 'station'},
        {'from_position': {'x': 0.5, 'y': 0.0}, 'to_position': {'x': 29.0, 'y': 0.0}},
    ],
    ids=['names', 'positions'],
)
def test_the_agent_answers_with_the_segment_search_between_found(memory, anchors):
    script = scripted(
        tool_call('search_between', {'target': 'coffee shop', **anchors}),
        answer_with_first_hit(),
    )
    with ScriptedLLMServer(script) as server:
        agent = Agent(ChatClient(llm(server.base_url)), memory, image_loader(memory))
        answer = agent.ask(AgentQuestion(ON_THE_WAY, NOW))
        [result] = tool_results(server.requests[-1])
    shown = [hit.id for hit in shown_hits(result)]
    assert shown[0] == seg(COFFEE_SEGMENT) and seg(RETURN_COFFEE_SEGMENT) not in shown
    assert len(shown) == 5  # the chosen segment, then the leaf's other candidates
    assert result.splitlines()[0].startswith(
        f'[{seg(COFFEE_SEGMENT)}] similarity 0.816 (text); seen 2025-06-15 15:06:50 UTC '
        '(1 h 59 min ago) for 1.5 s; at x=11.00 y=0.00 z=0.40 m'
    )
    assert not answer.used_fallback and answer.goal == goal_of(memory, seg(COFFEE_SEGMENT))
    assert [hit.record.id for hit in answer.evidence] == [seg(COFFEE_SEGMENT)]
    assert (answer.retrievals, answer.verifier_calls, answer.llm_calls) == (6, 0, 2)


def test_the_agent_reports_the_verifier_calls_of_search_between(memory):
    script = scripted(
        tool_call(
            'search_between',
            {'target': 'coffee shop', 'from_place': 'office', 'to_place': 'station'},
        ),
        answer_with_first_hit(),
    )
    with ScriptedLLMServer(script) as server, ScriptedLLMServer(oracle_verifier) as vlm:
        agent = Agent(
            ChatClient(llm(server.base_url)),
            memory,
            image_loader(memory),
            verifier=verifier(vlm.base_url),
        )
        answer = agent.ask(AgentQuestion(ON_THE_WAY, NOW))
        assert len(vlm.requests) == 1  # the leaf's; the answer is not verified again
    assert not answer.used_fallback and answer.goal == goal_of(memory, seg(COFFEE_SEGMENT))
    assert (answer.verifier_calls, answer.retrievals) == (1, 6)


def test_an_unreachable_verifier_during_search_between_falls_back(memory):
    script = scripted(
        tool_call(
            'search_between',
            {'target': 'coffee shop', 'from_place': 'office', 'to_place': 'station'},
        ),
        answer_with_first_hit(),
    )
    with ScriptedLLMServer(script) as server:
        away = verifier(closed_port_url())
        with pytest.raises(LLMUnavailableError):  # as the agent will find it
            away.verify('office', [('x', b'jpeg')])
        agent = Agent(ChatClient(llm(server.base_url)), memory, image_loader(memory), verifier=away)
        answer = agent.ask(AgentQuestion(ON_THE_WAY, NOW))
        assert len(server.requests) == 1
    assert answer.used_fallback and answer.fallback_reason.startswith('verifier unreachable: ')
    assert answer.verifier_calls == 0 and answer.llm_calls == 1
    # The embedder-only answer: the best frame for the question, with its pose.
    best = answer.evidence[0].record
    assert best.kind == 'frame' and 'COFFEE SHOP' in best.text
    assert answer.goal == Goal(best.x, best.y, best.z, best.yaw, best.map_epoch, best.session)


def test_a_verifier_answering_unusably_is_an_error_the_model_can_work_around(memory):
    script = scripted(
        tool_call(
            'search_between',
            {'target': 'coffee shop', 'from_place': 'office', 'to_place': 'station'},
        ),
        tool_call('retrieve_from_text', {'query': 'coffee shop'}),
        answer_with_first_hit(),
    )
    with ScriptedLLMServer(script) as server, ScriptedLLMServer([http_error(400)]) as vlm:
        agent = Agent(
            ChatClient(llm(server.base_url)),
            memory,
            image_loader(memory),
            verifier=verifier(vlm.base_url),
        )
        answer = agent.ask(AgentQuestion(ON_THE_WAY, NOW))
        error, found = tool_results(server.requests[-1])
    assert error.startswith('Error: verification failed: BadRequestError 400')
    assert not answer.used_fallback and answer.evidence[0].record.id == shown_hits(found)[0].id


# -- lock-on-Y -----------------------------------------------------------------------------


def lock_on_run(memory, tmp_path, vlm_policy=None, vlm_url=None):
    """The kiosk question with a model that never stops searching for "kiosk", verified by
    a scripted VLM following `vlm_policy`, or one at `vlm_url`, or none. Returns the answer,
    its trace and the verification requests."""
    traces = TraceWriter(tmp_path / 'traces')
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(
            ScriptedLLMServer(lambda body: tool_call('retrieve_from_text', {'query': 'kiosk'}))
        )
        vlm = stack.enter_context(ScriptedLLMServer(vlm_policy)) if vlm_policy else None
        url = vlm.base_url if vlm is not None else vlm_url
        agent = Agent(
            ChatClient(llm(server.base_url)),
            memory,
            image_loader(memory),
            verifier=verifier(url) if url else None,
            traces=traces,
        )
        answer = agent.ask(AgentQuestion(KIOSK_NEAR_FOUNTAIN, NOW))
        requests = vlm.requests if vlm is not None else []
    return answer, traces.read(answer.trace_id), requests


def test_lock_on_y_answers_with_the_z_nearest_the_verified_ys(memory, tmp_path):
    answer, trace, requests = lock_on_run(memory, tmp_path, oracle_verifier)
    # The budget ran out: the fallback reranked the kiosks by distance to the fountains.
    assert answer.used_fallback and answer.llm_calls == 7
    assert answer.fallback_reason == 'no usable answer within 4 searches'
    assert [hit.record.id for hit in answer.evidence] == ['plaza/25']  # "KIOSK NEWS"
    assert answer.goal == goal_of(memory, 'plaza/25', 'frame')
    assert (answer.goal.x, answer.goal.y) == (112.5, 50.0)
    step = trace['verification']
    assert step['lock_on_y'] is True and step['anchor'] == 'fountain'
    assert step['target'] == 'kiosk'
    assert step['z_verified'] == ['plaza/2', 'plaza/25']  # the far kiosk ranked first
    assert sorted(step['y_verified']) == ['plaza/23', 'plaza/28']
    # Z and Y were checked in one call.
    assert len(requests) == 1 and targets(requests) == ['"kiosk"', '"fountain"']
    assert answer.verifier_calls == 1 and answer.retrievals == 4 + 1


def test_lock_on_y_reranks_the_models_own_answer_in_one_verifier_call(memory, tmp_path):
    script = scripted(tool_call('retrieve_from_text', {'query': 'kiosk'}), answer_with_first_hit())
    traces = TraceWriter(tmp_path / 'traces')
    with ScriptedLLMServer(script) as server, ScriptedLLMServer(oracle_verifier) as vlm:
        agent = Agent(
            ChatClient(llm(server.base_url)),
            memory,
            image_loader(memory),
            verifier=verifier(vlm.base_url),
            traces=traces,
        )
        answer = agent.ask(AgentQuestion(KIOSK_NEAR_FOUNTAIN, NOW))
        requests = vlm.requests
    [first] = shown_hits(tool_results(server.requests[-1])[0])[:1]
    assert first.id == 'plaza/2'  # the model answered with the far kiosk
    # Not a fallback: the rerank moved the model's answer to the kiosk by the fountains.
    assert not answer.used_fallback and answer.goal == goal_of(memory, 'plaza/25', 'frame')
    assert answer.evidence[0].record.id == 'plaza/25'
    step = traces.read(answer.trace_id)['verification']
    assert step['lock_on_y'] is True
    assert len(requests) == 1 and targets(requests) == ['"kiosk"', '"fountain"']
    assert answer.verifier_calls == 1 and answer.retrievals == 1 + 1


def test_a_plain_answer_is_checked_once_and_kept_when_confirmed(memory):
    script = scripted(tool_call('retrieve_from_text', {'query': 'bakery'}), answer_with_first_hit())
    with ScriptedLLMServer(script) as server, ScriptedLLMServer(oracle_verifier) as vlm:
        agent = Agent(
            ChatClient(llm(server.base_url)),
            memory,
            image_loader(memory),
            verifier=verifier(vlm.base_url),
        )
        answer = agent.ask(AgentQuestion('Where is the bakery?', NOW))
        requests = vlm.requests
    [shown] = shown_hits(tool_results(server.requests[-1])[0])[:1]
    assert answer.evidence[0].record.id == shown.id and not answer.used_fallback
    assert len(requests) == 1 and targets(requests) == ['"bakery"']
    assert answer.verifier_calls == 1


def test_lock_on_y_is_not_applied_with_one_verified_y(memory, tmp_path):
    def one_fountain(body):
        answers = json.loads(oracle_verifier(body).content)['targets']
        answers[1]['matches'] = answers[1]['matches'][:1]
        return text(json.dumps({'targets': answers}))

    answer, trace, requests = lock_on_run(memory, tmp_path, one_fountain)
    step = trace['verification']
    assert step['lock_on_y'] is False and len(step['y_verified']) == 1
    assert len(requests) == 1 and answer.used_fallback
    # No rerank: the kiosk the verifier confirmed first (the search's order) answers.
    assert [hit.record.id for hit in answer.evidence] == [step['z_verified'][0]]
    assert answer.retrievals == 4 + 1


def test_lock_on_y_needs_a_verifier(memory, tmp_path):
    answer, trace, _ = lock_on_run(memory, tmp_path)
    assert trace['verification'] == {}
    assert answer.used_fallback and answer.verifier_calls == 0
    # No search for Y by lock-on-Y, only the fallback's for the question (anchor first).
    [fallback] = [step for step in trace['steps'] if step['tool'] == 'fallback_search']
    assert answer.retrievals == 4 + fallback['anchor']['retrievals'] + 1


def test_lock_on_y_is_not_applied_when_the_verifier_is_away(memory, tmp_path):
    answer, trace, _ = lock_on_run(memory, tmp_path, vlm_url=closed_port_url())
    step = trace['verification']
    assert 'lock_on_y' not in step and step['why'].startswith('the verifier could not be asked')
    assert answer.used_fallback and answer.verifier_calls == 0
    assert answer.evidence[0].record.session == 'plaza'  # the embedder-only answer


def test_a_spent_budget_falls_back_to_the_candidate_the_verifier_confirmed(memory):
    between = {'target': 'coffee shop', 'from_place': 'office', 'to_place': 'station'}
    script = scripted(
        tool_call('search_between', between),
        *[tool_call('retrieve_from_text', {'query': 'coffee'})] * 6,
    )
    with ScriptedLLMServer(script) as server, ScriptedLLMServer(oracle_verifier) as vlm:
        agent = Agent(
            ChatClient(llm(server.base_url)),
            memory,
            image_loader(memory),
            verifier=verifier(vlm.base_url),
        )
        answer = agent.ask(AgentQuestion(ON_THE_WAY, NOW))
        assert len(server.requests) == 7 and len(vlm.requests) == 1
    assert answer.used_fallback and answer.fallback_reason == 'no usable answer within 4 searches'
    # Not the embedder-only frame for the question: the segment Binary Tracking verified.
    assert [hit.record.id for hit in answer.evidence] == [seg(COFFEE_SEGMENT)]
    assert answer.goal == goal_of(memory, seg(COFFEE_SEGMENT))
    assert answer.retrievals == 6 + 3 and answer.verifier_calls == 1
