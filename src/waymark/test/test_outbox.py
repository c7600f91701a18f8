# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""capture's outbox and saved state: nothing sent is forgotten before memory has it, the
bounds drop the oldest and say so, and a restart continues the same session."""

from __future__ import annotations

import pytest

from waymark.geometry import Pose
from waymark.memory.entries import Keyframe
from waymark.memory.ingest.capture import CaptureConfig, KeyframeBuilder
from waymark.memory.ingest.outbox import CaptureState, KeyframeOutbox, OutboxLimits

S = 1_000_000_000


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def keyframe(index: int, session: str = 'run') -> Keyframe:
    return Keyframe(
        session=session,
        index=index,
        stamp_ns=(10 + index) * S,
        pose=Pose.from_xyz_yaw(float(index), 0.0, 0.0, 0.0),
        pose_valid=True,
        map_epoch=0,
        image=b'\xff\xd8' + bytes([index % 256]) * 1000,
        image_format='jpeg',
        frame_id='map',
    )


def outbox(tmp_path, clock, **limits) -> KeyframeOutbox:
    return KeyframeOutbox(
        tmp_path / 'outbox', OutboxLimits(**limits), clock=clock, wall=clock, fsync=False
    )


def test_unacknowledged_keyframes_are_resent_oldest_first_with_a_growing_wait(tmp_path):
    clock = Clock()
    box = outbox(tmp_path, clock, resend_initial_s=1.0, resend_max_s=3.0)
    for i in range(3):
        assert box.add(keyframe(i))
    assert box.due() == []  # just sent
    assert box.acknowledge('run', [1]) == 1
    assert box.acknowledge('other', [0]) == 0  # another sender's session
    clock.now += 1.0
    assert [k.index for k in box.due()] == [0, 2]
    assert box.due() == []
    clock.now += 1.9  # the wait doubled to 2 s
    assert box.due() == []
    clock.now += 0.1
    assert box.due() == [keyframe(0), keyframe(2)]  # read back whole from disk
    clock.now += 3.0  # capped at resend_max_s
    assert len(box.due()) == 2
    assert box.counts['outbox_resent'] == 6 and box.counts['outbox_acknowledged'] == 1


def test_the_batch_bounds_one_resend_and_hurry_makes_all_due(tmp_path):
    clock = Clock()
    box = outbox(tmp_path, clock, resend_initial_s=5.0, resend_max_s=60.0, resend_batch=2)
    for i in range(5):
        box.add(keyframe(i))
    assert box.due() == []
    box.hurry()
    assert [k.index for k in box.due()] == [0, 1]
    assert [k.index for k in box.due()] == [2, 3]
    assert [k.index for k in box.due()] == [4]


def test_the_byte_cap_drops_the_oldest_and_counts_it(tmp_path):
    clock = Clock()
    size = len(keyframe(0).image) + 400
    box = outbox(tmp_path, clock, max_bytes=3 * size)
    for i in range(5):
        assert box.add(keyframe(i))
    assert len(box) < 5 and box.counts['outbox_dropped_full'] == 5 - len(box)
    assert box.used_bytes <= 3 * size
    box.hurry()
    assert [k.index for k in box.due()] == list(range(5 - len(box), 5))
    assert not outbox(tmp_path / 'small', clock, max_bytes=100).add(keyframe(0))


def test_old_keyframes_are_dropped_by_age_and_counted(tmp_path):
    clock = Clock()
    box = outbox(tmp_path, clock, max_age_s=10.0, resend_initial_s=1.0)
    box.add(keyframe(0))
    clock.now += 6.0
    box.add(keyframe(1))
    clock.now += 5.0
    assert [k.index for k in box.due()] == [1]
    assert box.counts['outbox_dropped_age'] == 1 and len(box) == 1


def test_a_restart_resends_what_was_left_and_acknowledges_it(tmp_path):
    clock = Clock()
    box = outbox(tmp_path, clock)
    for i in range(4):
        box.add(keyframe(i))
    box.acknowledge('run', [0, 2])
    again = outbox(tmp_path, clock)
    assert again.counts['outbox_recovered'] == 2
    assert [k.index for k in again.due()] == [1, 3]  # due at once
    assert again.acknowledge('run', [1, 3], refused=True) == 2
    assert again.counts['outbox_refused_by_memory'] == 2
    assert len(outbox(tmp_path, clock)) == 0 and again.used_bytes == 0


def test_a_damaged_file_in_the_outbox_is_set_aside_and_counted(tmp_path):
    clock = Clock()
    box = outbox(tmp_path, clock)
    box.add(keyframe(0))
    box.add(keyframe(1))
    next((tmp_path / 'outbox').glob('*.keyframe')).write_bytes(b'broken')
    again = outbox(tmp_path, clock)
    assert len(again) == 1 and again.counts['outbox_unreadable'] == 1


def test_the_capture_state_round_trips_and_a_damaged_one_is_named(tmp_path):
    path = tmp_path / 'state.json'
    assert CaptureState.load(path) is None
    state = CaptureState('run-a', 17, 2, 99 * S)
    state.save(path, fsync=False)
    assert CaptureState.load(path) == state
    path.write_text('{"session": "../x"}')
    with pytest.raises(ValueError, match=r'state\.json'):
        CaptureState.load(path)


def test_a_resumed_builder_continues_the_session_in_a_new_epoch():
    builder = KeyframeBuilder(CaptureConfig())
    builder.resume(CaptureState('run-a', 17, 2, 100 * S), rewind_s=60.0)
    first = _one_keyframe(builder, 90 * S)  # ten seconds back: within the limit
    assert (first.session, first.index, first.map_epoch) == ('run-a', 17, 3)
    assert builder.state == CaptureState('run-a', 18, 3, 100 * S)


def test_time_far_back_after_a_resume_starts_a_new_session():
    builder = KeyframeBuilder(CaptureConfig())
    builder.resume(CaptureState('run-a', 17, 2, 100 * S), rewind_s=60.0)
    first = _one_keyframe(builder, 10 * S)
    assert first.session != 'run-a' and (first.index, first.map_epoch) == (0, 0)
    assert builder.counts['sessions_started_by_rewind'] == 1


def _one_keyframe(builder: KeyframeBuilder, stamp_ns: int) -> Keyframe:
    builder.add_pose(stamp_ns - S // 10, 'map', (0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0))
    builder.add_pose(stamp_ns + S // 10, 'map', (0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0))
    (done,) = builder.add_image(stamp_ns, 1000, lambda: b'\xff\xd8jpeg', lambda: None)
    return done
