# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""End to end on a generated world: frames rendered along the tour, read by real OCR into
a real memory, and the embedder-only answerer's located targets scored against the signs.

Memory does not store sightings yet, so the test keeps each frame's sighting (the sim
camera's intrinsics and the OCR boxes) itself and hands them out with the hits.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import time

import cv2
import pytest

from waymark.evaluation.answerers import EmbedderOnlyAnswerer
from waymark.evaluation.metrics import evaluate
from waymark.evaluation.questions import Question
from waymark.localisation.estimate import TRIANGULATED
from waymark.memory.entries import FRAME, CameraModel, Keyframe, Sighting, TextBox
from waymark.memory.service import MemoryService
from waymark.memory.storage.image_store import ImageStore
from waymark.memory.storage.store import MemoryStore
from waymark.memory.views.text import TextView
from waymark.memory.views.view import level_dims
from waymark.sim.bag import DEFAULT_EXTRINSIC
from waymark.sim.generate import generate_world
from waymark.sim.render import render
from waymark.sim.trajectory import plan_tour
from waymark.sim.visibility import sees
from waymark_testing.agent_memory import WordEmbedder

SEED = 0
WIDTH, HEIGHT, HFOV_DEG = 480, 360, 90.0
RATE_HZ = 0.25  # keyframes a second: few, because OCR is the slow part


class RecordingReader:
    """The real OCR, keeping what it read last (the frame being prepared)."""

    def __init__(self, reader) -> None:
        self.reader = reader
        self.lines = []

    def read(self, image):
        self.lines = self.reader.read(image)
        return self.lines


class SightedMemory:
    """The memory service, with each hit's record carrying its frame's sighting."""

    def __init__(self, service: MemoryService, sightings: dict[str, Sighting]) -> None:
        self.service = service
        self.sightings = sightings

    def __getattr__(self, name):
        return getattr(self.service, name)

    def search(self, query):
        return [
            dataclasses.replace(
                hit, record=dataclasses.replace(hit.record, sighting=self.sightings[hit.record.id])
            )
            for hit in self.service.search(query)
        ]


def boxes(lines, width: int, height: int) -> tuple[TextBox, ...]:
    out = []
    for line in lines:
        xs, ys = [x for x, _ in line.box], [y for _, y in line.box]
        out.append(
            TextBox(line.text, min(xs) / width, min(ys) / height, max(xs) / width, max(ys) / height)
        )
    return tuple(out)


@pytest.fixture(scope='module')
def toured(tmp_path_factory, text_reader):
    """Memory of the frames that see a sign, and one question per sign read."""
    root = tmp_path_factory.mktemp('localisation_world')
    world = generate_world(SEED, 'small')
    tour = plan_tour(world, seed=SEED)
    camera = CameraModel.from_hfov(WIDTH, HEIGHT, HFOV_DEG)
    reader = RecordingReader(text_reader)
    views = [TextView(WordEmbedder(), reader)]
    store = MemoryStore(str(root / 'memory.db'), level_dims(views, FRAME))
    service = MemoryService(store, ImageStore(root), views)
    sightings, started = {}, time.monotonic()
    for index, stamp in enumerate(tour.stamps(RATE_HZ)):
        pose = tour.pose_at(int(stamp)).compose(DEFAULT_EXTRINSIC)
        if not any(sees(world, pose, sign, HFOV_DEG) for sign in world.signs):
            continue
        ok, jpeg = cv2.imencode('.jpg', render(world, pose, WIDTH, HEIGHT, HFOV_DEG)[..., ::-1])
        assert ok
        keyframe = Keyframe('tour', index, int(stamp), pose, True, 0, jpeg.tobytes())
        record = service.commit(service.prepare(keyframe))
        sightings[record.id] = Sighting(camera, boxes(reader.lines, WIDTH, HEIGHT))
    print(f'\n{len(sightings)} frames read in {time.monotonic() - started:.0f} s')
    read = ' '.join(box.text for sighting in sightings.values() for box in sighting.text_boxes)
    questions = [
        Question(
            id=f'sign-{i}',
            category='basic',
            question=f'Where is the {sign.text.lower()}?',
            answer_type='position',
            position=sign.position,
        )
        for i, sign in enumerate(world.signs)
        if sign.text in read
    ]
    yield SightedMemory(service, sightings), questions
    store.close()


def test_located_targets_are_nearer_the_signs_than_the_viewpoints(toured):
    memory, questions = toured
    assert len(questions) >= 3
    answerer = EmbedderOnlyAnswerer(memory)
    predictions = [answerer.answer(question) for question in questions]
    result = evaluate(questions, predictions)
    by_id = {q.id: q for q in questions}
    viewpoint_errors = [
        math.dist(p.viewpoint[:2], by_id[p.question_id].position[:2])
        for p in predictions
        if p.viewpoint is not None
    ]
    overall = result['overall']
    target_median = overall['median_target_error_m']
    viewpoint_median = statistics.median(viewpoint_errors)
    print(
        f'sign questions: {len(questions)}; median target error {target_median:.2f} m, '
        f'median viewpoint error {viewpoint_median:.2f} m; methods {overall["target_methods"]}'
    )
    assert overall['target_methods'].get(TRIANGULATED, 0) >= 1
    assert target_median < viewpoint_median
