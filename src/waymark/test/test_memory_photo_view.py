# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The photo view (histograms, no model) finds a photographed thing seen from elsewhere,
and photo searches put the hits geometrically verified against their pictures first."""

from __future__ import annotations

import numpy as np
import pytest

from waymark.geometry import Pose
from waymark.memory.entries import SEGMENT, FrameRecord, Hit, Keyframe
from waymark.memory.factory import MemoryConfig, load_models, open_memory
from waymark.memory.refusal import RefusedError
from waymark.memory.search_query import Mode, SearchQuery, SearchRules
from waymark.memory.storage.image_codec import ImageDecodeError
from waymark.memory.views.fusion import reciprocal_rank_fusion
from waymark.memory.views.image import ImageView
from waymark.memory.views.photo_descriptor import (
    MAX_DIM,
    PhotoDescriptorParams,
    PhotoView,
    PhotoViewSettings,
    describe,
)
from waymark.memory.views.photo_rerank import PhotoReranker, PhotoRerankParams
from waymark.memory.views.registry import ViewSettings
from waymark.memory.views.text import TextView
from waymark.settings import settings
from waymark_testing.textures import encode, moved, poster

T0 = 1_750_000_000 * 10**9
LANDMARK = 2  # the poster photographed
OTHERS = (1, 3, 4, 5, 6)


def shuffled(image: np.ndarray, block: int = 32, seed: int = 0) -> np.ndarray:
    """The picture cut into blocks and put together in another order: the same colours
    and much the same edges, but no geometry in common with it."""
    height, width = image.shape[:2]
    tiles = [
        image[r : r + block, c : c + block]
        for r in range(0, height, block)
        for c in range(0, width, block)
    ]
    order = np.random.default_rng(seed).permutation(len(tiles))
    rows = [
        np.hstack([tiles[i] for i in order[start : start + width // block]])
        for start in range(0, len(tiles), width // block)
    ]
    return np.vstack(rows)


def keyframe(index: int, picture: np.ndarray) -> Keyframe:
    return Keyframe(
        session='walk',
        index=index,
        stamp_ns=T0 + index * 2 * 10**9,
        pose=Pose.from_xyz_yaw(3.0 * index, 0.0, 0.0, 0.0),
        pose_valid=True,
        map_epoch=0,
        image=encode(picture),
    )


def remember(tmp_path, views, pictures: dict[str, np.ndarray], top: int = 10):
    """A memory holding one frame per picture; returns it and the frame id of each."""
    config = MemoryConfig(tmp_path, segment_window_s=1.5, photo_rerank=PhotoRerankParams(top=top))
    memory = open_memory(config, views)
    ids = {name: memory.ingest(keyframe(i, p)).id for i, (name, p) in enumerate(pictures.items())}
    memory.close_segments()
    return memory, ids


def scene() -> dict[str, np.ndarray]:
    """The landmark and others seen from elsewhere, and a colour look-alike of the photo."""
    pictures = {f'poster {seed}': moved(poster(seed)) for seed in (*OTHERS, LANDMARK)}
    pictures['look-alike'] = shuffled(poster(LANDMARK))
    return pictures


def ranked(memory, ids, hits) -> list[str]:
    names = {entry: name for name, entry in ids.items()}
    return [names[hit.record.id] for hit in hits]


def photo_search(memory, k: int = 3, level: str = 'frame') -> list[Hit]:
    return memory.search(SearchQuery(Mode.IMAGE, k, level=level, image=poster(LANDMARK)))


def test_a_photo_finds_the_landmark_seen_from_elsewhere_and_verification_puts_it_first(
    tmp_path,
):
    memory, ids = remember(tmp_path / 'kept', (PhotoView(),), scene(), top=0)
    try:
        assert memory.image_views() == ['photo'] and memory.image_views(SEGMENT) == ['photo']
        # By the histograms alone the look-alike (the photo's own colours, cut up) comes
        # first, the landmark seen from a step aside second, before every other poster.
        hits = photo_search(memory, k=len(ids))
        assert ranked(memory, ids, hits)[:2] == ['look-alike', f'poster {LANDMARK}']
        assert {hit.view for hit in hits} == {'photo'}
    finally:
        memory.store.close()

    memory, ids = remember(tmp_path / 'verified', (PhotoView(),), scene())
    try:
        hits = photo_search(memory, k=1)
        assert ranked(memory, ids, hits) == [f'poster {LANDMARK}']
        assert hits[0].view == 'photo'  # its view's score, not an inlier count
        # Segments are verified against their pictures too (each holds one frame here).
        (segment,) = photo_search(memory, k=1, level=SEGMENT)
        assert segment.record.kind == SEGMENT
        (frame,) = memory.store.get([ids[f'poster {LANDMARK}']])
        assert segment.record.stamp_ns <= frame.stamp_ns <= segment.record.end_ns
    finally:
        memory.store.close()


def test_reranking_reads_at_most_top_pictures_and_keeps_the_unverified_in_order():
    pictures = [moved(poster(i)) for i in range(8)]
    read: list[int] = []

    def picture(record: FrameRecord) -> bytes | None:
        read.append(record.index)
        return None if record.index == 1 else encode(pictures[record.index])

    records = [
        FrameRecord('s', i, T0 + i, 0.0, 0.0, 0.0, 0.0, 0, True, f'{i}.jpg') for i in range(8)
    ]
    hits = [Hit(record, 1.0 - 0.1 * i, 'photo') for i, record in enumerate(records)]
    reranker = PhotoReranker(PhotoRerankParams(top=4), picture)

    def order(photo: np.ndarray) -> list[int]:
        return [hit.record.index for hit in reranker.rerank(hits, photo)]

    # The photo shows entry 3 (within the top 4); entry 1 has no picture: not verified,
    # no error; the others keep their order.
    assert order(poster(3)) == [3, 0, 1, 2, 4, 5, 6, 7]
    assert read == [0, 1, 2, 3]
    # The verified hit says where its picture shows the photo; the others say nothing.
    first, *others = reranker.rerank(hits, poster(3))
    assert first.region is not None and 0.0 <= first.region.left < first.region.right <= 1.0
    assert all(hit.region is None for hit in others)
    # Entry 6 shows it but lies beyond the top 4: never read, left where it was.
    read.clear()
    assert order(poster(6)) == list(range(8)) and len(read) == 4
    # A photo too small to match re-ranks nothing.
    assert reranker.rerank(hits, np.zeros((8, 8, 3), np.uint8)) == hits
    assert reranker.rows(3) == 4 and reranker.rows(20) == 20
    with pytest.raises(ValueError, match='top must be in'):
        PhotoRerankParams(top=1000)


def test_bad_photos_and_text_queries_get_one_clear_error(tmp_path, sentence_embedder):
    views = (TextView(sentence_embedder, None), PhotoView())
    memory, ids = remember(tmp_path, views, {'landmark': moved(poster(LANDMARK))})
    try:
        tiny = np.zeros((4, 20, 3), np.uint8)
        with pytest.raises(
            ImageDecodeError, match=r'at least 32 pixels a side, got uint8 \(4, 20, 3\)'
        ):
            memory.search(SearchQuery(Mode.IMAGE, 1, image=tiny))
        # Bytes that are not a picture are refused before any decoding (SearchRules).
        with pytest.raises(RefusedError, match='image'):
            SearchRules().decode_image(b'not a photo')
        # A text search leaves the photo view out, and refuses it when it is named.
        assert memory.search(SearchQuery(Mode.TEXT, 1, text='landmark')) == []
        with pytest.raises(ValueError, match=r"\['photo'\] describe pictures"):
            memory.search(SearchQuery(Mode.TEXT, 1, text='landmark', views=['photo']))
        # The memory answers the next photo as before.
        hits = memory.search(SearchQuery(Mode.IMAGE, 1, image=poster(LANDMARK)))
        assert [hit.record.id for hit in hits] == [ids['landmark']]
    finally:
        memory.store.close()


def test_the_view_is_bounded_whatever_the_picture_and_its_settings():
    params = PhotoDescriptorParams()
    small = describe(np.full((32, 48, 3), 90, np.uint8), params)  # flat: colour only
    large = describe(poster(0, size=(3000, 4000)), params)
    assert small.shape == large.shape == (params.dim,) == (400,)
    assert small.dtype == np.float32 and np.linalg.norm(small) == pytest.approx(1.0, abs=1e-6)
    assert np.linalg.norm(large) == pytest.approx(1.0, abs=1e-6)
    # An odd number of bins is padded to a multiple of 8 (quantisers split vectors evenly).
    odd = PhotoDescriptorParams(hue_bins=3, saturation_bins=3, value_bins=3)
    assert (odd.histogram_bins, odd.dim) == (175, 176)
    assert describe(poster(0), odd).shape == (176,)
    with pytest.raises(ValueError, match=f'over {MAX_DIM}'):
        PhotoDescriptorParams(hue_bins=32, saturation_bins=8, value_bins=8, grid=1)
    info = {item.name: item for item in settings(PhotoViewSettings)}
    assert info['photo.hue_bins'].problem(64) == 'must be in [2, 32]'
    assert info['photo_view'].default is False  # opt-in: see docs/memory.md
    assert load_models(ViewSettings(text_model='')) == ()
    (view,) = load_models(ViewSettings(text_model='', photo_view=True))
    assert isinstance(view, PhotoView) and view.dim == 400


def test_with_an_image_text_model_both_views_are_fused(tmp_path, image_text_embedder):
    views = (ImageView(image_text_embedder), PhotoView())
    memory, ids = remember(tmp_path, views, scene(), top=0)
    try:
        assert memory.image_views() == ['image', 'photo']
        photo = poster(LANDMARK)
        rankings = [
            memory.store.search_view(name, view.embed_image(photo), len(ids))
            for name, view in (('image', views[0]), ('photo', views[1]))
        ]
        expected = [hit.record.id for hit in reciprocal_rank_fusion(rankings)]
        hits = photo_search(memory, k=len(ids))
        assert [hit.record.id for hit in hits] == expected
        assert {hit.view for hit in hits} <= {'image', 'photo'}
    finally:
        memory.store.close()
