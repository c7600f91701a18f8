# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Named places in memory: stored, replaced, removed, found by name and by image, bounded,
and kept across a restart."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from waymark.geometry import Pose
from waymark.memory.entries import FRAME, PLACE
from waymark.memory.places import PlaceInput, PlaceViewImage, name_and_room, place_entry_id
from waymark.memory.search_query import Mode, SearchQuery
from waymark.memory.service import MemoryService
from waymark.memory.storage.image_store import ImageStore
from waymark.memory.storage.store import MemoryStore
from waymark.memory.views.image import ImageView
from waymark.memory.views.text import TextView
from waymark.memory.views.view import level_dims

T0 = 1_750_000_000 * 10**9


def jpeg(image_rgb: np.ndarray) -> bytes:
    ok, data = cv2.imencode('.jpg', cv2.cvtColor(image_rgb, cv2.COLOR_RGB2BGR))
    assert ok
    return data.tobytes()


def open_service(root, views, max_places=100) -> MemoryService:
    store = MemoryStore(
        str(root / 'memory.db'), level_dims(views, FRAME), place_views=level_dims(views, FRAME)
    )
    return MemoryService(store, ImageStore(root), views, max_places=max_places)


def place(name, x=1.0, views=(), room=''):
    return PlaceInput(
        name=name,
        pose=Pose.from_xyz_yaw(x, 2.0, 0.0, 0.5),
        map_epoch=3,
        stamp_ns=T0,
        room=room,
        views=tuple(PlaceViewImage(jpeg(image), yaw) for image, yaw in views),
    )


@pytest.fixture
def views(image_text_embedder, sentence_embedder, text_reader):
    return [ImageView(image_text_embedder), TextView(sentence_embedder, text_reader)]


@pytest.fixture
def service(tmp_path, views):
    memory = open_service(tmp_path, views)
    yield memory
    memory.store.close()


def test_store_keeps_name_room_pose_and_views(service, draw_sign):
    stored, replaced = service.places.put(
        place('  Charging   Spot ', views=[(draw_sign('DOCK'), 0.0), (draw_sign('EXIT'), 1.6)])
    )

    assert replaced == 0
    assert (stored.name, stored.room, stored.map_epoch) == ('Charging Spot', '', 3)
    assert stored.entry_id == place_entry_id('charging spot') == 'place/charging spot'
    assert stored.pose.position == pytest.approx((1.0, 2.0, 0.0))
    assert stored.pose.yaw == pytest.approx(0.5)
    assert stored.view_yaws == pytest.approx((0.0, 1.6))
    assert all(service.image_store.get(ref) for ref in stored.view_refs)
    assert [p.name for p in service.places.places()] == ['Charging Spot']
    # Places stay out of the frame level: a question about what was seen never finds them.
    assert service.store.count() == 0 and service.store.sessions() == []


def test_storing_a_name_again_replaces_it_whatever_its_case_and_spacing(service):
    service.places.put(place('charging spot', x=1.0))
    service.places.put(place('kitchen door', x=5.0))

    _, replaced = service.places.put(place('CHARGING  spot', x=7.0))

    assert replaced == 1
    listed = {p.name: p for p in service.places.places()}
    assert sorted(listed) == ['CHARGING spot', 'kitchen door']
    assert listed['CHARGING spot'].pose.position[0] == pytest.approx(7.0)
    assert len(service.store.sessions(PLACE)) == 2


def test_remove_by_name_and_unknown_name(service, draw_sign):
    stored, _ = service.places.put(place('desk', views=[(draw_sign('DESK'), 0.0)]))
    ref = stored.view_refs[0]

    assert service.places.remove('nowhere') == 0
    assert service.places.remove(' DESK ') == 1
    assert service.places.places() == []
    assert service.store.count(level=PLACE) == 0
    with pytest.raises(OSError):  # its image went with it
        service.image_store.get(ref)


@pytest.mark.parametrize(
    'bad',
    [
        place(''),
        place('a/b'),
        place('x' * 65),
        place('tab\tin\x00name'),
        place('ok', room='bell\x07'),
    ],
)
def test_bad_input_is_refused_and_changes_nothing(service, bad):
    service.places.put(place('kept'))

    with pytest.raises(ValueError):
        service.places.put(bad)

    assert [p.name for p in service.places.places()] == ['kept']


def test_an_undecodable_or_extra_view_is_refused(service, draw_sign):
    broken = PlaceInput('dock', Pose(), 0, T0, views=(PlaceViewImage(b'not an image', 0.0),))
    with pytest.raises(ValueError, match='view 1'):
        service.places.put(broken)
    five = place('dock', views=[(draw_sign('A'), 0.0)] * 5)
    with pytest.raises(ValueError, match='at most 4'):
        service.places.put(five)
    assert service.places.places() == []


def test_search_by_name_text_finds_the_place(service):
    for name, room in [('charging spot', 'hallway'), ('fridge', 'kitchen'), ('sofa', 'lounge')]:
        service.places.put(place(name, room=room))

    hits = service.search(SearchQuery(Mode.TEXT, 3, level=PLACE, text='charging spot'))
    by_room = service.search(SearchQuery(Mode.TEXT, 3, level=PLACE, text='kitchen'))

    assert name_and_room(hits[0].record) == ('charging spot', 'hallway')
    assert hits[0].record.kind == PLACE and hits[0].view == 'text'
    assert len({hit.record.session for hit in hits}) == len(hits) == 3  # one hit a place
    assert name_and_room(by_room[0].record)[0] == 'fridge'


def test_search_by_image_finds_the_place_by_one_of_its_views(service, draw_sign):
    blank = np.full((480, 640, 3), 200, np.uint8)
    service.places.put(place('pharmacy corner', views=[(blank, 0.0), (draw_sign('PHARMACY'), 1.0)]))
    service.places.put(place('bakery corner', views=[(draw_sign('BAKERY'), 2.0)]))

    hits = service.search(SearchQuery(Mode.IMAGE, 2, level=PLACE, image=draw_sign('PHARMACY')))

    assert name_and_room(hits[0].record)[0] == 'pharmacy corner'
    assert hits[0].view == 'image' and hits[0].record.yaw == pytest.approx(1.0)
    assert hits[0].record.image_ref  # the view that matched
    assert len(hits) == 2


def test_the_cap_refuses_a_new_name_but_not_a_replacement(tmp_path, views):
    memory = open_service(tmp_path, views, max_places=2)
    try:
        memory.places.put(place('a'))
        memory.places.put(place('b'))
        with pytest.raises(ValueError, match='max_places'):
            memory.places.put(place('c'))
        assert memory.places.put(place('B', x=9.0))[1] == 1
        assert [p.name for p in memory.places.places()] == ['a', 'B']
    finally:
        memory.store.close()


def test_places_persist_across_a_reopen(tmp_path, views, draw_sign):
    memory = open_service(tmp_path, views)
    memory.places.put(place('dock', room='garage', views=[(draw_sign('DOCK'), 0.3)]))
    memory.store.close()

    reopened = open_service(tmp_path, views)
    try:
        (stored,) = reopened.places.places()
        assert (stored.name, stored.room, stored.view_yaws) == ('dock', 'garage', (0.3,))
        hits = reopened.search(SearchQuery(Mode.IMAGE, 1, level=PLACE, image=draw_sign('DOCK')))
        assert name_and_room(hits[0].record)[0] == 'dock'
        # A new name after the reopen takes a new slot, not the stored one's.
        reopened.places.put(place('door'))
        assert len(reopened.places.places()) == 2
    finally:
        reopened.store.close()


def test_a_failed_write_leaves_no_place_and_no_picture(service, draw_sign, monkeypatch):
    def refuse(*args, **kwargs):
        raise RuntimeError('database away')

    monkeypatch.setattr(service.store, 'add_many', refuse)
    with pytest.raises(RuntimeError):
        service.places.put(place('dock', views=[(draw_sign('DOCK'), 0.0)]))

    monkeypatch.undo()
    assert service.places.places() == []
    assert service.image_store.used_bytes == 0
