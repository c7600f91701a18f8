# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The VLM verifier against a scripted OpenAI-compatible server over real HTTP."""

from __future__ import annotations

import base64
import json
import socket

import cv2
import numpy as np
import pytest

from waymark.agent.llm import ChatClient, LLMConfig, LLMError, LLMUnavailableError
from waymark.agent.verifier import Verdict, Verifier, VerifierConfig, parse_answer
from waymark_testing.scripted_llm import ScriptedLLMServer, http_error, text


def jpeg(shade: int) -> bytes:
    picture = np.full((16, 16, 3), shade, np.uint8)
    ok, encoded = cv2.imencode('.jpg', picture)
    assert ok
    return encoded.tobytes()


CANDIDATES = [(f'walk/s{index}', jpeg(40 * index)) for index in range(1, 5)]


def verifier(base_url: str, **changes) -> Verifier:
    llm = LLMConfig(
        base_url=base_url, model='test/vlm', accepts_images=True, timeout_s=5.0, max_retries=0
    )
    config = VerifierConfig(llm=llm, **changes)
    return Verifier(ChatClient(llm), config)


def sent_pictures(request: dict) -> tuple[list[str], list[bytes]]:
    """The labels and decoded pictures of a verification request, in order."""
    [message] = request['messages']
    labels, pictures = [], []
    for part in message['content']:
        if part['type'] == 'image_url':
            prefix, data = part['image_url']['url'].split(',', 1)
            assert prefix == 'data:image/jpeg;base64'
            pictures.append(base64.b64decode(data))
        elif part['text'].startswith('Candidate '):
            labels.append(part['text'])
    return labels, pictures


def test_one_request_shows_every_candidate_after_its_label():
    with ScriptedLLMServer([text('{"matches": [3, 1], "best": 3}')]) as server:
        verdict = verifier(server.base_url, max_tokens=50).verify('the red mug', CANDIDATES)
        [request] = server.requests
    labels, pictures = sent_pictures(request)
    assert labels == ['Candidate 1:', 'Candidate 2:', 'Candidate 3:', 'Candidate 4:']
    assert pictures == [picture for _, picture in CANDIDATES]
    texts = [part['text'] for part in request['messages'][0]['content'] if part['type'] == 'text']
    assert 'the red mug' in texts[0] and '"matches"' in texts[-1]
    assert request['max_tokens'] == 50
    assert verdict.chosen == 'walk/s3' and verdict.matches == ['walk/s3', 'walk/s1']
    assert (verdict.calls, verdict.images, verdict.rejected, verdict.parse_error) == (1, 4, 0, '')
    assert verdict.prompt_tokens > 0 and verdict.completion_tokens > 0 and verdict.latency_s > 0


def test_a_fenced_answer_with_prose_is_read():
    answer = 'Sure! Here it is:\n```json\n{"matches": [2], "best": null}\n```\nHope that helps.'
    with ScriptedLLMServer([text(answer)]) as server:
        verdict = verifier(server.base_url).verify('a fire extinguisher', CANDIDATES)
    assert verdict.chosen == 'walk/s2' and verdict.matches == ['walk/s2']
    assert verdict.parse_error == ''


def test_numbers_out_of_range_are_dropped_and_counted():
    with ScriptedLLMServer([text('{"matches": [0, 2, 9, 2, 4], "best": 7}')]) as server:
        verdict = verifier(server.base_url).verify('a bicycle', CANDIDATES)
    assert verdict.matches == ['walk/s2', 'walk/s4'] and verdict.chosen == 'walk/s2'
    assert verdict.rejected == 3


def test_the_best_is_added_to_the_matches_first():
    with ScriptedLLMServer([text('{"matches": [1], "best": 4}')]) as server:
        verdict = verifier(server.base_url).verify('a bicycle', CANDIDATES)
    assert verdict.matches == ['walk/s4', 'walk/s1'] and verdict.chosen == 'walk/s4'


def test_no_match_is_a_verdict_without_a_choice():
    with ScriptedLLMServer([text('{"matches": [], "best": null}')]) as server:
        verdict = verifier(server.base_url).verify('a piano', CANDIDATES)
    assert verdict == Verdict(
        chosen=None,
        calls=1,
        images=4,
        prompt_tokens=verdict.prompt_tokens,
        completion_tokens=verdict.completion_tokens,
        latency_s=verdict.latency_s,
    )


@pytest.mark.parametrize(
    'answer',
    [
        'Candidate 2 shows it.',
        '{"matches": ["2"], "best": 2}',
        '{"matches": [true], "best": null}',
        '{"matches": [2.0]}',
        '{"best": 2}',
        '{"matches": [2], "best": 2',
    ],
)
def test_an_unreadable_answer_is_a_parse_error_not_an_exception(answer):
    with ScriptedLLMServer([text(answer)]) as server:
        verdict = verifier(server.base_url).verify('a bicycle', CANDIDATES)
    assert verdict.chosen is None and verdict.matches == [] and verdict.parse_error
    assert verdict.calls == 1


def test_candidates_beyond_the_cap_are_dropped_lowest_ranked_first():
    many = [(f'walk/s{index}', jpeg(10 * index)) for index in range(1, 8)]
    with ScriptedLLMServer([text('{"matches": [3], "best": 3}')]) as server:
        verdict = verifier(server.base_url, max_images=3).verify('a bicycle', many)
        [request] = server.requests
    labels, pictures = sent_pictures(request)
    assert pictures == [picture for _, picture in many[:3]] and len(labels) == 3
    assert (verdict.images, verdict.dropped, verdict.chosen) == (3, 4, 'walk/s3')


def test_candidates_without_pictures_are_skipped_before_numbering():
    candidates = [('walk/s1', b''), *CANDIDATES[1:3]]
    with ScriptedLLMServer([text('{"matches": [1], "best": 1}')]) as server:
        verdict = verifier(server.base_url).verify('a bicycle', candidates)
        [request] = server.requests
    assert len(sent_pictures(request)[1]) == 2
    assert (verdict.chosen, verdict.skipped, verdict.images) == ('walk/s2', 1, 2)


def test_nothing_to_show_makes_no_request():
    with ScriptedLLMServer([]) as server:
        check = verifier(server.base_url)
        assert check.verify('a bicycle', []) == Verdict(chosen=None)
        assert check.verify('a bicycle', [('walk/s1', b'')]) == Verdict(chosen=None, skipped=1)
        assert server.requests == []
    assert check.chat.usage.calls == 0


def test_an_unreachable_model_raises_for_the_caller_to_fall_back():
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        url = f'http://127.0.0.1:{probe.getsockname()[1]}/v1'
    with pytest.raises(LLMUnavailableError):
        verifier(url).verify('a bicycle', CANDIDATES)


def test_a_refused_request_raises():
    body = json.dumps({'error': {'message': 'too many images'}})
    with (
        ScriptedLLMServer([http_error(400, body)]) as server,
        pytest.raises(LLMError, match='too many images'),
    ):
        verifier(server.base_url).verify('a bicycle', CANDIDATES)


def test_parse_answer_takes_the_first_object():
    answer = '{oops} then {"matches": [2, 1]} and {"matches": [3]}'
    assert parse_answer(answer, 3) == ([2, 1], 0, '')
    assert parse_answer('{"matches": [1], "best": 5, "note": "x"}', 2) == ([1], 1, '')


def test_a_verifier_needs_a_model_that_sees_images():
    with pytest.raises(ValueError, match='accepts images'):
        VerifierConfig(llm=LLMConfig(base_url='http://127.0.0.1:1/v1', model='text-only'))
    llm = LLMConfig(base_url='http://127.0.0.1:1/v1', model='m', accepts_images=True)
    with pytest.raises(ValueError):
        VerifierConfig(llm=llm, max_images=0)


# -- several targets in one call -----------------------------------------------------------


def test_several_targets_are_checked_in_one_request_over_shared_pictures():
    z = CANDIDATES[:3]
    y = [CANDIDATES[2], CANDIDATES[3]]  # s3 is a candidate of both
    answer = {'targets': [{'matches': [1, 3], 'best': 1}, {'matches': [3, 2], 'best': None}]}
    with ScriptedLLMServer([text(json.dumps(answer))]) as server:
        verdicts = verifier(server.base_url).verify_each([('the kiosk', z), ('the fountain', y)])
        [request] = server.requests
    labels, pictures = sent_pictures(request)
    # Taken in turn from each list, each picture once: s1 (Z), s3 (Y), s2 (Z), s4 (Y).
    order = [CANDIDATES[0], CANDIDATES[2], CANDIDATES[1], CANDIDATES[3]]
    assert pictures == [picture for _, picture in order] and len(labels) == 4
    first = request['messages'][0]['content'][0]['text']
    assert 'target 1: "the kiosk"' in first and 'target 2: "the fountain"' in first
    kiosk, fountain = verdicts
    assert kiosk.matches == ['walk/s1', 'walk/s2']
    # Candidate 2 (s3) shows the fountain; candidate 3 (s2) is no fountain candidate.
    assert fountain.matches == ['walk/s3']
    assert (kiosk.calls, fountain.calls) == (1, 0) and kiosk.images == 4


def test_the_cap_is_shared_so_every_target_keeps_its_best():
    many = [(f'walk/s{index}', jpeg(10 * index)) for index in range(1, 9)]
    answer = {'targets': [{'matches': [], 'best': None}, {'matches': [], 'best': None}]}
    with ScriptedLLMServer([text(json.dumps(answer))]) as server:
        verifier(server.base_url, max_images=4).verify_each([('a', many[:4]), ('b', many[4:])])
        [request] = server.requests
    _, pictures = sent_pictures(request)
    assert pictures == [many[0][1], many[4][1], many[1][1], many[5][1]]


@pytest.mark.parametrize(
    'answer',
    [
        '{"targets": [{"matches": [1], "best": 1}]}',  # one target short
        '{"matches": [1], "best": 1}',  # the single-target format
        'candidate 1 for both',
    ],
)
def test_a_several_target_answer_that_cannot_be_read_confirms_nothing(answer):
    with ScriptedLLMServer([text(answer)]) as server:
        verdicts = verifier(server.base_url).verify_each(
            [('the kiosk', CANDIDATES[:2]), ('the fountain', CANDIDATES[2:])]
        )
    assert [v.matches for v in verdicts] == [[], []]
    assert all(v.parse_error for v in verdicts) and verdicts[0].calls == 1
