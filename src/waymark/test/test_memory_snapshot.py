# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Saved indexes with a journal: an open after a crash loads them and refetches only what
was written since; anything damaged or out of step with Milvus is rebuilt, never trusted."""

from __future__ import annotations

import dataclasses
import errno
import inspect
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from waymark.memory.entries import FRAME, FrameRecord
from waymark.memory.storage import write_marks
from waymark.memory.storage.snapshot import MARK, Change, SnapshotDir, group_changes
from waymark.memory.storage.store import MemoryStore

T0 = 1_700_000_000 * 10**9
VIEWS = {'image': 4, 'text': 3}
VIEW_KEYS = ['frame/image', 'frame/text']
TABLE_KEYS = ['frame/records', 'place/records', 'segment/records']
KEYS = sorted(VIEW_KEYS + TABLE_KEYS)


def entry(session: str, index: int) -> FrameRecord:
    return FrameRecord(session, index, T0 + index * 10**9, float(index), 0, 0, 0, 0, True, '')


def vectors(index: int) -> dict[str, np.ndarray]:
    angle = 0.1 * index
    return {
        'image': np.asarray([np.cos(angle), np.sin(angle), 0, 0], np.float32),
        'text': np.asarray([0, np.sin(angle), np.cos(angle)], np.float32),
    }


def add(store: MemoryStore, session: str, indexes) -> None:
    indexes = list(indexes)
    store.add_many([entry(session, i) for i in indexes], [vectors(i) for i in indexes])


def nearest(store: MemoryStore, view: str, index: int) -> str:
    return store.search_view(view, vectors(index)[view], 1)[0].record.id


def crash_after(db: str, statements: str) -> None:
    """Run `statements` on an open store in a child process that dies without closing."""
    helpers = ''.join(inspect.getsource(function) for function in (entry, vectors, add))
    script = (
        'import os\n'
        'import numpy as np\n'
        'from waymark.memory.entries import FrameRecord\n'
        'from waymark.memory.storage.store import MemoryStore\n'
        f'T0 = {T0}\n'
        f'{helpers}\n'
        f'store = MemoryStore({db!r}, {VIEWS!r})\n'
        f'{statements}\n'
        'os._exit(0)\n'
    )
    subprocess.run([sys.executable, '-c', script], check=True, env=dict(os.environ), timeout=180)


@pytest.fixture
def db(tmp_path):
    return str(tmp_path / 'memory.db')


def snapshot_dir(db: str) -> SnapshotDir:
    return SnapshotDir(f'{db}.indexes/waymark')


# -- the journal and the mark, without Milvus -----------------------------------------------


def test_a_commit_starts_an_empty_journal_and_removes_the_older_generation(tmp_path):
    snapshots = SnapshotDir(tmp_path)
    assert snapshots.read() is None  # nothing saved yet
    snapshots.note(Change(FRAME, ('a/1',)))  # no snapshot: nothing to journal against
    snapshots.index_path('frame/image', 1).write_bytes(b'one')
    snapshots.commit(1, {'frame/image': 1})
    snapshots.note(Change(FRAME, ('a/1', 'a/2')))
    snapshots.note(Change(FRAME, session='b'))
    assert snapshots.pending == 3
    snapshots.index_path('frame/image', 2).write_bytes(b'two')
    snapshots.commit(2, {'frame/image': 5})
    snapshots.note(Change(FRAME, ('a/3',)))
    snapshots.close()
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        'frame-image.2.vindex',
        'journal.2.jsonl',
        MARK,
    ]
    saved = SnapshotDir(tmp_path).read()
    assert (saved.generation, saved.rows) == (2, {'frame/image': 5})
    assert saved.changes == [Change(FRAME, ('a/3',))]


def test_a_torn_last_line_is_a_crash_mid_note_and_is_ignored(tmp_path):
    snapshots = SnapshotDir(tmp_path)
    snapshots.commit(1, {})
    snapshots.note(Change(FRAME, ('a/1',)))
    snapshots.close()
    with open(tmp_path / 'journal.1.jsonl', 'a') as stream:
        stream.write('{"level": "frame", "ids": ["a/')
    reopened = SnapshotDir(tmp_path)
    assert reopened.read().changes == [Change(FRAME, ('a/1',))]
    reopened.note(Change(FRAME, ('a/2',)))  # appended after the cut, not onto the torn text
    reopened.close()
    assert SnapshotDir(tmp_path).read().changes == [
        Change(FRAME, ('a/1',)),
        Change(FRAME, ('a/2',)),
    ]


@pytest.mark.parametrize(
    'line',
    [
        'not json',
        '{"level": "frame", "ids": [], "session": null}',  # neither ids nor a session
        '{"level": "frame", "ids": ["a/1"], "session": "a"}',  # both
        '{"level": "frame", "ids": [1], "session": null}',
        '{"level": "frame"}',
    ],
)
def test_a_damaged_line_before_the_end_voids_the_snapshot(tmp_path, line):
    snapshots = SnapshotDir(tmp_path)
    snapshots.commit(1, {})
    snapshots.close()
    with open(tmp_path / 'journal.1.jsonl', 'a') as stream:
        stream.write(line + '\n{"level": "frame", "ids": ["a/2"], "session": null}\n')
    assert SnapshotDir(tmp_path).read() is None
    assert not (tmp_path / MARK).exists()  # voided for good, not only for this open


def test_a_journal_that_cannot_be_written_voids_the_snapshot(tmp_path, monkeypatch):
    snapshots = SnapshotDir(tmp_path)
    snapshots.commit(1, {})

    def full(_data):
        raise OSError(errno.ENOSPC, 'No space left on device')

    monkeypatch.setattr(snapshots._journal, 'write', full)
    snapshots.note(Change(FRAME, ('a/1',)))  # no exception: the write goes on
    assert not (tmp_path / MARK).exists()
    snapshots.note(Change(FRAME, ('a/2',)))  # journaling has stopped
    assert SnapshotDir(tmp_path).read() is None


def test_replay_groups_ids_but_keeps_session_removals_in_place():
    changes = [
        Change(FRAME, ('a/1',)),
        Change(FRAME, ('a/2',)),
        Change(FRAME, session='a'),
        Change(FRAME, ('a/1',)),
        Change('segment', ('a/s0',)),
    ]
    assert group_changes(changes) == [
        Change(FRAME, ('a/1', 'a/2')),
        Change(FRAME, session='a'),
        Change(FRAME, ('a/1',)),
        Change('segment', ('a/s0',)),
    ]


# -- the store -------------------------------------------------------------------------------


def test_a_crash_replays_writes_replacements_and_removals_in_order(db):
    with MemoryStore(db, VIEWS) as store:
        add(store, 'a', range(10))
        add(store, 'b', range(5))
    # After the snapshot: new entries, an entry re-added without its text view, session b
    # removed and then begun again, and an entry written after all of that.
    crash_after(
        db,
        "add(store, 'a', range(10, 15))\n"
        "store.add_many([FrameRecord('a', 3, 0, 0, 0, 0, 0, 0, True, '')], "
        "[{'image': np.asarray([0, 0, 1, 0], np.float32)}])\n"
        "store.delete_session('b')\n"
        "add(store, 'b', [7])\n"
        "add(store, 'c', [0])",
    )
    with MemoryStore(db, VIEWS) as store:
        report = store.load_report
        assert sorted(report.loaded) == KEYS
        assert report.rebuilt == []
        assert report.caught_up == 5 + 1 + 1 + 1  # ids refetched (the session counts none)
        assert report.views == {'frame/image': 17, 'frame/text': 16}
        assert store.sessions() == ['a', 'b', 'c']
        assert store.count('b') == 1
        assert store.get(['a/3'])[0].stamp_ns == 0  # the replaced record, from Milvus
        assert nearest(store, 'image', 12) == 'a/12'
        assert store.search_view('image', np.asarray([0, 0, 1, 0], np.float32), 1)[0].record.id == (
            'a/3'
        )
        text_ids = {hit.record.id for hit in store.search_view('text', vectors(3)['text'], 20)}
        assert 'a/3' not in text_ids and 'b/7' in text_ids and 'b/2' not in text_ids
    # Caught up and saved again: the next open has nothing left to refetch.
    with MemoryStore(db, VIEWS) as store:
        assert (store.load_report.caught_up, sorted(store.load_report.loaded)) == (0, KEYS)


def test_a_damaged_index_file_is_rebuilt_alone(db):
    with MemoryStore(db, VIEWS) as store:
        add(store, 'a', range(20))
    generation, _ = store.snapshot_state  # the one its close saved
    path = snapshot_dir(db).index_path('frame/text', generation)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with MemoryStore(db, VIEWS) as store:
        assert sorted(store.load_report.loaded) == sorted(['frame/image', *TABLE_KEYS])
        assert store.load_report.views == {'frame/image': 20, 'frame/text': 20}
        assert nearest(store, 'text', 7) == 'a/7'


def other_robot(db: str, tmp_path: Path) -> MemoryStore:
    """Another robot writing to the same database, its snapshots kept elsewhere."""
    return MemoryStore(db, VIEWS, robot='b', index_dir=tmp_path / 'b')


def both_robots_write(db: str, tmp_path: Path) -> None:
    """Robot a writes session a (10 entries) and closes; then robot b writes z (3)."""
    with MemoryStore(db, VIEWS, robot='a') as store:
        add(store, 'a', range(10))
    with other_robot(db, tmp_path) as other:
        add(other, 'z', range(3))


def test_another_robots_writes_are_caught_up_by_their_stamps(db, tmp_path):
    # The other robot keeps its snapshots elsewhere: a's journal never hears of its
    # writes; their stamps tell.
    both_robots_write(db, tmp_path)
    with MemoryStore(db, VIEWS, robot='a') as store:
        report = store.load_report
        assert (sorted(report.loaded), report.rebuilt) == (KEYS, [])
        assert (report.caught_up, report.caught_up_others) == (0, 3)
        assert store.count() == 13
        sessions = {
            hit.record.session for hit in store.search_view('image', vectors(1)['image'], 20)
        }
        assert sessions == {'a', 'z'}
    with other_robot(db, tmp_path) as other:
        other.add_many([dataclasses.replace(entry('z', 1), text='REPLACED')], [vectors(1)])
        add(other, 'z', [3])
    with MemoryStore(db, VIEWS, robot='a') as store:
        assert store.load_report.rebuilt == []
        assert store.count() == 14
        assert store.get(['z/1'])[0].text == 'REPLACED'  # a replaced row is caught up too


def test_a_session_another_robot_deleted_refills_the_table(db, tmp_path):
    both_robots_write(db, tmp_path)
    with MemoryStore(db, VIEWS, robot='a') as store:
        assert store.count() == 13
    with other_robot(db, tmp_path) as other:
        other.delete_session('z')
    # A deletion leaves no stamped row behind: the row counts tell, and the table is read
    # again whole.
    with MemoryStore(db, VIEWS, robot='a') as store:
        assert sorted(store.load_report.rebuilt) == ['frame/image', 'frame/records', 'frame/text']
        assert (store.count(), store.sessions()) == (10, ['a'])


def test_a_robot_whose_clock_stepped_back_still_stamps_after_its_rows(db, tmp_path, monkeypatch):
    with other_robot(db, tmp_path) as other:
        add(other, 'z', range(3))
    with MemoryStore(db, VIEWS, robot='a') as store:
        assert store.count() == 3
    # The other robot restarts with its clock an hour back (NTP, a dead RTC battery).
    now = time.time_ns()
    monkeypatch.setattr(write_marks.time, 'time_ns', lambda: now - 3600 * 10**9)
    with other_robot(db, tmp_path) as other:
        add(other, 'z', range(3, 6))
    monkeypatch.undo()
    with MemoryStore(db, VIEWS, robot='a') as store:
        # Stamped after its own rows, so found by their stamps, not by a rebuild: the three
        # new rows and the three old ones read again within the margin.
        assert (store.load_report.caught_up_others, store.load_report.rebuilt) == (6, [])
        assert store.count() == 6


def test_a_snapshot_read_from_other_collections_is_refilled(db):
    with MemoryStore(db, VIEWS) as store:
        add(store, 'a', range(4))
    mark_path = snapshot_dir(db).directory / MARK
    mark = json.loads(mark_path.read_text())
    mark['source'] = {name: 7 for name in mark['source']}  # as if made again since
    mark_path.write_text(json.dumps(mark))
    with MemoryStore(db, VIEWS) as store:
        assert store.load_report.loaded == [] and store.count() == 4


def test_a_snapshot_is_saved_every_snapshot_every_ids(db):
    with MemoryStore(db, VIEWS, snapshot_every=8) as store:
        first, _ = store.snapshot_state
        add(store, 'a', range(5))
        assert store.snapshot_state == (first, 5)
        add(store, 'a', range(5, 10))  # 10 >= 8: saved
        assert store.snapshot_state == (first + 1, 0)
        add(store, 'a', range(10, 13))
    crash_after(db, "add(store, 'a', [13])")
    with MemoryStore(db, VIEWS) as store:
        assert store.load_report.caught_up == 1
        assert store.count() == 14


@pytest.mark.parametrize('backend', ['milvus', 'auto'])
def test_a_memory_searched_in_milvus_saves_its_tables_and_catches_up(db, tmp_path, backend):
    with MemoryStore(db, VIEWS, search_backend=backend, robot='a') as store:
        add(store, 'a', range(10))
    saved = sorted(path.name for path in snapshot_dir(db).directory.iterdir())
    assert not any(name.endswith('.vindex') for name in saved)  # Milvus holds the vectors
    with MemoryStore(db, VIEWS, search_backend=backend, robot='b', index_dir=tmp_path / 'b') as b:
        add(b, 'z', range(4))
    with MemoryStore(db, VIEWS, search_backend=backend, robot='a') as store:
        report = store.load_report
        assert (sorted(report.loaded), report.rebuilt) == (TABLE_KEYS, [])
        assert (report.caught_up_others, store.count()) == (4, 14)
        assert store.search_position(2.0, 0, 0, 1, sessions=['z'])[0].record.id == 'z/2'


def test_snapshot_every_is_checked(db):
    for bad in (0, -1, True):
        with pytest.raises(ValueError, match='snapshot_every'):
            MemoryStore(db, VIEWS, snapshot_every=bad)
