# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""RecordTable: time, position and index queries against brute-force references."""

from __future__ import annotations

import math
import os
import pickle
from dataclasses import replace

import numpy as np
import pytest

from waymark.memory.entries import (
    SEGMENT,
    CameraModel,
    DepthSamples,
    FrameRecord,
    Sighting,
    TextBox,
)
from waymark.memory.storage.checked_file import write_checked
from waymark.memory.storage.record_table import RecordTable, SessionSummary

SESSIONS = ['run-b', 'run-a', 'lab.2', 'yard_1']


def _record(session: str, index: int, stamp: int, **fields) -> FrameRecord:
    values = {
        'x': 0.0,
        'y': 0.0,
        'z': 0.0,
        'yaw': 0.0,
        'map_epoch': 0,
        'pose_valid': True,
        'image_ref': f'images/{session}/{index:08d}.jpg',
    }
    values.update(fields)
    return FrameRecord(session, index, stamp, **values)


def _random_records(count: int, seed: int, stamps: int = 300) -> list[FrameRecord]:
    """Several sessions, stamps drawn from few values (many duplicates), some poses invalid."""
    rng = np.random.default_rng(seed)
    records = []
    next_index = dict.fromkeys(SESSIONS, 0)
    for _ in range(count):
        session = SESSIONS[rng.integers(len(SESSIONS))]
        valid = bool(rng.random() < 0.8)
        records.append(
            _record(
                session,
                next_index[session],
                int(rng.integers(0, stamps)) * 1_000_000,
                x=float(rng.uniform(-50, 50)),
                y=float(rng.uniform(-50, 50)),
                z=float(rng.uniform(-2, 2)),
                pose_valid=valid,
                map_epoch=int(rng.integers(0, 4)),
            )
        )
        next_index[session] += 1
    return records


def _fill(records: list[FrameRecord], seed: int = 0) -> RecordTable:
    """Insert in shuffled batches with a query after each, so rows arrive out of stamp
    order and each batch is merged into an order already built."""
    table = RecordTable()
    order = np.random.default_rng(seed).permutation(len(records))
    for batch in np.array_split(order, 7):
        table.upsert([records[i] for i in batch])
        table.chronological(0, 2**62, 1)
    return table


def _chronological(records, start, end, k, sessions=None):
    chosen = [
        r
        for r in records
        if start <= r.stamp_ns <= end and (sessions is None or r.session in sessions)
    ]
    return sorted(chosen, key=lambda r: (r.stamp_ns, r.session, r.index))[:k]


def _ids(records) -> list[str]:
    return [r.id for r in records]


# -- time --------------------------------------------------------------------------------


def test_chronological_matches_a_sorted_reference():
    records = _random_records(3000, seed=1)
    table = _fill(records)
    rng = np.random.default_rng(2)
    for _ in range(200):
        start, end = sorted(int(v) * 1_000_000 for v in rng.integers(-10, 310, 2))
        k = int(rng.choice([1, 2, 5, 17, 100, 5000]))
        sessions = [None, ['run-a'], ['yard_1', 'lab.2'], ['nobody', 'run-b']][rng.integers(4)]
        expected = _chronological(records, start, end, k, sessions)
        assert _ids(table.chronological(start, end, k, sessions)) == _ids(expected)


def test_chronological_follows_writes_that_change_stamps_and_remove_sessions():
    records = _random_records(2000, seed=3)
    table = _fill(records)
    table.chronological(0, 10**12, 5)
    rng = np.random.default_rng(4)
    moved = [replace(r, stamp_ns=int(rng.integers(0, 300)) * 1_000_000) for r in records[::9]]
    table.upsert(moved)
    current = {r.id: r for r in records} | {r.id: r for r in moved}
    removed = table.remove_session('lab.2')
    assert _ids(removed) == _ids(
        sorted((r for r in current.values() if r.session == 'lab.2'), key=lambda r: r.index)
    )
    left = [r for r in current.values() if r.session != 'lab.2']
    table.chronological(0, 10**12, 1)
    # Late rows stamped before rows already ordered are merged into the order.
    late = [_record('late', i, (299 - i) * 1_000_000) for i in range(40)]
    table.upsert(late)
    left += late
    for start, end, k, sessions in [
        (0, 10**12, 10_000, None),
        (5_000_000, 90_000_000, 33, None),
        (0, 10**12, 25, ['late']),
        (100_000_000, 200_000_000, 60, ['run-a', 'late']),
        (0, 10**12, 5, ['lab.2']),
    ]:
        expected = _chronological(left, start, end, k, sessions)
        assert _ids(table.chronological(start, end, k, sessions)) == _ids(expected)


def test_chronological_edges():
    table = _fill(_random_records(200, seed=6))
    assert table.chronological(10, 5, 3) == []
    assert table.chronological(0, 10**12, 3, sessions=[]) == []
    assert table.chronological(0, 10**12, 3, sessions=['nobody']) == []
    assert len(table.chronological(-(2**70), 2**70, 3)) == 3
    assert RecordTable().chronological(0, 10, 3) == []
    with pytest.raises(ValueError):
        table.chronological(0, 10, 0)


def test_find_stamp():
    table = RecordTable()
    table.upsert(
        [
            _record('run-a', 4, 500),
            _record('run-a', 2, 500),
            _record('run-b', 1, 500),
            _record('run-a', 3, 700),
        ]
    )
    assert table.find_stamp('run-a', 500).index == 2
    assert table.find_stamp('run-b', 500).index == 1
    assert table.find_stamp('run-a', 700).index == 3
    assert table.find_stamp('run-b', 700) is None
    assert table.find_stamp('run-a', 501) is None
    assert table.find_stamp('nobody', 500) is None


# -- position ----------------------------------------------------------------------------


def _distance(record: FrameRecord, point: tuple[float, ...]) -> float:
    return math.dist((record.x, record.y, record.z)[: len(point)], point)


def test_nearest_matches_brute_force_and_skips_invalid_poses():
    records = _random_records(3000, seed=7)
    # Records with an invalid pose right on the query points must never come back.
    records += [
        _record('run-a', 10_000 + i, 0, x=float(i), y=2.0, z=0.5, pose_valid=False)
        for i in range(5)
    ]
    table = _fill(records)
    rng = np.random.default_rng(8)
    for i in range(50):
        point = (float(i % 5), 2.0, 0.5) if i < 5 else tuple(rng.uniform(-60, 60, 3))
        k = int(rng.choice([1, 3, 10, 500]))
        sessions = [None, ['run-a'], ['run-b', 'yard_1']][i % 3]
        found = table.nearest(*point, k, sessions=sessions)
        valid = [r for r in records if r.pose_valid and (sessions is None or r.session in sessions)]
        expected = sorted(valid, key=lambda r: _distance(r, point))[:k]
        assert _ids(r for r, _ in found) == _ids(expected)
        for record, distance in found:
            assert record.pose_valid
            assert distance == pytest.approx(_distance(record, point))


def test_within_matches_brute_force_and_skips_invalid_poses():
    records = _random_records(3000, seed=9)
    records += [_record('run-b', 20_000, 0, x=1.0, y=1.0, pose_valid=False)]
    table = _fill(records)
    rng = np.random.default_rng(10)
    for i in range(50):
        point = (1.0, 1.0) if i == 0 else tuple(rng.uniform(-55, 55, 2))
        radius = float(rng.choice([0.5, 3.0, 12.0, 200.0]))
        k = int(rng.choice([1, 7, 10_000]))
        sessions = [None, ['yard_1'], ['run-b', 'lab.2']][i % 3]
        found = table.within(*point, radius, k, sessions=sessions)
        inside = [
            r
            for r in records
            if r.pose_valid
            and (sessions is None or r.session in sessions)
            and _distance(r, point) <= radius
        ]
        expected = sorted(inside, key=lambda r: _distance(r, point))[:k]
        assert _ids(r for r, _ in found) == _ids(expected)
        assert all(d <= radius for _, d in found)
        assert all(r.pose_valid for r, _ in found)


def test_non_finite_pose_counts_as_invalid():
    table = RecordTable()
    table.upsert([_record('run-a', 0, 1, x=math.nan), _record('run-a', 1, 2, x=3.0)])
    assert [r.index for r, _ in table.nearest(0.0, 0.0, 0.0, 5)] == [1]
    assert table.summary('run-a').with_pose == 1


@pytest.mark.parametrize(
    'call',
    [
        lambda t: t.nearest(0.0, 0.0, 0.0, 0),
        lambda t: t.nearest(math.nan, 0.0, 0.0, 3),
        lambda t: t.nearest(0.0, math.inf, 0.0, 3),
        lambda t: t.within(0.0, 0.0, 1.0, 0),
        lambda t: t.within(0.0, math.nan, 1.0, 3),
        lambda t: t.within(0.0, 0.0, 0.0, 3),
        lambda t: t.within(0.0, 0.0, -1.0, 3),
        lambda t: t.within(0.0, 0.0, math.nan, 3),
        lambda t: t.within(0.0, 0.0, math.inf, 3),
        lambda t: t.index_range('run-a', 0, 5, 0),
        lambda t: t.chronological(0, 5, -1),
    ],
)
def test_bad_arguments_raise(call):
    table = _fill(_random_records(50, seed=11))
    with pytest.raises(ValueError):
        call(table)


# -- index and sessions ------------------------------------------------------------------


def test_index_range_in_index_order():
    records = [_record('run-a', i, 1000 - i) for i in range(0, 60, 2)]
    records += [_record('run-b', i, i) for i in range(60)]
    table = _fill(records)
    assert [r.index for r in table.index_range('run-a', 10, 20, 100)] == [10, 12, 14, 16, 18, 20]
    assert [r.index for r in table.index_range('run-a', 9, 21, 3)] == [10, 12, 14]
    assert [r.index for r in table.index_range('run-b', 58, 100, 10)] == [58, 59]
    assert table.index_range('run-a', 21, 10, 10) == []
    assert table.index_range('nobody', 0, 10, 10) == []


def test_next_index_count_sessions_and_get():
    records = _random_records(500, seed=12)
    table = _fill(records)
    for session in SESSIONS:
        own = [r for r in records if r.session == session]
        assert table.next_index(session) == max(r.index for r in own) + 1
        assert table.count(session) == len(own)
    assert table.next_index('nobody') == 0
    assert table.count('nobody') == 0
    assert len(table) == table.count() == 500
    assert table.sessions() == sorted(SESSIONS)
    wanted = [records[5].id, 'nobody/1', records[2].id, records[5].id]
    assert table.get(wanted) == [records[5], records[2], records[5]]
    table.upsert([_record('run-a', 10_000, 5)])
    assert table.next_index('run-a') == 10_001


def test_upsert_replaces_by_id():
    table = RecordTable()
    table.upsert([_record('run-a', 0, 100, x=1.0), _record('run-a', 1, 200, x=2.0)])
    table.upsert([_record('run-a', 0, 300, x=9.0, text='sign'), _record('run-a', 0, 300, x=8.0)])
    assert len(table) == 2
    assert table.get(['run-a/0'])[0].x == 8.0
    assert _ids(table.chronological(0, 1000, 5)) == ['run-a/1', 'run-a/0']
    assert table.find_stamp('run-a', 100) is None
    assert table.nearest(8.0, 0.0, 0.0, 1)[0][0].index == 0


def test_frames_and_segments_are_distinct_entries():
    table = RecordTable()
    frame = _record('run-a', 3, 100)
    segment = _record('run-a', 3, 100, kind=SEGMENT, end_ns=900)
    table.upsert([frame, segment])
    assert len(table) == 2
    assert table.get([segment.id, frame.id]) == [segment, frame]
    assert table.summary('run-a').end_ns == 900


def test_summary():
    table = RecordTable()
    table.upsert(
        [
            _record('run-a', 0, 500, map_epoch=1),
            _record('run-a', 1, 300, map_epoch=3, pose_valid=False),
            _record('run-a', 2, 900, map_epoch=2),
            _record('run-b', 0, 50, map_epoch=7),
        ]
    )
    assert table.summary('run-a') == SessionSummary(
        frames=3, with_pose=2, start_ns=300, end_ns=900, last_map_epoch=3
    )
    assert table.summary('run-b') == SessionSummary(1, 1, 50, 50, 7)
    assert table.summary('nobody') == SessionSummary(0, 0, 0, 0, 0)


def test_remove_session():
    records = _random_records(800, seed=13)
    table = _fill(records)
    removed = table.remove_session('run-a')
    own = sorted((r for r in records if r.session == 'run-a'), key=lambda r: r.index)
    assert removed == own
    assert table.remove_session('run-a') == []
    assert table.remove_session('nobody') == []
    left = [r for r in records if r.session != 'run-a']
    assert len(table) == len(left)
    assert table.count('run-a') == 0
    assert table.next_index('run-a') == 0
    assert table.summary('run-a') == SessionSummary(0, 0, 0, 0, 0)
    assert 'run-a' not in table.sessions()
    assert table.get([own[0].id]) == []
    assert table.get([left[-1].id]) == [left[-1]]
    assert all(r.session != 'run-a' for r, _ in table.nearest(0.0, 0.0, 0.0, 900))
    assert _ids(table.chronological(0, 10**12, 900)) == _ids(_chronological(left, 0, 10**12, 900))
    table.upsert([_record('run-a', 0, 42)])
    assert table.next_index('run-a') == 1
    assert table.find_stamp('run-a', 42).index == 0


def test_bad_records_add_nothing():
    table = _fill(_random_records(20, seed=14))
    with pytest.raises(ValueError):
        table.upsert([_record('run-a', 500, 1), _record('run-a', 501, 2**70)])
    with pytest.raises(ValueError):
        table.upsert([_record('run-a', 502, 1), _record('run-a', 503, 2, x='far')])
    assert len(table) == 20
    assert table.get(['run-a/500', 'run-a/502']) == []


def test_nearest_when_the_strided_sample_misleads():
    # Every 16th row lies close and the rest far, so a threshold taken from a strided
    # sample keeps fewer rows than asked for; the answer must still be exact.
    records = [
        _record('run-a', i, i, x=(i / 16 * 0.001 if i % 16 == 0 else 100.0 + i * 0.001))
        for i in range(20_000)
    ]
    table = RecordTable()
    table.upsert(records)
    for k in (5, 100, 1500):
        found = table.nearest(0.0, 0.0, 0.0, k)
        expected = sorted(records, key=lambda r: (abs(r.x), r.index))[:k]
        assert _ids(r for r, _ in found) == _ids(expected)
        within = table.within(0.0, 0.0, 150.0, k)
        assert _ids(r for r, _ in within) == _ids(expected)


# -- saved tables ----------------------------------------------------------------------------


def _answers(table: RecordTable) -> tuple:
    return (
        _ids(table.chronological(0, 2**62, 50)),
        [(record.id, round(d, 9)) for record, d in table.nearest(1.0, 2.0, 0.0, 20)],
        [(record.id, round(d, 9)) for record, d in table.within(0.0, 0.0, 20.0, 30)],
        _ids(table.index_range(SESSIONS[0], 3, 40, 100)),
        table.sessions(),
        [table.summary(session) for session in SESSIONS],
        [table.next_index(session) for session in SESSIONS],
    )


def test_a_saved_table_loads_with_the_same_answers_and_takes_writes(tmp_path):
    records = _random_records(2_000, seed=11)
    sighting = Sighting(
        camera=CameraModel(640, 480, 500.0, 500.0, 320.0, 240.0),
        text_boxes=(TextBox('EXIT', 0.1, 0.1, 0.3, 0.2),),
        depth=DepthSamples(2, 1, (1.5, 2.5)),
    )
    kept = next(i for i, record in enumerate(records) if record.session != SESSIONS[-1])
    records[kept] = replace(records[kept], text='FIRE EXIT', text_size=0.2, sighting=sighting)
    table = _fill(records)
    table.remove_session(SESSIONS[-1])
    path = tmp_path / 'frame.records'
    table.save(path)
    loaded = RecordTable.load(path)
    assert loaded is not None and len(loaded) == len(table)
    assert _answers(loaded) == _answers(table)
    assert loaded.get([records[kept].id]) == [records[kept]]
    more = [_record(SESSIONS[0], 10_000 + i, 5 * i, x=float(i)) for i in range(10)]
    for each in (table, loaded):
        each.upsert(more)
        each.remove_session(SESSIONS[1])
    assert _answers(loaded) == _answers(table)


def test_a_damaged_or_foreign_table_file_is_refused(tmp_path):
    table = _fill(_random_records(200, seed=3))
    path = tmp_path / 'frame.records'
    table.save(path)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    damaged = tmp_path / 'damaged.records'
    damaged.write_bytes(bytes(data))
    assert RecordTable.load(damaged) is None
    truncated = tmp_path / 'truncated.records'
    truncated.write_bytes(bytes(data[:-20]))
    assert RecordTable.load(truncated) is None
    assert RecordTable.load(tmp_path / 'missing.records') is None


def test_a_table_file_cannot_run_code(tmp_path):
    """A well-framed file whose pickle names a global outside the table's classes."""
    marker = tmp_path / 'ran'

    class Payload:
        def __reduce__(self):
            return (os.system, (f'touch {marker}',))

    path = tmp_path / 'evil.records'
    write_checked(path, b'WAYMARK-RECORD-TABLE\n', lambda out: pickle.dump((1, Payload()), out))
    assert RecordTable.load(path) is None
    assert not marker.exists()
    # Valid pickles of the wrong shape are refused too.
    write_checked(path, b'WAYMARK-RECORD-TABLE\n', lambda out: pickle.dump((1, {'_ids': []}), out))
    assert RecordTable.load(path) is None


def test_replaced_and_removed_records_do_not_pile_up():
    """Records are kept encoded; what replacements and removals leave behind is reclaimed."""
    table = RecordTable()
    records = [_record(SESSIONS[0], i, i, text='x' * 500) for i in range(2_000)]
    for round_ in range(6):
        table.upsert([replace(record, text=f'{round_}' * 500) for record in records])
    table.upsert([_record(SESSIONS[1], i, i, text='y' * 500) for i in range(2_000)])
    table.remove_session(SESSIONS[1])
    assert [record.text for record in table.get([r.id for r in records[:3]])] == ['5' * 500] * 3
    live = len(table) * 600  # about 500 characters of text and 100 bytes of fields a record
    assert len(table._blob) <= 2 * live + (1 << 20)


def test_a_tampered_record_cannot_run_code(tmp_path):
    marker = tmp_path / 'ran'

    class Payload:
        def __reduce__(self):
            return (os.system, (f'touch {marker}',))

    table = _fill(_random_records(50, seed=4))
    row = 0
    evil = pickle.dumps(Payload())
    table._columns['blob_start'][row] = len(table._blob)
    table._blob += evil
    table._columns['blob_end'][row] = len(table._blob)
    path = tmp_path / 'frame.records'
    table.save(path)
    loaded = RecordTable.load(path)
    assert loaded is not None  # records are decoded when read, not at load
    with pytest.raises(pickle.UnpicklingError, match='does not hold'):
        loaded.get([loaded._ids[row]])
    assert not marker.exists()
    assert len(loaded.get(loaded._ids[1:])) == len(loaded) - 1
