# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""RViz markers of memory and of search hits, built without DDS."""

from __future__ import annotations

import math
from collections import Counter
from itertools import pairwise

from builtin_interfaces.msg import Time
from visualization_msgs.msg import Marker

from waymark.memory.entries import PLACE, SEGMENT, FrameRecord, Hit
from waymark_ros.nodes.memory.memory_markers import hit_markers, memory_markers

STAMP = Time(sec=12, nanosec=5)


def record(i: int, *, session='lab', epoch=0, valid=True, text='', kind='frame', yaw=0.0):
    return FrameRecord(
        session=session,
        index=i,
        stamp_ns=1_000_000_000 * i,
        x=float(i),
        y=2.0 * i,
        z=0.5,
        yaw=yaw,
        map_epoch=epoch,
        pose_valid=valid,
        image_ref=f'images/{i}.jpg',
        text=text,
        kind=kind,
    )


def by_ns(array, namespace: str) -> list[Marker]:
    return [m for m in array.markers if m.ns == namespace and m.action == Marker.ADD]


def assert_ids_unique(array) -> None:
    counts = Counter((m.ns, m.id) for m in array.markers if m.action == Marker.ADD)
    assert all(n == 1 for n in counts.values()), counts


def test_memory_starts_with_deleteall_and_stamps_every_marker():
    array = memory_markers([record(i) for i in range(3)], 'map', STAMP)

    assert array.markers[0].action == Marker.DELETEALL
    assert all(m.action == Marker.ADD for m in array.markers[1:])
    assert {m.header.frame_id for m in array.markers} == {'map'}
    assert all(m.header.stamp == STAMP for m in array.markers)
    assert memory_markers([], 'map', STAMP).markers[0].action == Marker.DELETEALL
    assert len(memory_markers([], 'map', STAMP).markers) == 1


def test_one_trajectory_and_keyframe_list_per_session_and_epoch():
    records = [record(i) for i in range(4)]
    records += [record(i, epoch=1) for i in range(4, 7)]
    records += [record(i, session='yard') for i in range(7, 9)]

    array = memory_markers(records, 'map', STAMP)

    lines = by_ns(array, 'trajectory')
    spheres = by_ns(array, 'keyframes')
    assert [len(m.points) for m in lines] == [4, 3, 2]
    assert all(m.type == Marker.LINE_STRIP for m in lines)
    assert sorted(len(m.points) for m in spheres) == [2, 3, 4]
    assert all(m.type == Marker.SPHERE_LIST and len(m.colors) == len(m.points) for m in spheres)
    assert_ids_unique(array)


def test_no_line_across_an_epoch_change_or_an_invalid_pose():
    records = [
        record(0),
        record(1),
        record(2, valid=False),
        record(3),
        record(4),
        record(5, epoch=1),
        record(6, epoch=1),
        record(7, epoch=1),
        record(8, valid=False),
        record(9, epoch=1),  # alone after the gap: no line of one point
    ]

    array = memory_markers(records, 'map', STAMP)

    lines = [[p.x for p in m.points] for m in by_ns(array, 'trajectory')]
    assert lines == [[0.0, 1.0], [3.0, 4.0], [5.0, 6.0, 7.0]]
    drawn = sorted(p.x for m in by_ns(array, 'keyframes') for p in m.points)
    assert drawn == [0.0, 1.0, 3.0, 4.0, 5.0, 6.0, 7.0, 9.0]  # invalid poses are not drawn


def test_interleaved_sessions_are_not_joined():
    records = [record(i, session='a' if i % 2 else 'b') for i in range(6)]

    lines = by_ns(memory_markers(records, 'map', STAMP), 'trajectory')

    assert sorted([p.x for p in m.points] for m in lines) == [[0.0, 2.0, 4.0], [1.0, 3.0, 5.0]]


def test_keyframes_are_coloured_old_to_new():
    shuffled = [record(i) for i in (3, 0, 4, 1, 2)]

    (spheres,) = by_ns(memory_markers(shuffled, 'map', STAMP), 'keyframes')

    order = [p.x for p in spheres.points]
    assert order == sorted(order)
    reds = [c.r for c in spheres.colors]
    blues = [c.b for c in spheres.colors]
    assert reds == sorted(reds) and reds[0] < reds[-1]
    assert blues == sorted(blues, reverse=True) and blues[0] > blues[-1]


def test_downsampling_bounds_the_points_and_keeps_both_ends():
    records = [record(i) for i in range(1000)]

    array = memory_markers(records, 'map', STAMP, max_points=50)

    (spheres,) = by_ns(array, 'keyframes')
    (line,) = by_ns(array, 'trajectory')
    xs = [p.x for p in spheres.points]
    assert len(xs) == 50 == len(line.points)
    assert xs[0] == 0.0 and xs[-1] == 999.0
    gaps = {round(b - a) for a, b in pairwise(xs)}
    assert gaps <= {20, 21}  # even spacing


def test_downsampling_never_joins_across_a_dropped_invalid_frame():
    records = [record(i, valid=i != 5) for i in range(11)]

    array = memory_markers(records, 'map', STAMP, max_points=4)

    assert sum(len(m.points) for m in by_ns(array, 'keyframes')) == 4
    for line in by_ns(array, 'trajectory'):
        xs = [p.x for p in line.points]
        assert all(x < 5 for x in xs) or all(x > 5 for x in xs)


def test_text_labels_keep_the_newest():
    records = [record(i, text=f'sign {i}' if i % 2 else '') for i in range(10)]
    records.append(record(10, valid=False, text='lost'))

    labels = by_ns(memory_markers(records, 'map', STAMP, max_labels=3), 'text')

    assert [m.text for m in labels] == ['sign 5', 'sign 7', 'sign 9']
    assert all(m.type == Marker.TEXT_VIEW_FACING for m in labels)
    assert labels[0].pose.position.x == 5.0 and labels[0].pose.position.z > 0.5
    assert [m.id for m in labels] == [0, 1, 2]


def test_long_texts_are_shortened():
    (label,) = by_ns(memory_markers([record(0, text='x' * 500)], 'map', STAMP), 'text')
    assert len(label.text) <= 60 and label.text.endswith('...')


def test_segments_are_cubes_and_not_part_of_the_trajectory():
    records = [record(i) for i in range(3)]
    records += [record(i, kind=SEGMENT) for i in range(2)]
    records.append(record(2, kind=SEGMENT, valid=False))

    array = memory_markers(records, 'map', STAMP)

    (cubes,) = by_ns(array, 'segments')
    assert cubes.type == Marker.CUBE_LIST and len(cubes.points) == len(cubes.colors) == 2
    assert [len(m.points) for m in by_ns(array, 'trajectory')] == [3]
    assert sum(len(m.points) for m in by_ns(array, 'keyframes')) == 3


def test_hits_have_sphere_arrow_and_label_each():
    hits = [
        Hit(record(3, text='PHARMACY', yaw=math.pi / 2), 0.91, 'text'),
        Hit(record(4, valid=False), 0.8, 'image'),
        Hit(record(5), 0.42, 'image'),
    ]

    array = hit_markers(hits, 'map', STAMP, 'where is the pharmacy?')

    first = array.markers[0]
    assert first.action == Marker.DELETEALL and first.ns == 'hits'
    markers = array.markers[1:]
    assert all(m.ns == 'hits' for m in markers)
    assert_ids_unique(array)
    spheres = [m for m in markers if m.type == Marker.SPHERE]
    arrows = [m for m in markers if m.type == Marker.ARROW]
    texts = [m.text for m in markers if m.type == Marker.TEXT_VIEW_FACING]
    assert len(spheres) == len(arrows) == 2  # the hit without a pose is skipped
    assert texts == ['#1 0.91 text: PHARMACY', '#3 0.42 image', 'query: where is the pharmacy?']
    assert spheres[0].scale.x > spheres[1].scale.x
    assert spheres[0].color != spheres[1].color
    q = arrows[0].pose.orientation
    assert math.isclose(2 * math.atan2(q.z, q.w), math.pi / 2)
    assert arrows[0].pose.position.x == 3.0


def test_no_hits_only_clear_the_previous_ones():
    array = hit_markers([], 'map', STAMP, 'anything')
    assert [m.action for m in array.markers] == [Marker.DELETEALL]
    array = hit_markers([Hit(record(1, valid=False), 0.5, 'text')], 'map', STAMP, 'q')
    assert [m.action for m in array.markers] == [Marker.DELETEALL]


def test_each_place_is_a_pin_labelled_with_its_name_only():
    places = [
        record(0, session='place-0', kind=PLACE, text='charging spot\ngarage'),
        record(1, session='place-0', kind=PLACE, text='charging spot\ngarage'),  # a view row
        record(0, session='place-3', kind=PLACE, text='fridge\n'),
    ]

    array = memory_markers([record(5), *places], 'map', STAMP)

    assert len(by_ns(array, 'places')) == 2
    assert [m.text for m in by_ns(array, 'place_names')] == ['charging spot', 'fridge']
    assert (
        by_ns(array, 'place_names')[0].pose.position.z > by_ns(array, 'places')[0].pose.position.z
    )
    assert len(by_ns(array, 'keyframes')) == 1  # places are not keyframes
    assert_ids_unique(array)
    hits = hit_markers([Hit(places[1], 0.8, 'image')], 'map', STAMP, 'dock')
    assert any(m.text.endswith(': charging spot') for m in by_ns(hits, 'hits'))
