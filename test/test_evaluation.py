# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The evaluation harness on a small generated world: both ways of building memory give
the same memory (frames and segments), the metrics are sane, and an interrupted run
resumes."""

from __future__ import annotations

import json

import pytest

from waymark.evaluation.harness import EvaluationConfig, open_memory, run
from waymark.evaluation.questions import Question, QuestionSet, save_questions
from waymark.memory.entries import FRAME, SEGMENT
from waymark.memory.search_query import Mode, SearchQuery
from waymark.sim.bag import write_bag
from waymark.sim.world import build_demo_world
from waymark_ros.tools.evaluate import build_over_dds

pytestmark = pytest.mark.dds


@pytest.fixture(scope='module')
def recording(tmp_path_factory):
    """A 60 s tour of a small world and one question per sign it stopped at."""
    root = tmp_path_factory.mktemp('evaluation')
    info = write_bag(build_demo_world(seed=2), root / 'bag', camera_rate_hz=3.0, max_duration_s=60)
    truth = json.loads(info.ground_truth.read_text())
    seen = {v['text'] for v in truth['sign_views'] if v['end_ns'] <= truth['end_ns']}
    questions = [
        Question(
            id=f'sign-{i}',
            category='basic',
            question=f'Where is the {sign["text"].lower()}?',
            answer_type='position',
            position=tuple(sign['position']),
        )
        for i, sign in enumerate(truth['world']['signs'])
        if sign['text'] in seen
    ]
    questions.append(
        Question(
            id='never',
            category='yes_no',
            question='Did I see a zebra?',
            answer_type='yes_no',
            yes=False,
        )
    )
    assert len(questions) >= 3
    path = root / 'questions.json'
    save_questions(QuestionSet(world='demo-2', questions=questions), path)
    return info.path, path


def records(config: EvaluationConfig, level: str = FRAME):
    memory = open_memory(config, config.out / 'memory')
    try:
        hits = memory.search(SearchQuery(Mode.TIME, memory.store.max_k, level=level))
        return [
            (
                h.record.session,
                h.record.index,
                h.record.stamp_ns,
                h.record.end_ns,
                round(h.record.x, 6),
                round(h.record.y, 6),
                round(h.record.yaw, 6),
                h.record.text,
            )
            for h in hits
        ]
    finally:
        memory.store.close()


def test_direct_and_dds_builds_give_the_same_memory_and_sane_metrics(recording, tmp_path):
    bag, questions = recording
    direct = EvaluationConfig(bag, questions, tmp_path / 'direct', progress=False)
    report = run(direct)
    dds = EvaluationConfig(bag, questions, tmp_path / 'dds', progress=False)
    report_dds = run(dds, build_over_dds)

    assert report['complete'] and report_dds['complete']
    assert report['memory']['mode'] == 'direct' and report_dds['memory']['mode'] == 'dds'
    direct_records, dds_records = records(direct), records(dds)
    assert len(direct_records) == report['memory']['entries'] > 10
    assert direct_records == dds_records
    direct_segments = records(direct, SEGMENT)
    assert len(direct_segments) == report['memory']['segments'] > 0
    assert direct_segments == records(dds, SEGMENT)
    assert {'embedder-only/text', 'embedder-only/segment', 'embedder-only/segment/text'} <= set(
        report['answerers']
    )

    embedder = report['answerers']['embedder-only']['per_category']['basic']
    random_entry = report['answerers']['random-entry']['per_category']['basic']
    assert embedder['success_at']['5'] == 1.0  # every sign it stopped at is found
    assert embedder['mean_position_error_m'] < random_entry['mean_position_error_m']
    assert 0 < report['answerers']['embedder-only']['overall']['retrieval_efficiency'] < 1
    segment = report['answerers']['embedder-only/segment']['per_category']['basic']
    assert segment['answered'] == segment['questions']
    assert segment['mean_position_error_m'] < random_entry['mean_position_error_m']
    for name in ('report.json', 'report.md', 'map.png', 'error_cdf.png', 'categories.png'):
        assert (direct.out / name).stat().st_size > 0


def test_an_interrupted_run_resumes_without_redoing_or_trusting_half_work(recording, tmp_path):
    bag, questions = recording
    config = EvaluationConfig(
        bag, questions, tmp_path / 'run', answerers=('embedder-only',), progress=False
    )
    first = run(config)
    marker = config.out / 'memory' / 'ingested.json'
    built = marker.stat().st_mtime_ns
    # Interrupted while answering: one answer written, the next cut mid-line, no report.
    log = config.out / 'predictions-embedder-only.jsonl'
    log.write_text(log.read_text().splitlines()[0] + '\n{"question_id": "sign-')
    (config.out / 'report.json').unlink()
    second = run(config)
    assert marker.stat().st_mtime_ns == built  # memory was complete: not rebuilt
    before, after = first['answerers']['embedder-only'], second['answerers']['embedder-only']
    assert after['scores'] == before['scores']

    def answers(result: dict) -> list[dict]:  # latencies differ, answers must not
        return [{k: v for k, v in row.items() if k != 'latency_s'} for row in result['predictions']]

    assert answers(after) == answers(before)
    assert len(log.read_text().splitlines()) == first['questions']
    # Interrupted while building memory: the half-built memory is thrown away.
    marker.unlink()
    third = run(config)
    assert third['memory']['entries'] == first['memory']['entries']
