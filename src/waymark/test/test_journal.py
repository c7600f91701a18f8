# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The keyframe journal: what was accepted survives a restart, whole or not at all."""

from __future__ import annotations

import errno
import math
from dataclasses import replace

import pytest

from waymark.geometry import Pose
from waymark.memory.entries import CameraModel, DepthSamples, Keyframe
from waymark.memory.ingest.journal import JournalFullError, KeyframeJournal


def keyframe(stamp_ns: int, session: str = 'a', valid: bool = True) -> Keyframe:
    return Keyframe(
        session=session,
        index=stamp_ns % 100,
        stamp_ns=stamp_ns,
        pose=Pose.from_xyz_yaw(1.0, -2.0, 0.5, 0.7) if valid else Pose(),
        pose_valid=valid,
        map_epoch=3,
        image=b'\xff\xd8' + bytes(range(256)) * 4,
        image_format='jpeg',
        frame_id='map',
    )


def test_pending_keyframes_come_back_identical_and_oldest_first(tmp_path):
    journal = KeyframeJournal(tmp_path / 'j', max_bytes=1 << 20)
    written = [keyframe(30), keyframe(10, 'b', valid=False), keyframe(20)]
    paths = [journal.write(k) for k in written]
    assert journal.used_bytes == sum(p.stat().st_size for p in paths)

    reopened = KeyframeJournal(tmp_path / 'j', max_bytes=1 << 20)
    pending = reopened.pending()
    assert [e.keyframe.stamp_ns for e in pending] == [10, 20, 30]
    assert pending[0].keyframe == written[1]
    assert pending[2].keyframe == written[0]
    assert reopened.used_bytes == journal.used_bytes


def test_intrinsics_and_depth_survive_the_journal(tmp_path):
    journal = KeyframeJournal(tmp_path, max_bytes=1 << 20)
    camera = CameraModel(64, 48, 40.0, 41.0, 31.5, 23.5)
    depth = DepthSamples(2, 1, (1.25, math.nan))
    written = replace(keyframe(10), camera=camera, depth=depth)
    journal.write(written)
    [entry] = KeyframeJournal(tmp_path, max_bytes=1 << 20).pending()
    assert entry.keyframe.camera == camera
    assert entry.keyframe.depth.metres[0] == 1.25 and math.isnan(entry.keyframe.depth.metres[1])


def test_removed_keyframes_are_gone_and_their_bytes_freed(tmp_path):
    journal = KeyframeJournal(tmp_path, max_bytes=1 << 20)
    first, second = journal.write(keyframe(1)), journal.write(keyframe(2))
    journal.remove(first)
    journal.remove(first)  # twice is harmless
    assert [e.path for e in journal.pending()] == [second]
    assert journal.used_bytes == second.stat().st_size


def test_the_cap_refuses_a_keyframe_and_leaves_no_file(tmp_path):
    journal = KeyframeJournal(tmp_path, max_bytes=1500)
    journal.write(keyframe(1))
    with pytest.raises(JournalFullError):
        journal.write(keyframe(2))
    assert len(journal.pending()) == 1


def test_a_full_disk_leaves_no_partial_file(tmp_path, monkeypatch):
    journal = KeyframeJournal(tmp_path, max_bytes=1 << 20)

    def full(*_args):
        raise OSError(errno.ENOSPC, 'No space left on device')

    monkeypatch.setattr('os.fsync', full)
    with pytest.raises(OSError):
        journal.write(keyframe(1))
    assert list(tmp_path.iterdir()) == []
    assert journal.used_bytes == 0


def test_a_torn_file_is_set_aside_and_the_rest_recovered(tmp_path):
    journal = KeyframeJournal(tmp_path, max_bytes=1 << 20)
    good = journal.write(keyframe(1))
    torn = journal.write(keyframe(2))
    torn.write_bytes(torn.read_bytes()[:20])
    (tmp_path / '.a-00000000000000000003.keyframe.tmp').write_bytes(b'half')

    reopened = KeyframeJournal(tmp_path, max_bytes=1 << 20)
    assert [e.path for e in reopened.pending()] == [good]
    assert reopened.counts['journal_unreadable'] == 1
    assert torn.with_suffix('.unreadable').exists()
    assert not list(tmp_path.glob('.*.tmp'))
    assert reopened.used_bytes == good.stat().st_size


def test_writing_a_keyframe_again_replaces_it_and_counts_its_bytes_once(tmp_path):
    journal = KeyframeJournal(tmp_path, max_bytes=1 << 20)
    path = journal.write(keyframe(5))
    assert journal.holds(keyframe(5)) and not journal.holds(keyframe(6))
    assert journal.write(keyframe(5)) == path
    assert journal.used_bytes == path.stat().st_size


def test_a_resend_with_other_bytes_is_not_held(tmp_path):
    journal = KeyframeJournal(tmp_path, max_bytes=1 << 20)
    journal.write(keyframe(5))
    other = keyframe(5)
    assert not journal.holds(replace(other, image=other.image + b'\x00'))  # same stamp


def test_paths_come_oldest_stamp_first_and_an_unreadable_file_is_set_aside(tmp_path):
    journal = KeyframeJournal(tmp_path, max_bytes=1 << 20)
    for stamp in (300, 20, 1000):
        journal.write(keyframe(stamp, session='run-x'))
    paths = journal.paths()
    assert [journal.read(p).stamp_ns for p in paths] == [20, 300, 1000]
    paths[1].write_bytes(bytes(paths[1].stat().st_size))  # same size, no header
    assert journal.read(paths[1]) is None
    assert journal.counts['journal_unreadable'] == 1
    assert len(journal.paths()) == 2
    assert journal.used_bytes == sum(p.stat().st_size for p in journal.paths())
