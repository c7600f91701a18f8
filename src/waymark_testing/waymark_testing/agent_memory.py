# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""A small real memory for the agent tests, and scripted models that read it.

The memory is a MemoryService on Milvus Lite with frames and 1.5 s segments, built with
stand-in models so that it is fast and exact:

- `WordEmbedder`: a hashed bag of words (texts sharing a word are similar, others are
  nearly orthogonal);
- `SignReader`: "OCR" that reads a sign's word from the picture's brightness, so every
  picture says exactly one known thing.

Two recordings are stored:

- `route`: an out-and-back walk. Out along y=0 from the office (x=0.5) past a coffee shop
  (x=11) and a bakery (x=18.5) to the station (x=29); back along y=3 past a second coffee
  shop (x=14, off the outbound route). 120 frames, 0.5 s and 0.5 m apart, 40 segments
  (0-19 out, 20-39 back).
- `plaza`: a square with a kiosk at one end, and another kiosk between two fountains at
  the other ("the kiosk nearest to the fountain").

The scripted models are policies for `ScriptedLLMServer`: an agent that cites what it
was shown, and a verifier that "looks" at the candidate pictures by decoding them the way
`SignReader` does, so that it picks exactly the candidates that show the target.
"""

from __future__ import annotations

import math
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from waymark.geometry import Pose
from waymark.memory.entries import FRAME, SEGMENT, FrameRecord, Hit, Keyframe
from waymark.memory.ingest.segment_memory import SegmentMemory
from waymark.memory.ingest.segments import Segmenter
from waymark.memory.search_query import SearchQuery
from waymark.memory.service import MemoryService
from waymark.memory.storage.image_store import ImageStore
from waymark.memory.storage.store import MemoryStore
from waymark.memory.views.ocr import TextLine
from waymark.memory.views.text import TextView
from waymark.memory.views.view import level_dims
from waymark_testing.scripted_llm import Policy, Step, http_error, tool_call
from waymark_testing.scripted_vlm import verifier_policy

S = 1_000_000_000
HALF_SECOND = S // 2
T0 = 1_750_000_000 * S  # 2025-06-15 15:06:40 UTC
PLAZA_T0 = T0 + 3600 * S
NOW = T0 + 2 * 3600 * S

# Sign words; a picture of word i has brightness BRIGHTNESS_STEP * (i + 1).
WORDS = (
    'corridor',
    'office',
    'coffee shop',
    'bakery',
    'station',
    'paving',
    'kiosk',
    'kiosk news',
    'fountain',
)
BRIGHTNESS_STEP = 24

ROUTE = 'route'
ROUTE_FRAMES = 120
ROUTE_EPOCH = 2
ROUTE_SIGNS = {1: 'office', 22: 'coffee shop', 37: 'bakery', 58: 'station', 91: 'coffee shop'}
ROUTE_FILLER = 'corridor'
# Segment indices (three frames each) of the route's signs.
OFFICE_SEGMENT, COFFEE_SEGMENT, BAKERY_SEGMENT, STATION_SEGMENT, RETURN_COFFEE_SEGMENT = (
    0,
    7,
    12,
    19,
    30,
)

PLAZA = 'plaza'
PLAZA_FRAMES = 30
PLAZA_SIGNS = {2: 'kiosk', 23: 'fountain', 25: 'kiosk news', 28: 'fountain'}
PLAZA_FILLER = 'paving'


class WordEmbedder:
    """Bag of hashed words: texts sharing a word are similar."""

    dim = 256

    def embed_texts(self, texts):
        vectors = np.zeros((len(texts), self.dim), np.float32)
        for row, words in enumerate(texts):
            for word in re.findall(r'[a-z]+', words.lower()):
                vectors[row, word_slot(word)] += 1.0
        vectors[:, 0] += 1e-3  # never all zero
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


# Each sign word has a dimension of its own; other words share the rest by hash.
SIGN_VOCABULARY = tuple(dict.fromkeys(w for text in WORDS for w in text.split()))


def word_slot(word: str) -> int:
    if word in SIGN_VOCABULARY:
        return 1 + SIGN_VOCABULARY.index(word)
    first = 1 + len(SIGN_VOCABULARY)
    return first + zlib.crc32(word.encode()) % (WordEmbedder.dim - first)


def sign_jpeg(word: str) -> bytes:
    image = np.full((48, 64, 3), BRIGHTNESS_STEP * (WORDS.index(word) + 1), np.uint8)
    ok, data = cv2.imencode('.jpg', image)
    assert ok
    return data.tobytes()


def _word_of(patch: np.ndarray) -> str | None:
    level = round(float(patch.mean()) / BRIGHTNESS_STEP) - 1
    return WORDS[level] if 0 <= level < len(WORDS) else None


class SignReader:
    """Reads the sign's word from the brightness of the picture (see `sign_jpeg`)."""

    def read(self, image):
        word = _word_of(image)
        if word is None:
            return []
        return [TextLine(word.upper(), 1.0, ((0, 0), (9, 0), (9, 8), (0, 8)))]


def words_in_picture(jpeg: bytes) -> list[str]:
    """The sign words a picture shows: one for a frame, up to four for a segment's 2x2
    grid (its black tiles show nothing)."""
    image = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
    assert image is not None, 'not a JPEG'
    height, width = image.shape[:2]
    if (width, height) != (640, 480):
        word = _word_of(image)
        return [word] if word else []
    found = []
    for top in (0, 240):
        for left in (0, 320):
            word = _word_of(image[top + 100 : top + 140, left + 140 : left + 180])
            if word:
                found.append(word)
    return found


@dataclass(frozen=True)
class Place:
    x: float
    y: float
    z: float
    yaw: float


def route_pose(frame: int) -> Place:
    """Out along y=0 for frames 0-59, back along y=3 for frames 60-119."""
    if frame < 60:
        return Place(0.5 * frame, 0.0, 0.4, 0.1 + 0.001 * frame)
    return Place(0.5 * (119 - frame), 3.0, 0.4, 3.0 - 0.001 * (frame - 60))


def plaza_pose(frame: int) -> Place:
    return Place(100.0 + 0.5 * frame, 50.0, 0.2, 1.0)


def route_word(frame: int) -> str:
    return ROUTE_SIGNS.get(frame, ROUTE_FILLER)


def plaza_word(frame: int) -> str:
    return PLAZA_SIGNS.get(frame, PLAZA_FILLER)


def segment_centre(session: str, segment: int) -> tuple[float, float]:
    pose = route_pose if session == ROUTE else plaza_pose
    places = [pose(3 * segment + offset) for offset in range(3)]
    return (sum(p.x for p in places) / 3, sum(p.y for p in places) / 3)


def build_memory(directory: Path) -> MemoryService:
    """Both recordings in a fresh store under `directory`; the caller closes `.store`."""
    views = [TextView(WordEmbedder(), SignReader())]
    store = MemoryStore(
        str(directory / 'memory.db'),
        level_dims(views, FRAME),
        segment_views=level_dims(views, SEGMENT),
    )
    images = ImageStore(directory)
    segments = SegmentMemory(store, images, Segmenter(1.5), views)
    service = MemoryService(store, images, views, segments)
    recordings = [
        (ROUTE, T0, ROUTE_FRAMES, route_pose, route_word, ROUTE_EPOCH),
        (PLAZA, PLAZA_T0, PLAZA_FRAMES, plaza_pose, plaza_word, 0),
    ]
    for session, start, count, pose, word, epoch in recordings:
        for frame in range(count):
            place = pose(frame)
            service.ingest(
                Keyframe(
                    session=session,
                    index=frame,
                    stamp_ns=start + frame * HALF_SECOND,
                    pose=Pose.from_xyz_yaw(place.x, place.y, place.z, place.yaw),
                    pose_valid=True,
                    map_epoch=epoch,
                    image=sign_jpeg(word(frame)),
                )
            )
    service.close_segments()
    return service


class CountingMemory:
    """The memory, noting the mode of each search made of it."""

    def __init__(self, memory: MemoryService) -> None:
        self.memory = memory
        self.calls: list[str] = []

    def search(self, query: SearchQuery) -> list[Hit]:
        self.calls.append(query.mode)
        return self.memory.search(query)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.memory, name)


def image_loader(service: MemoryService) -> Callable[[FrameRecord], bytes | None]:
    return lambda record: service.image_store.get(record.image_ref) if record.image_ref else None


# -- scripted models -----------------------------------------------------------------------


def scripted(*steps: Step | Callable[[dict[str, Any]], Step]) -> Policy:
    """A policy playing `steps` in order; a callable step is given the request body. Once
    used up it answers HTTP 500, so an under-scripted test fails loudly."""
    queue = list(steps)

    def policy(body: dict[str, Any]) -> Step:
        if not queue:
            return http_error(500, '{"error": {"message": "script used up"}}')
        step = queue.pop(0)
        return step(body) if callable(step) else step

    return policy


HIT_LINE = re.compile(
    r'^\[(?P<id>[^\]]+)\] (?P<score>[^;]+); seen (?P<when>[^;]+); at x=(?P<x>-?[\d.]+) '
    r'y=(?P<y>-?[\d.]+) z=(?P<z>-?[\d.]+) m, heading (?P<deg>-?\d+) deg',
    re.M,
)


@dataclass(frozen=True)
class ShownHit:
    id: str
    x: float
    y: float
    z: float
    yaw: float


def tool_results(body: dict[str, Any]) -> list[str]:
    """The contents of the tool messages in a request, in order."""
    return [m['content'] for m in body['messages'] if m['role'] == 'tool']


def shown_hits(content: str) -> list[ShownHit]:
    """The hits listed in a tool message, as the model would read them."""
    return [
        ShownHit(
            m['id'],
            float(m['x']),
            float(m['y']),
            float(m['z']),
            math.radians(float(m['deg'])),
        )
        for m in HIT_LINE.finditer(content)
    ]


def answer_with_first_hit(kind: str = 'position', text_: str = 'Found it.') -> Callable:
    """A step answering with the first hit of the latest tool result that showed hits,
    its pose copied."""

    def step(body: dict[str, Any]) -> Step:
        first = next(hits[0] for hits in map(shown_hits, reversed(tool_results(body))) if hits)
        return tool_call(
            'final_answer',
            {
                'kind': kind,
                'text': text_,
                'evidence_ids': [first.id],
                'goal': {'x': first.x, 'y': first.y, 'z': first.z, 'yaw': first.yaw},
                'confidence': 0.9,
            },
        )

    return step


def _words_in(jpeg: bytes) -> set[str]:
    return {w for word in words_in_picture(jpeg) for w in word.split()}


# A verifier that picks the candidates whose pictures show every word of the target.
oracle_verifier = verifier_policy(_words_in)
