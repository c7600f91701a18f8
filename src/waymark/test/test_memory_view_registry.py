# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""A new view is its module and one registry entry: a toy view registered here is
offered as a parameter, loaded, stored, searched and fused with no other edit."""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np
import pytest

from waymark.geometry import Pose
from waymark.memory.entries import SEGMENT, Keyframe
from waymark.memory.factory import MemoryConfig, load_models, open_memory
from waymark.memory.search_query import Mode, SearchQuery
from waymark.memory.views.image import mean_unit
from waymark.memory.views.registry import VIEWS, settings_of
from waymark.memory.views.text import TextView
from waymark.memory.views.view import Reading, View, ViewKind
from waymark.parameters.memory import MemoryParameters
from waymark.settings import setting, settings

T0 = 1_750_000_000 * 10**9
COLOURS = {'red': (1.0, 0.0, 0.0), 'green': (0.0, 1.0, 0.0), 'blue': (0.0, 0.0, 1.0)}
# (sign, background): one frame each, 2 s apart, so each is its own segment.
SCENE = [('PHARMACY', (200, 30, 30)), ('BAKERY', (30, 30, 200)), ('LIBRARY', (30, 200, 30))]


class ColourView(View):
    """The toy view: a frame's mean colour; a query names a colour."""

    name = 'colour'
    family = 'colour'
    pools_frames = True
    image_queries = True
    dim = 3

    def embed_text(self, text: str) -> np.ndarray:
        words = text.lower().split()
        hue = np.sum([COLOURS[w] for w in words if w in COLOURS] or [(1.0, 1.0, 1.0)], axis=0)
        return (hue / np.linalg.norm(hue)).astype(np.float32)

    def embed_image(self, image: np.ndarray) -> np.ndarray:
        mean = image.reshape(-1, 3).mean(axis=0)
        return (mean / np.linalg.norm(mean)).astype(np.float32)

    def read_frame(self, image: np.ndarray) -> Reading:
        return Reading(self.embed_image(image))

    def segment_vector(self, frame_vectors, text):
        return mean_unit(frame_vectors)


@dataclass(frozen=True)
class ColourViewSettings:
    colour_view: bool = setting(False, 'Keep each keyframe mean colour as a view.')


COLOUR = ViewKind(ColourViewSettings, lambda s: ColourView() if s.colour_view else None)
KINDS = (*VIEWS, COLOUR)


def test_every_registered_view_setting_is_a_memory_node_parameter():
    parameters = {info.name for info in settings(MemoryParameters)}
    for kind in VIEWS:
        assert {info.name for info in settings(kind.settings)} <= parameters
    assert {'image_model', 'text_model', 'ocr', 'ocr_min_confidence'} <= parameters


def test_a_registered_view_brings_its_settings_and_is_loaded_by_them():
    combined = settings_of(KINDS)
    names = [info.name for info in settings(combined)]
    assert names[-1] == 'colour_view' and 'text_model' in names

    assert load_models(combined(text_model=''), KINDS) == ()
    (view,) = load_models(combined(text_model='', colour_view=True), KINDS)
    assert isinstance(view, ColourView)


@pytest.fixture
def coloured(tmp_path, draw_sign, sentence_embedder, text_reader):
    views = (TextView(sentence_embedder, text_reader), ColourView())
    memory = open_memory(MemoryConfig(tmp_path, segment_window_s=1.5), views)
    for index, (text, background) in enumerate(SCENE):
        ok, data = cv2.imencode(
            '.jpg', cv2.cvtColor(draw_sign(text, background), cv2.COLOR_RGB2BGR)
        )
        assert ok
        memory.ingest(
            Keyframe(
                session='walk',
                index=index,
                stamp_ns=T0 + index * 2 * 10**9,
                pose=Pose.from_xyz_yaw(4.0 * index, 0.0, 0.0, 0.0),
                pose_valid=True,
                map_epoch=0,
                image=data.tobytes(),
            )
        )
    memory.close_segments()
    yield memory
    memory.store.close()


def test_a_new_view_is_stored_searched_and_fused(coloured, draw_sign):
    memory = coloured
    assert memory.store.views() == ['text', 'colour']
    assert memory.store.views(SEGMENT) == ['text', 'colour']
    assert memory.stats().views == {'text': 3, 'colour': 3}

    blue = memory.search(SearchQuery(Mode.TEXT, 1, views=['colour'], text='blue'))
    assert [(h.record.text, h.view) for h in blue] == [('BAKERY', 'colour')]
    green = memory.search(SearchQuery(Mode.TEXT, 1, level=SEGMENT, views=['colour'], text='green'))
    assert [h.record.text for h in green] == ['LIBRARY']
    photo = memory.search(SearchQuery(Mode.IMAGE, 1, image=draw_sign('', (220, 20, 20))))
    assert [(h.record.text, h.view) for h in photo] == [('PHARMACY', 'colour')]

    # The text view finds the bakery, the colour view the red frame: fused, both lead.
    fused = memory.search(SearchQuery(Mode.TEXT, 3, text='red BAKERY'))
    assert {(h.record.text, h.view) for h in fused[:2]} == {
        ('BAKERY', 'text'),
        ('PHARMACY', 'colour'),
    }
