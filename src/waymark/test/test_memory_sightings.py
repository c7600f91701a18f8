# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Sightings (camera, text boxes, depth samples) through a real Milvus Lite store: round
trip, size bound, and databases made before the sighting field existed."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from pymilvus import MilvusClient

from waymark.memory.entries import (
    FRAME,
    SEGMENT,
    CameraModel,
    DepthSamples,
    FrameRecord,
    Sighting,
    TextBox,
)
from waymark.memory.storage import sighting_codec
from waymark.memory.storage.milvus_rows import record_row as _record_row
from waymark.memory.storage.schema import SIGHTING_FIELD, SIGHTING_MAX_BYTES, WRITTEN_FIELD
from waymark.memory.storage.schema import records_fields as _records_fields
from waymark.memory.storage.store import MemoryStore

T0 = 1_700_000_000 * 10**9
CAMERA = CameraModel.from_hfov(640, 480, 90.0)
SIGN = Sighting(
    camera=CAMERA,
    text_boxes=(TextBox('PHARMACY', 0.4125, 0.3333, 0.6875, 0.45),),
    depth=DepthSamples(4, 3, (2.5, 2.25, math.nan, 3.0) * 3),
)


def frame(index, sighting=None, kind=FRAME, session='a'):
    return FrameRecord(
        session=session,
        index=index,
        stamp_ns=T0 + index * 10**9,
        x=float(index),
        y=0.0,
        z=0.4,
        yaw=0.0,
        map_epoch=1,
        pose_valid=True,
        image_ref='',
        text='PHARMACY' if sighting else '',
        kind=kind,
        end_ns=None if kind == FRAME else T0 + index * 10**9 + 1,
        sighting=sighting,
    )


def same(a: Sighting | None, b: Sighting | None) -> bool:
    """Equal as stored (rounded), with NaN depths equal to each other."""
    if a is None or b is None:
        return a is b
    a, b = sighting_codec.rounded(a), sighting_codec.rounded(b)
    return (
        a.camera == b.camera
        and a.text_boxes == b.text_boxes
        and (a.depth is None) == (b.depth is None)
        and (a.depth is None or np.array_equal(a.depth.metres, b.depth.metres, equal_nan=True))
    )


def test_sightings_round_trip_through_milvus_the_table_and_a_restart(tmp_path):
    path = str(tmp_path / 'memory.db')
    frames = [frame(0, SIGN), frame(1), frame(2, Sighting(camera=CAMERA))]
    segment = frame(0, Sighting(text_boxes=SIGN.text_boxes), kind=SEGMENT)
    with MemoryStore(path, {'text': 3}, segment_views={'text': 3}) as store:
        store.add_many(frames, [{'text': np.ones(3)}, {}, {}])
        store.add(segment, {})
        before = store.get([f.id for f in frames])
        by_place = [hit.record for hit in store.search_range(0.0, 0.0, 5.0)]
        by_text = store.search_view('text', np.ones(3), 1)[0].record
    with MemoryStore(path, {'text': 3}, segment_views={'text': 3}) as store:
        after = store.get([f.id for f in frames])
        (stored_segment,) = store.get([segment.id], level=SEGMENT)
        by_time = [hit.record for hit in store.search_time(T0, 3)]

    for records in (before, after, by_place, by_time):
        assert [same(r.sighting, f.sighting) for r, f in zip(records, frames, strict=True)] == [
            True
        ] * 3
    assert same(by_text.sighting, SIGN)
    assert after[1].sighting is None
    assert same(stored_segment.sighting, segment.sighting)
    assert after[0].sighting.camera == after[2].sighting.camera


def test_a_sign_frame_costs_a_few_hundred_bytes():
    row = _record_row(frame(0, SIGN))

    assert 150 < len(row[SIGHTING_FIELD]) < 400
    assert _record_row(frame(1))[SIGHTING_FIELD] == ''


def test_an_oversized_sighting_loses_boxes_then_depth_never_the_write():
    boxes = tuple(TextBox(f'LINE {i} ' * 8, 0.1, 0.1, 0.2, 0.2) for i in range(64))
    depth = DepthSamples(40, 30, tuple(1.234567 + i for i in range(1200)))
    huge = Sighting(CAMERA, boxes, depth)

    text = sighting_codec.encode(huge, SIGHTING_MAX_BYTES)
    kept = sighting_codec.decode(text)

    assert len(text.encode()) <= SIGHTING_MAX_BYTES
    assert kept.camera.fx == pytest.approx(CAMERA.fx) and kept.depth is None  # grid too large
    small_grid = dataclasses.replace(huge, depth=DepthSamples(2, 1, (1.23456, math.nan)))
    kept = sighting_codec.decode(sighting_codec.encode(small_grid, SIGHTING_MAX_BYTES))
    assert kept.depth.metres[0] == 1.235 and math.isnan(kept.depth.metres[1])
    assert 0 < len(kept.text_boxes) < 64
    assert kept.text_boxes == boxes[: len(kept.text_boxes)]  # the first ones, unchanged


def test_a_sighting_that_does_not_parse_leaves_the_record_without_one():
    assert sighting_codec.decode('{"camera": {"width": -1}}') is None
    assert sighting_codec.decode('not json') is None
    assert sighting_codec.decode(None) is None
    assert sighting_codec.decode('[]') is None
    bad_box = '{"text_boxes": [{"text": "EXIT", "left": "0", "top": 0, "right": 2, "bottom": 1}]}'
    assert sighting_codec.decode(bad_box) is None
    good_box = bad_box.replace('"0"', '0').replace('2', '1')
    assert sighting_codec.decode(good_box).text_boxes == (TextBox('EXIT', 0, 0, 1, 1),)


def _old_database(path: str, without=(SIGHTING_FIELD, WRITTEN_FIELD)) -> None:
    """A database as this store made it before sightings (and write stamps): the same rows
    without the fields named in `without`."""
    client = MilvusClient(path)
    for name in ('waymark_frames', 'waymark_segments'):
        schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
        for spec in _records_fields():
            if spec.name not in without:
                schema.add_field(
                    spec.name,
                    spec.dtype,
                    is_primary=spec.primary,
                    is_partition_key=spec.partition_key,
                    **spec.params,
                )
        client.create_collection(name, schema=schema, consistency_level='Strong')
        params = client.prepare_index_params()
        params.add_index('planar', index_type='FLAT', metric_type='L2')
        client.create_index(name, params)
    rows = [_record_row(frame(i)) for i in range(3)]
    for row in rows:
        for name in without:
            del row[name]
    client.load_collection('waymark_frames')
    client.insert('waymark_frames', rows)
    client.close()
    from milvus_lite.server_manager import server_manager_instance

    server_manager_instance.release_server(path)


def test_a_database_made_before_sightings_is_migrated_on_open(tmp_path):
    path = str(tmp_path / 'memory.db')
    _old_database(path)

    with MemoryStore(path, {}) as store:
        old = store.get([frame(i).id for i in range(3)])
        store.add(frame(3, SIGN), {})
    with MemoryStore(path, {}) as store:
        again = store.get([frame(i).id for i in range(4)])
        client = store._client
        fields = client.describe_collection('waymark_frames')['fields']
        collections = client.list_collections()

    assert old == [frame(i) for i in range(3)]  # every old record, with sighting None
    assert again[:3] == old and same(again[3].sighting, SIGN)
    assert SIGHTING_FIELD in {item['name'] for item in fields}
    assert not any(name.endswith('_migrating') for name in collections)


def test_a_database_made_before_write_stamps_is_migrated_and_stamps_from_then(tmp_path):
    path = str(tmp_path / 'memory.db')
    _old_database(path, without=(WRITTEN_FIELD,))
    with MemoryStore(path, {}, robot='r') as store:
        store.add(frame(3), {})
        rows = store._client.query('waymark_frames', filter='', output_fields=['id', WRITTEN_FIELD])
    stamps = {row['id']: row[WRITTEN_FIELD] for row in rows}
    assert [stamps[frame(i).id] for i in range(3)] == [0, 0, 0]  # written before stamps
    assert stamps[frame(3).id] > 0
    with MemoryStore(path, {}, robot='r') as store:
        assert store.get([frame(i).id for i in range(4)]) == [frame(i) for i in range(4)]


def test_an_interrupted_migration_is_finished_on_the_next_open(tmp_path):
    path = str(tmp_path / 'memory.db')
    _old_database(path)
    with MemoryStore(path, {}) as store:  # migrate, then make it look as if the old one
        store._client.rename_collection('waymark_frames', 'waymark_frames_migrating')
    # was dropped and the copy not yet renamed
    with MemoryStore(path, {}) as store:
        assert store.get([frame(i).id for i in range(3)]) == [frame(i) for i in range(3)]
