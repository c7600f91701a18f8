# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""MemoryService end to end: keyframes with drawn signs in, searches by text and image out."""

from __future__ import annotations

import dataclasses

import cv2
import numpy as np
import pytest

from waymark.geometry import Pose
from waymark.memory.entries import FRAME, CameraModel, DepthSamples, FrameRecord, Hit, Keyframe
from waymark.memory.search_query import Mode, SearchQuery
from waymark.memory.service import MemoryService
from waymark.memory.storage.image_codec import decode_image
from waymark.memory.storage.image_store import ImageStore
from waymark.memory.storage.store import MemoryStore
from waymark.memory.views.fusion import reciprocal_rank_fusion
from waymark.memory.views.image import ImageView
from waymark.memory.views.text import TextView
from waymark.memory.views.view import level_dims

T0 = 1_750_000_000 * 10**9
# (sign, x, y): a walk along a corridor; the last frame is a blank wall.
SCENE = [('PHARMACY', 0.0, 0.0), ('BAKERY', 4.0, 0.0), ('LIBRARY', 8.0, 1.0), ('', 12.0, 1.0)]


def jpeg(image_rgb: np.ndarray) -> bytes:
    ok, data = cv2.imencode('.jpg', cv2.cvtColor(image_rgb, cv2.COLOR_RGB2BGR))
    assert ok
    return data.tobytes()


def keyframe(index, image_bytes, x=0.0, y=0.0, valid=True, session='walk'):
    return Keyframe(
        session=session,
        index=index,
        stamp_ns=T0 + index * 2 * 10**9,
        pose=Pose.from_xyz_yaw(x, y, 0.5, 0.3),
        pose_valid=valid,
        map_epoch=2,
        image=image_bytes,
    )


def open_service(root, image_embedder, sentence_embedder, reader) -> MemoryService:
    views = [ImageView(image_embedder)] if image_embedder is not None else []
    if sentence_embedder is not None:
        views.append(TextView(sentence_embedder, reader))
    store = MemoryStore(str(root / 'memory.db'), level_dims(views, FRAME))
    return MemoryService(store, ImageStore(root), views)


@pytest.fixture(scope='module')
def signs(draw_sign):
    return [draw_sign(text) for text, _, _ in SCENE]


@pytest.fixture(scope='module')
def walked(tmp_path_factory, image_text_embedder, sentence_embedder, text_reader, signs):
    """A service with both views that has ingested the corridor walk."""
    service = open_service(
        tmp_path_factory.mktemp('walk'), image_text_embedder, sentence_embedder, text_reader
    )
    records = [
        service.ingest(keyframe(i, jpeg(image), x, y))
        for i, (image, (_, x, y)) in enumerate(zip(signs, SCENE, strict=True))
    ]
    yield service, records
    service.store.close()


def test_ingest_stores_image_text_pose_and_views(walked):
    service, records = walked

    assert [r.text for r in records] == ['PHARMACY', 'BAKERY', 'LIBRARY', '']
    assert (records[1].x, records[1].y, records[1].z) == pytest.approx((4.0, 0.0, 0.5))
    assert records[1].yaw == pytest.approx(0.3)
    assert (records[1].stamp_ns, records[1].map_epoch, records[1].pose_valid) == (
        T0 + 2 * 10**9,
        2,
        True,
    )
    assert service.store.get([r.id for r in records]) == records
    stored = decode_image(service.image_store.get(records[0].image_ref))
    assert stored.shape == (480, 640, 3)
    stats = service.stats()
    assert (stats.frames, stats.sessions, stats.ingested) == (4, ['walk'], 4)
    assert stats.views == {'image': 4, 'text': 3}  # the blank wall has no text view
    assert stats.mean_ingest_ms > 0


def test_text_search_finds_the_frame_whose_sign_matches(walked):
    service, records = walked

    hits = service.search(SearchQuery(Mode.TEXT, 4, text='pharmacy'))

    assert hits[0].record == records[0]
    assert hits[0].view == 'text' and hits[0].score > 0.9
    assert len({hit.record.id for hit in hits}) == len(hits)  # one hit per frame
    assert {hit.view for hit in hits} <= {'image', 'text'}
    # The blank wall can only be found through the image view.
    assert [hit.view for hit in hits if hit.record == records[3]] in ([], ['image'])


def test_text_search_by_meaning_through_the_text_view(
    tmp_path, sentence_embedder, text_reader, signs
):
    service = open_service(tmp_path, None, sentence_embedder, text_reader)
    for i, (image, (_, x, y)) in enumerate(zip(signs, SCENE, strict=True)):
        service.ingest(keyframe(i, jpeg(image), x, y))

    def best(text: str) -> str:
        return service.search(SearchQuery(Mode.TEXT, 1, text=text))[0].record.text

    assert best('where can I buy medicine?') == 'PHARMACY'
    assert best('fresh bread') == 'BAKERY'
    assert best('borrow a book') == 'LIBRARY'
    assert service.search(SearchQuery(Mode.TEXT, 5, sessions=['elsewhere'], text='pharmacy')) == []
    with pytest.raises(ValueError, match='a view that embeds photos'):
        service.search(SearchQuery(Mode.IMAGE, 1, image=signs[0]))
    service.store.close()


def test_image_search_finds_the_same_view_again(walked, signs):
    service, records = walked

    hits = service.search(SearchQuery(Mode.IMAGE, 2, image=decode_image(jpeg(signs[2]))))

    assert hits[0].record == records[2]
    assert hits[0].view == 'image' and hits[0].score == pytest.approx(1.0, abs=1e-4)


def test_time_and_place_searches_pass_through(walked):
    service, records = walked

    def found(mode, k, **arguments):
        return [h.record for h in service.search(SearchQuery(mode, k, **arguments))]

    assert found(Mode.TIME, 2, stamp_ns=T0 + 1) == records[1:3]
    assert found(Mode.INTERVAL, 9, stamp_ns=T0, end_ns=T0 + 2 * 10**9) == records[:2]
    assert found(Mode.POSITION, 1, position=(8.0, 1.0, 0.5)) == [records[2]]
    assert found(Mode.RANGE, 10, position=(3.0, 0.0, 0.0), radius=1.5) == [records[1]]
    assert (
        found(Mode.INDEX_RANGE, 9, sessions=['walk'], first_index=1, last_index=2) == records[1:3]
    )
    # An index range ranked by a text: the span's entries, best first.
    ranked = found(
        Mode.INDEX_RANGE, 9, sessions=['walk'], first_index=1, last_index=3, text='library'
    )
    assert ranked[0] == records[2] and set(ranked) <= set(records[1:4])


def test_undecodable_keyframe_is_refused_and_nothing_is_stored(
    tmp_path, sentence_embedder, text_reader
):
    service = open_service(tmp_path, None, sentence_embedder, text_reader)

    with pytest.raises(ValueError, match='walk/0'):
        service.ingest(keyframe(0, b'not an image'))
    with pytest.raises(ValueError):
        service.ingest(keyframe(1, b''))

    assert service.store.count() == 0
    assert not [path for path in tmp_path.glob('images/**/*') if path.is_file()]
    service.store.close()


def test_a_record_keeps_what_localisation_needs_of_its_keyframe(
    tmp_path, sentence_embedder, text_reader, draw_sign
):
    service = open_service(tmp_path, None, sentence_embedder, text_reader)
    camera = CameraModel(640, 480, 320.0, 320.0, 320.0, 240.0)  # as stored: no rounding
    depth = DepthSamples(2, 1, (3.0, 4.5))
    sign = dataclasses.replace(keyframe(0, jpeg(draw_sign('PHARMACY'))), camera=camera, depth=depth)

    record = service.ingest(sign)
    blank = service.ingest(keyframe(1, jpeg(draw_sign(''))))
    only_camera = service.ingest(
        dataclasses.replace(keyframe(2, jpeg(draw_sign(''))), camera=camera)
    )

    (box,) = record.sighting.text_boxes
    assert box.text == 'PHARMACY' and 0.3 < box.centre[0] < 0.7
    assert (record.sighting.camera, record.sighting.depth) == (camera, depth)
    assert blank.sighting is None  # no camera, no text, no depth: nothing to keep
    assert only_camera.sighting.camera == camera and only_camera.sighting.text_boxes == ()
    assert service.store.get([record.id, blank.id]) == [record, blank]
    service.store.close()


def test_lost_pose_is_kept_but_never_used_as_a_position(tmp_path, text_reader):
    service = open_service(tmp_path, None, None, text_reader)
    small = jpeg(np.full((48, 64, 3), 120, np.uint8))

    service.ingest(keyframe(0, small, x=1.0, valid=True))
    lost = service.ingest(keyframe(1, small, x=1.0, valid=False))

    assert service.store.get([lost.id])[0].pose_valid is False
    nearest = service.search(SearchQuery(Mode.POSITION, 5, position=(1.0, 0.0, 0.5)))
    assert [h.record.index for h in nearest] == [0]
    with pytest.raises(ValueError, match='no embedding views'):
        service.search(SearchQuery(Mode.TEXT, 3, text='anything'))
    service.store.close()


def test_service_refuses_a_store_whose_views_do_not_fit_its_embedders(
    tmp_path, image_text_embedder, sentence_embedder
):
    with (
        MemoryStore(str(tmp_path / 'memory.db'), {'image': 32, 'text': 16}) as store,
        pytest.raises(ValueError, match="'text'"),
    ):
        MemoryService(
            store,
            ImageStore(tmp_path),
            [ImageView(image_text_embedder), TextView(sentence_embedder, None)],
        )


def test_fusion_prefers_agreement_and_reports_the_best_ranked_view():
    def hit(name, score, view):
        return Hit(FrameRecord('s', name, T0, 0, 0, 0, 0, 0, True, '', ''), score, view)

    image = [hit(1, 0.30, 'image'), hit(2, 0.28, 'image'), hit(3, 0.20, 'image')]
    text = [hit(2, 0.90, 'text'), hit(4, 0.80, 'text'), hit(1, 0.10, 'text')]

    fused = reciprocal_rank_fusion([image, text])

    assert [h.record.index for h in fused] == [2, 1, 4, 3]
    assert [(h.view, h.score) for h in fused] == [
        ('text', 0.90),
        ('image', 0.30),
        ('text', 0.80),
        ('image', 0.20),
    ]


def test_of_frames_reading_the_same_words_the_nearest_view_comes_first(
    tmp_path, sentence_embedder, text_reader
):
    from PIL import Image, ImageDraw, ImageFont

    def sign(font_size: int) -> np.ndarray:
        image = Image.new('RGB', (640, 480), (190, 200, 210))
        draw = ImageDraw.Draw(image)
        font = ImageFont.load_default(size=font_size)
        draw.text((320, 240), 'BAKERY', font=font, fill=(15, 15, 15), anchor='mm', stroke_width=2)
        return np.asarray(image)

    service = open_service(tmp_path, None, sentence_embedder, text_reader)
    # Seen from afar first, then twice from closer (the robot walks up to the sign).
    sizes = [40, 56, 96, 72]
    records = [service.ingest(keyframe(i, jpeg(sign(size)), x=i)) for i, size in enumerate(sizes)]
    assert [r.text for r in records] == ['BAKERY'] * 4
    assert records[2].text_size > records[3].text_size > records[1].text_size > records[0].text_size
    hits = service.search(SearchQuery(Mode.TEXT, 2, text='bakery'))
    assert [h.record.index for h in hits] == [2, 3]
    service.store.close()


def test_memory_numbers_entries_and_a_replayed_keyframe_keeps_its_entry(tmp_path, draw_sign):
    service = open_service(tmp_path, None, None, None)
    image = jpeg(draw_sign(''))
    first = [service.ingest(keyframe(i, image)) for i in range(3)]
    again = service.ingest(keyframe(1, image))  # the same keyframe once more
    # The sender restarted: its count starts at 0 again, at a later time.
    restarted = dataclasses.replace(keyframe(0, image, x=9.0), stamp_ns=T0 + 100 * 10**9)
    sender_restarted = service.ingest(restarted)
    assert [r.index for r in first] == [0, 1, 2]
    assert again.index == 1
    assert service.store.count() == 4
    assert sender_restarted.index == 3
    service.store.close()
