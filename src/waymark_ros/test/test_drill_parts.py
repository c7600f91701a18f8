# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The drill tool's own parts, without a stack: the image bomb it sends, the LLM fault
injector it serves, and the verdict its table gives."""

from __future__ import annotations

import io
import json
import urllib.error
import urllib.request

import numpy as np
import pytest
from PIL import Image

from waymark_ros.tools.drill.drills import png_bomb
from waymark_ros.tools.drill.driving import FAR, START, ended_for_safety, hall
from waymark_ros.tools.drill.llm_faults import GARBAGE, FaultyLLM
from waymark_ros.tools.drill.reflection import KINDS, SYSTEM_START, LessonModel
from waymark_ros.tools.drill.report import DrillResult, table, to_json
from waymark_ros.tools.drill.stops import Sample, moved_m, stop_after


def test_the_png_bomb_is_a_valid_image_far_larger_than_its_bytes():
    data = png_bomb(side=1530)  # not a multiple of the rows packed per deflate block
    image = Image.open(io.BytesIO(data))
    assert image.size == (1530, 1530) and image.mode == 'RGB'
    pixels = np.asarray(image)  # decodes: the checksums and the stream are right
    assert pixels.shape == (1530, 1530, 3) and not pixels.any()
    assert len(data) * 100 < pixels.nbytes


def _chat(llm: FaultyLLM, timeout_s: float = 5.0) -> tuple[int, bytes]:
    request = urllib.request.Request(
        llm.base_url + '/chat/completions',
        data=b'{"model": "m", "messages": []}',
        headers={'Content-Type': 'application/json'},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def test_the_llm_faults_fail_as_named_and_the_model_list_still_answers():
    with FaultyLLM('fail') as llm:
        status, body = _chat(llm)
        assert status == 500 and json.loads(body)['error']['message']
        with urllib.request.urlopen(llm.base_url + '/models', timeout=5.0) as models:
            assert json.loads(models.read())['data']
    with FaultyLLM('garbage') as llm:
        bodies = [_chat(llm)[1] for _ in GARBAGE]
        assert bodies == [body for _, body in GARBAGE]
    with FaultyLLM('slow', delay_s=0.2) as llm:
        status, body = _chat(llm)
        assert status == 200 and json.loads(body)['choices'][0]['message']['content']
    with FaultyLLM('hang') as llm, pytest.raises(TimeoutError):
        _chat(llm, timeout_s=1.0)
    with pytest.raises(ValueError, match='unknown LLM fault'):
        FaultyLLM('flaky')


def test_a_drill_passes_only_with_nothing_lost_wrong_unanswered_or_dead():
    clean = DrillResult('clean', injected=3, requests=3, answered=3)
    assert clean.passed
    for change in ({'lost': 1}, {'wrong': 1}, {'answered': 2}, {'dead': ['memory_node']}):
        counts = {'injected': 3, 'requests': 3, 'answered': 3} | change
        assert not DrillResult('x', **counts).passed
    broken = DrillResult('broken', error='memory_node exited with 1')
    assert not broken.passed
    text = table([clean, broken])
    assert '| clean ' in text and 'pass' in text and 'ERROR' in text
    assert 'error: memory_node exited with 1' in text
    assert json.loads(to_json([clean, broken]))['passed'] is False


def _drive(speeds: list[float], period_ns: int = 20_000_000) -> list[Sample]:
    """Samples of a base driving along x at each speed for one period."""
    samples, x = [], 0.0
    for i, v in enumerate(speeds):
        x += v * period_ns / 1e9
        samples.append(Sample(i * period_ns, x, 0.0, v, 0.0))
    return samples


def test_a_stop_is_the_first_still_odometry_after_the_fault_that_stays_still():
    samples = _drive([1.0] * 10 + [0.0] * 3 + [0.5] * 5 + [0.0] * 10)
    stop = stop_after(samples, fault_ns=5 * 20_000_000, tolerance=0.01)
    # The pause at 10..12 is not a stop: the base drove on after it.
    assert stop is not None and stop.seconds == pytest.approx(13 * 0.02)
    assert stop.distance_m == pytest.approx(4 * 0.02 * 1.0 + 5 * 0.02 * 0.5)  # from sample 5
    assert moved_m(samples, since_ns=17 * 20_000_000) == pytest.approx(0.0)
    assert moved_m(samples, since_ns=0) == pytest.approx(9 * 0.02 + 5 * 0.01)  # from sample 0


def test_no_stop_while_the_base_still_moves_or_before_any_odometry_after_the_fault():
    assert stop_after(_drive([1.0] * 10), fault_ns=0, tolerance=0.01) is None
    assert stop_after(_drive([0.0] * 10), fault_ns=10**12, tolerance=0.01) is None
    turning = [Sample(i, 0.0, 0.0, 0.0, 0.5) for i in range(5)]
    assert stop_after(turning, fault_ns=0, tolerance=0.01) is None


def test_the_hall_is_walled_and_free_between_start_and_far_goal():
    origin, cells = hall()
    assert (cells[[0, -1], :] == 100).all() and (cells[:, [0, -1]] == 100).all()
    row = int((START[1] - origin[1]) / 0.05)
    cols = slice(int(START[0] / 0.05), int(FAR[0] / 0.05) + 1)
    assert (cells[row - 10 : row + 11, cols] == 0).all()


def test_a_drive_whose_safety_node_died_ends_canceled_for_it_short_of_the_goal():
    at_goal, short = Sample(1, FAR[0] - 0.1, FAR[1], 0.0, 0.0), Sample(1, 5.0, FAR[1], 0.0, 0.0)
    silent = 'canceled: no state from safety_node on safety/state for 1.0 s'
    assert ended_for_safety('canceled', silent, short)
    assert not ended_for_safety('canceled', silent, at_goal)
    assert not ended_for_safety('reached', 'arrived', at_goal)
    assert not ended_for_safety('canceled', 'canceled: e-stop engaged', short)
    assert not ended_for_safety('failed', "aborted: 'no progress, 19.00 m from the goal'", short)
    assert not ended_for_safety('unanswered', 'no answer yet', short)


def test_the_lesson_model_answers_questions_and_reflects_each_kind_or_is_away():
    model = LessonModel()
    try:

        def ask(system: str, user: str) -> tuple[int, dict]:
            body = {
                'messages': [
                    {'role': 'system', 'content': system},
                    {'role': 'user', 'content': user},
                ]
            }
            request = urllib.request.Request(
                f'{model.base_url}/chat/completions', json.dumps(body).encode(), method='POST'
            )
            try:
                with urllib.request.urlopen(request, timeout=10) as reply:
                    return reply.status, json.loads(reply.read())
            except urllib.error.HTTPError as error:
                return error.code, {}

        status, answer = ask('You answer questions.', KINDS[1][0])
        call = answer['choices'][0]['message']['tool_calls'][0]['function']
        assert status == 200 and call['name'] == 'final_answer'
        status, lesson = ask(f'{SYSTEM_START} ...', f'Question: "{KINDS[2][0]}"')
        reply = json.loads(lesson['choices'][0]['message']['content'])
        assert status == 200 and reply['transferable_lesson'] == KINDS[2][1]
        model.away.set()
        assert ask(f'{SYSTEM_START} ...', KINDS[2][0])[0] == 503
        assert ask('You answer questions.', KINDS[1][0])[0] == 200  # questions still answered
        assert model.reflections == 1
    finally:
        model.close()
