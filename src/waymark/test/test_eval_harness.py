# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The harness on a short recorded tour, memory built directly: a row per level and view,
segments in memory and in the report, and builds of another format or setting redone.

The tiny random SigLIP keeps this fast (no OCR); its answers mean nothing, so only what
the rows are and where their answers come from is checked, not how good they are.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math

import pytest
from PIL import Image

from waymark.evaluation.harness import (
    MEMORY_FORMAT,
    EvaluationConfig,
    build_settings,
    close_memory,
    open_memory,
    run,
)
from waymark.evaluation.questions import Question, QuestionSet, save_questions
from waymark.evaluation.suite import table, view_table
from waymark.memory.entries import SEGMENT, CameraModel
from waymark.memory.search_query import Mode, SearchQuery
from waymark.memory.views.captioner import CAPTION_VIEWS
from waymark.sim.bag import DEPTH_TOPIC, write_bag
from waymark.sim.world import build_demo_world
from waymark_testing.scripted_llm import ScriptedLLMServer, text

ROWS = (
    'embedder-only',
    'embedder-only/image',
    'embedder-only/segment',
    'embedder-only/segment/image',
    'random-entry',
)


@pytest.fixture(scope='module')
def recording(tmp_path_factory):
    """A 20 s tour in small frames and one question of each answer type."""
    root = tmp_path_factory.mktemp('harness')
    info = write_bag(
        build_demo_world(seed=2),
        root / 'bag',
        camera_rate_hz=2.0,
        width=160,
        height=120,
        max_duration_s=20,
    )
    truth = json.loads(info.ground_truth.read_text())
    sign = truth['world']['signs'][0]
    Image.new('RGB', (160, 120), (200, 180, 90)).save(root / 'photo.png')
    questions = [
        Question(
            id='where',
            category='basic',
            question=f'Where is the {sign["text"].lower()}?',
            answer_type='position',
            position=tuple(sign['position']),
        ),
        Question(
            id='when',
            category='temporal',
            question=f'When did I pass the {sign["text"].lower()}?',
            answer_type='time',
            time_ns=truth['start_ns'],
        ),
        Question(
            id='photo',
            category='image',
            question='Where was this photo taken?',
            answer_type='position',
            position=tuple(sign['position']),
            image='photo.png',
        ),
        Question(
            id='zebra', category='yes_no', question='A zebra?', answer_type='yes_no', yes=False
        ),
    ]
    path = root / 'questions.json'
    save_questions(QuestionSet(world='demo-2', questions=questions), path)
    return info.path, path


def config(recording, out, tiny_siglip, **overrides) -> EvaluationConfig:
    bag, questions = recording
    return EvaluationConfig(
        bag, questions, out, image_model=tiny_siglip, text_model='', progress=False, **overrides
    )


def test_each_level_and_view_gets_a_row_and_segments_answer_with_their_pose(
    recording, tmp_path, tiny_siglip
):
    settings = config(recording, tmp_path / 'eval', tiny_siglip)
    report = run(settings)
    memory = report['memory']
    assert 0 < memory['segments'] < memory['frames'] == memory['entries']
    assert memory['views'] == memory['segment_views'] == ['image']
    assert tuple(report['answerers']) == ROWS
    for name in ROWS:
        overall = report['answerers'][name]['overall']
        assert overall['answered'] == overall['questions'] == 4, name
    # α counts the entries of the level searched.
    frame_alpha = report['answerers']['embedder-only']['overall']['retrieval_efficiency']
    segment_alpha = report['answerers']['embedder-only/segment']['overall']['retrieval_efficiency']
    assert frame_alpha == pytest.approx(5 / memory['frames'])
    assert segment_alpha == pytest.approx(5 / memory['segments'])

    opened = open_memory(settings, settings.out / 'memory')
    try:
        segments = opened.search(SearchQuery(Mode.TIME, 1000, level=SEGMENT))
        frames = opened.search(SearchQuery(Mode.TIME, 1000))
    finally:
        opened.store.close()
    assert len(segments) == memory['segments'] and len(frames) == memory['frames']
    # The bag has no CameraInfo: every frame gets the renderer's field of view (90 deg at
    # 160x120 px), which its ground truth states.
    assert report['sensors']['intrinsics']['source'] == "the bag's ground truth"
    camera = CameraModel(160, 120, 80.0, 80.0, 80.0, 60.0)
    assert {h.record.sighting.camera for h in frames} == {camera}
    assert all(h.record.sighting is None for h in segments)
    poses = {(round(h.record.x, 6), round(h.record.y, 6)) for h in segments}
    for row in report['answerers']['embedder-only/segment']['predictions']:
        if row['goal'] is not None:
            assert (round(row['goal'][0], 6), round(row['goal'][1], 6)) in poses
    # A segment is the mean of its frames: its pose lies between theirs, not on one of them.
    first = segments[0].record
    inside = [h.record for h in frames if first.stamp_ns <= h.record.stamp_ns < first.end_ns]
    assert inside and math.isclose(first.x, sum(r.x for r in inside) / len(inside))

    report_md = (settings.out / 'report.md').read_text()
    assert f'{memory["segments"]} segments of 1.5 s' in report_md
    results = {'demo-2': {'report': report, 'wall_s': 1.0}}
    assert table(results).count('| demo-2 |') == len(ROWS)
    views = view_table(results)
    assert '| demo-2 | segment | image |' in views and 'random-entry' not in views


def test_a_build_of_another_format_or_window_is_redone_and_answered_again(
    recording, tmp_path, tiny_siglip
):
    settings = config(recording, tmp_path / 'eval', tiny_siglip, answerers=('embedder-only',))
    run(settings)
    marker = settings.out / 'memory' / 'ingested.json'
    built = json.loads(marker.read_text())
    assert built['build']['format'] == MEMORY_FORMAT and built['segments'] > 0
    stamp = marker.stat().st_mtime_ns
    run(settings)
    assert marker.stat().st_mtime_ns == stamp  # same format and settings: reused

    # A memory/ from before segments: no build settings in its marker.
    del built['build']
    marker.write_text(json.dumps(built))
    log = settings.out / 'predictions-embedder-only.jsonl'
    log.write_text(log.read_text().replace('"answered": true', '"answered": false'))
    again = run(settings)
    assert json.loads(marker.read_text())['build']['format'] == MEMORY_FORMAT
    assert again['answerers']['embedder-only']['overall']['answered'] == 4  # not the stale log

    frames_only = run(config(recording, tmp_path / 'eval', tiny_siglip, segment_window_s=0.0))
    assert frames_only['memory']['segments'] == 0
    assert tuple(frames_only['answerers']) == (
        'embedder-only',
        'embedder-only/image',
        'random-entry',
    )


def test_with_a_captioner_segments_are_captioned_and_found_by_their_captions(
    recording, tmp_path, tiny_siglip
):
    """A stand-in VLM gives the first segment a caption naming something no frame shows
    and every other segment a bland one: only the caption rows can find it."""
    bag, _ = recording
    questions = tmp_path / 'giraffe.json'
    giraffe = Question(
        id='giraffe',
        category='basic',
        question='Where is the purple giraffe statue?',
        answer_type='position',
        position=(0.0, 0.0, 0.0),
    )
    save_questions(QuestionSet(world='demo-2', questions=[giraffe]), questions)
    numbers = itertools.count(1)

    def captions(body: dict):  # the worker asks a segment's three views in turn
        if next(numbers) <= len(CAPTION_VIEWS):
            return text('A purple giraffe statue stands beside the stairs.')
        return text('An empty grey hallway with plain walls.')

    with ScriptedLLMServer(captions, model='scripted/vlm') as server:
        settings = EvaluationConfig(
            bag,
            questions,
            tmp_path / 'eval',
            image_model=tiny_siglip,
            text_model='default',
            ocr=False,
            progress=False,
            captioner_url=server.base_url,
        )
        report = run(settings)
        asked = len(server.requests)
        # A build redone (here: its marker lost) takes every caption from the kept cache.
        marker = settings.out / 'memory' / 'ingested.json'
        marker.write_text(json.dumps({}))
        again = run(settings)
        assert len(server.requests) == asked
        assert again['memory']['captions']['cache_hits'] == asked
        assert again['memory']['captions']['segments_captioned'] == report['memory']['segments']

    memory = report['memory']
    assert memory['captioner'] == 'scripted/vlm'  # the model the server lists first
    assert memory['segment_views'] == ['image', 'text', *CAPTION_VIEWS]
    assert memory['captions']['segments_captioned'] == memory['segments'] > 1
    assert asked == memory['captions']['requests'] == len(CAPTION_VIEWS) * memory['segments']
    assert memory['captions']['left_at_timeout'] == memory['captions']['failed'] == 0
    assert 'Segments captioned by scripted/vlm' in (settings.out / 'report.md').read_text()

    named = dataclasses.replace(settings, captioner_model='scripted/vlm')
    built = json.loads((settings.out / 'memory' / 'ingested.json').read_text())['build']
    assert built == build_settings(named) and built['captioner_model'] == 'scripted/vlm'
    assert 'captioner_model' not in build_settings(dataclasses.replace(named, captioner_url=''))

    opened = open_memory(named, settings.out / 'memory')
    try:
        segments = sorted(
            opened.search(SearchQuery(Mode.TIME, 1000, level=SEGMENT)),
            key=lambda h: h.record.stamp_ns,
        )
        ids = {hit.record.id for hit in segments}
        for view in CAPTION_VIEWS:
            assert opened.store.view_ids(SEGMENT, view) == ids, view
    finally:
        close_memory(opened)
    first = segments[0].record
    for view in CAPTION_VIEWS:
        row = report['answerers'][f'embedder-only/segment/{view}']['predictions'][0]
        assert row['goal'][:2] == pytest.approx([first.x, first.y]), view


def test_a_depth_bag_builds_ranged_frames_and_without_depth_is_built_again(
    recording, tmp_path, tiny_siglip
):
    _bag, questions = recording
    info = write_bag(
        build_demo_world(seed=2),
        tmp_path / 'bag',
        camera_rate_hz=1.0,
        width=160,
        height=120,
        max_duration_s=8,
        depth_camera=True,
    )
    settings = config(
        (info.path, questions), tmp_path / 'eval', tiny_siglip, answerers=('embedder-only',)
    )
    report = run(settings)
    # No preset: the ground truth names the depth topic, and every keyframe is ranged.
    assert report['sensors']['depth_topic'] == DEPTH_TOPIC[0]
    assert report['sensors']['depth_topic_from'] == "the bag's ground truth"
    assert report['ingest']['keyframes_with_depth'] == report['ingest']['keyframes'] > 0

    plain = run(dataclasses.replace(settings, depth_topic=''))
    assert plain['sensors']['depth_topic_from'] == 'flag --no-depth'
    assert plain['ingest']['keyframes_with_depth'] == 0  # built again, not the ranged build
    assert plain['ingest']['keyframes'] == report['ingest']['keyframes']
