# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Segments built by memory from real keyframes: views, grids, captions, restarts."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from waymark.geometry import Pose
from waymark.memory.entries import FRAME, SEGMENT, Keyframe
from waymark.memory.ingest.segment_memory import SegmentMemory
from waymark.memory.ingest.segments import Segmenter
from waymark.memory.search_query import Mode, SearchQuery
from waymark.memory.service import MemoryService
from waymark.memory.storage.image_store import ImageStore
from waymark.memory.storage.store import MemoryStore
from waymark.memory.views.captioner import CAPTION_VIEWS, CaptionJob
from waymark.memory.views.image import ImageView
from waymark.memory.views.text import TextView, caption_views
from waymark.memory.views.view import level_dims

T0 = 1_750_000_000 * 10**9
HALF_SECOND = 5 * 10**8
SIGNS = ['PHARMACY', 'BAKERY', 'LIBRARY', 'MUSEUM']


def jpeg(image_rgb: np.ndarray) -> bytes:
    ok, data = cv2.imencode('.jpg', cv2.cvtColor(image_rgb, cv2.COLOR_RGB2BGR))
    assert ok
    return data.tobytes()


class InlineCaptions:
    """Stands in for the VLM (none runs here): captions each segment at once with words
    that name the sign its frames show, so caption search can be checked."""

    def __init__(self, captions_by_grid: dict[int, str]) -> None:
        self.memory: SegmentMemory | None = None
        self.jobs: list[CaptionJob] = []
        self.captions_by_grid = captions_by_grid

    def submit(self, job: CaptionJob) -> bool:
        self.jobs.append(job)
        index = int(job.key.rsplit('/s', 1)[1])
        words = self.captions_by_grid.get(index, 'an empty corridor')
        self.memory.on_captions(job.key, {view: f'{words} ({view})' for view in CAPTION_VIEWS})
        return True


@pytest.fixture(scope='module')
def sign_jpegs(draw_sign):
    return {text: jpeg(draw_sign(text)) for text in SIGNS}


def build(root, image_embedder, sentence_embedder, reader, captions=None) -> MemoryService:
    views = [ImageView(image_embedder), TextView(sentence_embedder, reader)]
    if captions is not None:
        views.extend(caption_views(sentence_embedder))
    store = MemoryStore(
        str(root / 'memory.db'),
        level_dims(views, FRAME),
        segment_views=level_dims(views, SEGMENT),
    )
    images = ImageStore(root)
    segments = SegmentMemory(store, images, Segmenter(1.5), views, captions)
    if captions is not None:
        captions.memory = segments
    return MemoryService(store, images, views, segments)


def keyframe(step: int, data: bytes, session: str = 'walk') -> Keyframe:
    """One keyframe every half second, walking along x."""
    return Keyframe(
        session=session,
        index=step,
        stamp_ns=T0 + step * HALF_SECOND,
        pose=Pose.from_xyz_yaw(float(step), 0.0, 0.5, 0.0),
        pose_valid=True,
        map_epoch=0,
        image=data,
    )


def test_frames_group_into_dense_segments_with_mean_views_and_a_grid(
    tmp_path, image_text_embedder, sentence_embedder, text_reader, sign_jpegs
):
    memory = build(tmp_path, image_text_embedder, sentence_embedder, text_reader)
    # Three frames per 1.5 s window, one sign per window; then a 3 s gap (two empty windows).
    steps = [0, 1, 2, 3, 4, 5, 12, 13]
    for step in steps:
        memory.ingest(keyframe(step, sign_jpegs[SIGNS[min(step // 3, 2)]]))
    assert memory.store.count(level=SEGMENT) == 2  # the last window is still open
    assert memory.close_segments() == 1

    store = memory.store
    segments = store.search_index_range('walk', 0, 10, 10, SEGMENT)
    assert [hit.record.index for hit in segments] == [0, 1, 2]
    first, second, last = (hit.record for hit in segments)
    assert (first.x, second.x, last.x) == pytest.approx((1.0, 4.0, 12.5))
    assert last.stamp_ns == T0 + 4 * 3 * HALF_SECOND  # empty windows have no segment
    assert 'BAKERY' in second.text.upper()

    frame_vectors = store.get_vectors(FRAME, 'image', ['walk/3', 'walk/4', 'walk/5'])
    mean = np.mean(list(frame_vectors.values()), axis=0)
    stored = store.get_vectors(SEGMENT, 'image', ['walk/s1'])['walk/s1']
    assert stored == pytest.approx(mean / np.linalg.norm(mean), abs=1e-5)

    grid = cv2.imdecode(np.frombuffer(memory.image_store.get(second.image_ref), np.uint8), 1)
    assert grid.shape[0] > 0 and grid.shape[1] > grid.shape[0] * 0.5

    found = memory.search(
        SearchQuery(Mode.TEXT, 1, level=SEGMENT, views=['text'], text='where was the library')
    )
    assert found[0].record.index == 2 and found[0].view == 'text'
    memory.store.close()


def test_captions_become_views_that_text_search_ranks_jointly(
    tmp_path, image_text_embedder, sentence_embedder, sign_jpegs
):
    captions = InlineCaptions({0: 'a pharmacy counter with medicine', 1: 'loaves of bread'})
    memory = build(tmp_path, image_text_embedder, sentence_embedder, None, captions)
    for step in range(6):
        memory.ingest(keyframe(step, sign_jpegs[SIGNS[step // 3]]))
    memory.close_segments()

    assert [job.key for job in captions.jobs] == ['walk/s0', 'walk/s1']
    assert all(job.grid_jpeg and job.center_jpeg for job in captions.jobs)
    for view in CAPTION_VIEWS:
        assert memory.store.count(view=view, level=SEGMENT) == 2
    hits = memory.search(
        SearchQuery(Mode.TEXT, 2, level=SEGMENT, views=CAPTION_VIEWS, text='fresh bread')
    )
    assert hits[0].record.id == 'walk/s1'
    assert hits[0].view in CAPTION_VIEWS and 'loaves of bread' in hits[0].record.text
    with pytest.raises(ValueError, match='not enabled'):
        memory.search(SearchQuery(Mode.TEXT, 2, level=FRAME, views=['caption_full'], text='bread'))
    memory.store.close()


def test_after_a_crash_the_open_window_is_regrouped_and_indices_stay_dense(
    tmp_path, image_text_embedder, sentence_embedder, sign_jpegs
):
    memory = build(tmp_path, image_text_embedder, sentence_embedder, None)
    for step in range(5):  # window 0 closes at step 3; steps 3 and 4 are in the open window
        memory.ingest(keyframe(step, sign_jpegs['PHARMACY']))
    memory.store.close()  # no close_segments: the process died

    restarted = build(tmp_path, image_text_embedder, sentence_embedder, None)
    restarted.ingest(keyframe(7, sign_jpegs['BAKERY']))
    restarted.close_segments()

    segments = restarted.store.search_index_range('walk', 0, 10, 10, SEGMENT)
    assert [hit.record.index for hit in segments] == [0, 1, 2]
    assert segments[1].record.x == pytest.approx(3.5)  # frames 3 and 4, regrouped
    assert restarted.segments.counts['frames_regrouped_after_restart'] == 2
    restarted.store.close()


def test_deleting_a_session_keeps_images_another_session_shares(
    tmp_path, image_text_embedder, sentence_embedder, sign_jpegs
):
    memory = build(tmp_path, image_text_embedder, sentence_embedder, None)
    for session in ('first', 'second'):
        for step in range(4):
            memory.ingest(keyframe(step, sign_jpegs['MUSEUM'], session))
    memory.close_segments()
    shared = memory.store.get(['first/0'])[0].image_ref

    assert memory.delete_session('first') == (4, 2)
    assert memory.image_store.get(shared) == sign_jpegs['MUSEUM']
    assert memory.store.sessions() == ['second']
    assert memory.delete_session('second') == (4, 2)
    with pytest.raises(OSError):
        memory.image_store.get(shared)
    memory.store.close()
