# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""memory_node's store_place over real DDS: a place stored through the service is found
by name as a place hit, a bad request is refused and changes nothing, removal works, and
task_node's client stores a marked place; and a place hit's way through the message."""

from __future__ import annotations

import pytest
from sensor_msgs.msg import CompressedImage

from waymark.geometry import Pose
from waymark.memory.entries import PLACE, FrameRecord, Hit
from waymark.memory.places import name_and_room
from waymark.tasks.stop_views import StopView
from waymark_interfaces.msg import MemoryHit
from waymark_interfaces.srv import SearchMemory, StorePlace
from waymark_ros.nodes.task.place_memory import PlaceMemory
from waymark_ros.ros.conversions import ns_to_stamp
from waymark_ros.ros.memory_msgs import hit_from_msg, hit_to_msg
from waymark_testing.ros_harness import wait_until
from waymark_testing.signs import search, sign_jpeg

T0 = 1_750_000_000 * 10**9


def place_request(name: str, frame: str = 'map', views=('DOCK',)) -> StorePlace.Request:
    request = StorePlace.Request(name=name, map_epoch=2, room='garage')
    request.pose.header.frame_id = frame
    request.pose.header.stamp = ns_to_stamp(T0)
    request.pose.pose.position.x, request.pose.pose.position.y = 3.0, -1.0
    request.pose.pose.orientation.w = 1.0
    request.views = [CompressedImage(format='jpeg', data=sign_jpeg(text)) for text in views]
    request.view_yaws = [0.5 * i for i in range(len(views))]
    return request


def test_a_place_hit_is_named_by_its_name_through_the_message():
    row = FrameRecord(
        'place-7', 2, T0, 1.0, 2.0, 0.0, 0.3, 4, True, 'images/a.jpg', 'Dock\ngarage', kind=PLACE
    )

    msg = hit_to_msg(Hit(row, 0.6, 'image'), 'map')
    back = hit_from_msg(msg)

    assert (msg.kind, msg.id, msg.text) == (MemoryHit.KIND_PLACE, 'place/dock', 'Dock')
    assert back.record.kind == PLACE and name_and_room(back.record) == ('Dock', '')
    assert (back.record.session, back.record.index, back.record.yaw) == (
        'place-7',
        2,
        pytest.approx(0.3),
    )
    msg.id = 'place/elsewhere'
    with pytest.raises(ValueError, match='does not match'):
        hit_from_msg(msg)


@pytest.mark.dds
def test_store_search_refuse_and_remove_a_place(ros, launch, tmp_path):
    node = launch('memory_node', data_dir=str(tmp_path / 'memory'))
    stats = ros.latest_json('memory/stats')
    wait_until(lambda: 'frames' in stats, 60, 'memory_node did not start')

    stored = ros.call(StorePlace, 'store_place', place_request('Charging  Spot'))
    assert stored.success, stored.message
    assert stored.entry_id == 'place/charging spot' and stored.removed == 0

    assert SearchMemory.Request.LEVEL_PLACE == MemoryHit.KIND_PLACE == PLACE
    found = search(
        ros, 'text', text='charging spot', level=SearchMemory.Request.LEVEL_PLACE, top_k=3
    )
    assert found.success, found.message
    (hit,) = found.hits  # one place, one hit, whichever of its rows matched
    assert (hit.kind, hit.id, hit.text) == ('place', 'place/charging spot', 'Charging Spot')
    assert hit.pose.pose.position.x == pytest.approx(3.0) and hit.map_epoch == 2
    assert found.total_entries == 1

    undecodable = place_request('broken')
    undecodable.views[0].data = b'not an image'
    for bad in (place_request('a/b'), place_request('elsewhere', frame='odom'), undecodable):
        refused = ros.call(StorePlace, 'store_place', bad)
        assert not refused.success and refused.message
    again = search(ros, 'text', text='place', level='place', top_k=10)
    assert [h.text for h in again.hits] == ['Charging Spot']  # nothing changed

    removal = StorePlace.Request(name='charging spot', remove=True)
    removed = ros.call(StorePlace, 'store_place', removal)
    assert removed.success and removed.removed == 1
    assert list(search(ros, 'text', text='charging', level='place').hits) == []

    # task_node's client of the service: what a Mark hands to memory.
    with ros.paused():
        places = PlaceMemory(ros.node, 'store_place', wait_s=10.0)
    view = StopView(sign_jpeg('EXIT'), heading=0.5, stamp_ns=T0)
    pose = Pose.from_xyz_yaw(1.0, 2.0, 0.0, 0.5)
    assert places.store('Back Door', pose, 'map', 2, T0, [view]) == ''
    (door,) = search(ros, 'text', text='back door', level='place', top_k=3).hits
    assert (door.text, door.map_epoch) == ('Back Door', 2)
    assert 'frame' in places.store('Back Door', pose, 'odom', 2, T0, [view])
    assert node.running()
