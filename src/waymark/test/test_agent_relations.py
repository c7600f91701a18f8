# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Instances named by their neighbours: the phrase parser, the anchor-then-instance search
on a real memory holding two identical blue cones, and the agent answering with it."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from waymark.agent.agent import Agent, AgentConfig, AgentQuestion
from waymark.agent.llm import ChatClient, LLMConfig
from waymark.agent.relations import (
    IN,
    NEAR,
    NEAREST,
    OPPOSITE,
    Relation,
    RelationalSearch,
    RelationParams,
    parse_relation,
)
from waymark.agent.trace import TraceWriter
from waymark.geometry import Pose
from waymark.memory.entries import FRAME, Keyframe
from waymark.memory.search_query import Mode, SearchQuery
from waymark.memory.service import MemoryService
from waymark.memory.storage.image_store import ImageStore
from waymark.memory.storage.store import MemoryStore
from waymark.memory.views.ocr import TextLine
from waymark.memory.views.text import TextView
from waymark.memory.views.view import level_dims
from waymark_testing.agent_memory import WordEmbedder
from waymark_testing.scripted_planner import planner_server

S = 1_000_000_000
T0 = 1_760_000_000 * S
NOW = T0 + 3600 * S


@pytest.mark.parametrize(
    ('phrase', 'expected'),
    [
        ('Where is the blue cone next to the stairs sign?', ('blue cone', NEAR, 'stairs sign')),
        ('blue cone next to the stairs', ('blue cone', NEAR, 'stairs')),
        ('Where did I see the barrel near the BAKERY sign?', ('barrel', NEAR, 'BAKERY sign')),
        ('the chair beside the window', ('chair', NEAR, 'window')),
        ('Where are the grey keys by the door?', ('grey keys', NEAR, 'door')),
        ('Where was the bin close to the lift?', ('bin', NEAR, 'lift')),
        ('the bench opposite the fountain', ('bench', OPPOSITE, 'fountain')),
        ('Where is the kiosk across from the station?', ('kiosk', OPPOSITE, 'station')),
        ('Where is the kiosk nearest to the fountain?', ('kiosk', NEAREST, 'fountain')),
        ('the cone closest to the stairs', ('cone', NEAREST, 'stairs')),
        ('the nearest bin to the exit', ('bin', NEAREST, 'exit')),
        ('the cone that is next to the stairs', ('cone', NEAR, 'stairs')),
        ('Where is the fire extinguisher in the kitchen?', ('fire extinguisher', IN, 'kitchen')),
        ('Where is the blue cone in the PANTRY room?', ('blue cone', IN, 'PANTRY')),
        ('Where is the blue cone in the storage room?', ('blue cone', IN, 'storage')),
        ('Take me to the plant at the reception.', ('plant', 'at', 'reception')),
        ('Did I see a red barrel in the kitchen?', ('red barrel', IN, 'kitchen')),
        ('Where  is   the blue cone\nnext to the stairs', ('blue cone', NEAR, 'stairs')),
    ],
)
def test_a_phrase_naming_an_anchor_splits_into_instance_relation_and_anchor(phrase, expected):
    assert parse_relation(phrase) == Relation(*expected)


@pytest.mark.parametrize(
    'phrase',
    [
        'Where is the bakery?',
        'blue cone',
        'the nearest cafe',
        'Where was I at 10:05?',
        'Where is the coffee shop near me?',
        'Where did I see the cone between the stairs and the lift?',
        'Where was the bin on the way from the office to the station?',
        'the cone from the stairs to the lift',
        'Where did I see this?',
        'Where is the thing in this photo?',
        'Where was the bin in the morning?',
        'Where was the cone at 9 am?',
        'When did I last see the bakery sign?',
        'the NEXT TO NOTHING sign',
        '',
    ],
)
def test_a_phrase_without_an_anchor_or_a_route_gives_no_relation(phrase):
    assert parse_relation(phrase) is None


def test_relation_params_are_validated():
    for bad in (
        {'max_anchors': 0},
        {'radius_m': 0.0},
        {'match_margin': -1.0},
        {'range_k': 0},
        {'min_target_similarity': 1.5},
    ):
        with pytest.raises(ValueError):
            RelationParams(**bad)


# -- a corridor with two identical blue cones, one near the stairs, one near the lift --------

WORDS = ('floor', 'stairs', 'lift', 'blue cone', 'pantry')
STEP = 40
HALL = 'hall'
# One frame a metre along y=0; what each frame reads.
SIGNS = {4: 'stairs', 8: 'blue cone', 26: 'blue cone', 30: 'lift'}
FRAMES = 36


def picture(word: str) -> bytes:
    ok, data = cv2.imencode('.jpg', np.full((48, 64, 3), STEP * (WORDS.index(word) + 1), np.uint8))
    assert ok
    return data.tobytes()


class BrightnessReader:
    """An "OCR" reading a word from a picture's brightness (see `picture`)."""

    def read(self, image):
        level = round(float(image.mean()) / STEP) - 1
        if not 0 <= level < len(WORDS):
            return []
        return [TextLine(WORDS[level].upper(), 1.0, ((0, 0), (9, 0), (9, 8), (0, 8)))]


@pytest.fixture(scope='module')
def memory(tmp_path_factory):
    directory = tmp_path_factory.mktemp('relations_memory')
    views = [TextView(WordEmbedder(), BrightnessReader())]
    store = MemoryStore(str(directory / 'memory.db'), level_dims(views, FRAME))
    service = MemoryService(store, ImageStore(directory), views)
    for frame in range(FRAMES):
        service.ingest(
            Keyframe(
                session=HALL,
                index=frame,
                stamp_ns=T0 + frame * S,
                pose=Pose.from_xyz_yaw(float(frame), 0.0, 0.4, 0.0),
                pose_valid=True,
                map_epoch=1,
                image=picture(SIGNS.get(frame, 'floor')),
            )
        )
    yield service
    store.close()


def relational(memory: MemoryService, **params) -> RelationalSearch:
    return RelationalSearch(memory.search, SearchQuery, RelationParams(**params))


def test_plain_similarity_cannot_tell_the_two_cones_apart(memory):
    tops = {
        memory.search(SearchQuery(Mode.TEXT, 1, text=f'blue cone next to the {y}'))[0].record.id
        for y in WORDS[1:3]
    }
    assert len(tops) == 1  # the same cone for both questions: one of them is wrong


@pytest.mark.parametrize(('anchor', 'cone'), [('stairs', 'hall/8'), ('lift', 'hall/26')])
def test_each_cone_is_found_by_its_anchor(memory, anchor, cone):
    result = relational(memory).run(Relation('blue cone', NEAR, anchor), 5)
    assert [hit.record.id for hit in result.hits] == [cone]
    assert result.anchors[0].record.text == anchor.upper()
    # anchor, instance overall, then per anchor sighting: its range and its one pass
    assert result.retrievals == 2 + 2 * len(result.anchors)


def test_an_instance_beyond_the_radius_is_not_claimed(memory):
    result = relational(memory, radius_m=2.0).run(Relation('blue cone', NEAR, 'stairs'), 5)
    assert result.hits == [] and 'within 2 m' in result.why


def test_an_anchor_memory_never_saw_gives_no_hits(memory):
    result = relational(memory).run(Relation('blue cone', IN, 'pantry'), 5)
    assert result.hits == [] and 'no sighting' in result.why


def test_an_instance_memory_cannot_recognise_is_answered_by_the_anchor_sightings(memory):
    result = relational(memory).run(Relation('red barrel', NEAR, 'lift'), 5)
    assert [hit.record.id for hit in result.hits] == ['hall/30'] and 'anchor' in result.why


def test_the_hit_position_can_come_from_localisation(memory):
    """A position_of that puts the stairs' sighting far off moves the neighbourhood too."""
    search = relational(memory)
    search.position_of = lambda hit, query: (
        hit.record.x + (20.0 if query == 'stairs' else 0.0),
        0.0,
    )
    result = search.run(Relation('blue cone', NEAR, 'stairs'), 5)
    assert [hit.record.id for hit in result.hits] == ['hall/26']


def chat(base_url: str) -> ChatClient:
    return ChatClient(LLMConfig(base_url=base_url, model='scripted/planner', max_retries=0))


@pytest.mark.parametrize(('anchor', 'cone'), [('stairs', 8), ('lift', 26)])
def test_the_scripted_agent_answers_with_the_cone_next_to_the_anchor(
    memory, tmp_path, anchor, cone
):
    traces = TraceWriter(tmp_path)
    images = lambda record: memory.image_store.get(record.image_ref)  # noqa: E731
    with planner_server() as server:
        agent = Agent(chat(server.base_url), memory, images, AgentConfig(), traces=traces)
        answer = agent.ask(AgentQuestion(f'Where is the blue cone next to the {anchor}?', NOW))
    assert not answer.used_fallback
    # The goal stands off from the located cone: near the right one (8 m and 26 m apart).
    assert abs(answer.goal.x - cone) < 2.0 and abs(answer.goal.y) < 0.5
    [step] = [s for s in traces.read(answer.trace_id)['steps'] if s['tool'] != 'final_answer']
    assert step['anchor']['relation'] == {'target': 'blue cone', 'relation': NEAR, 'anchor': anchor}
    assert step['anchor']['found'][0] == f'{HALL}/{cone}'


def test_the_fallback_finds_the_instance_by_its_anchor_too(memory):
    images = lambda record: memory.image_store.get(record.image_ref)  # noqa: E731
    answer = Agent(None, memory, images).ask(
        AgentQuestion('Where is the blue cone next to the lift?', NOW)
    )
    assert answer.used_fallback and abs(answer.goal.x - 26.0) < 2.0


def test_relations_can_be_turned_off(memory):
    images = lambda record: memory.image_store.get(record.image_ref)  # noqa: E731
    config = AgentConfig(relations=RelationParams(enabled=False))
    answers = {
        Agent(None, memory, images, config)
        .ask(AgentQuestion(f'Where is the blue cone next to the {anchor}?', NOW))
        .evidence[0]
        .record.id
        for anchor in ('stairs', 'lift')
    }
    assert len(answers) == 1  # plain similarity: one cone for both
