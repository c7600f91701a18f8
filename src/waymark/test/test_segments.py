# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Segmentation of frames into fixed time windows, and the pictures made from segments."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from waymark.memory.entries import SEGMENT, CameraModel, FrameRecord, Sighting, TextBox
from waymark.memory.ingest.segments import (
    DEFAULT_WINDOW_S,
    Segmenter,
    SegmenterState,
    center_crop,
    pick_evenly,
    tile_grid,
)
from waymark.memory.views.image import mean_unit

T0 = 1_750_000_000 * 10**9
MS = 10**6
WINDOW_NS = 1500 * MS


def frame(
    stamp_ns: int,
    index: int = 0,
    session: str = 'walk',
    x: float = 0.0,
    y: float = 0.0,
    epoch: int = 0,
    valid: bool = True,
    yaw: float = 0.0,
    text_size: float = 0.0,
) -> FrameRecord:
    return FrameRecord(
        session=session,
        index=index,
        stamp_ns=stamp_ns,
        x=x,
        y=y,
        z=0.5,
        yaw=yaw,
        map_epoch=epoch,
        pose_valid=valid,
        image_ref=f'ref{index}',
        text_size=text_size,
    )


def feed(segmenter: Segmenter, frames: list[FrameRecord]) -> list:
    closed = []
    for f in frames:
        closed.extend(segmenter.add(f))
    return closed


def test_sixty_seconds_at_ten_hertz_make_forty_segments_with_mean_poses():
    frames = [frame(T0 + i * 100 * MS, i, x=0.1 * i, y=-0.05 * i) for i in range(600)]
    segmenter = Segmenter(DEFAULT_WINDOW_S)
    segments = feed(segmenter, frames) + segmenter.flush()
    assert len(segments) == 40
    assert [s.index for s in segments] == list(range(40))
    for number, segment in enumerate(segments):
        expected = frames[15 * number : 15 * (number + 1)]
        assert segment.frames == tuple(expected)
        assert segment.start_ns == T0 + number * WINDOW_NS
        assert segment.end_ns == segment.start_ns + WINDOW_NS
        record = segment.record(image_ref='grid', text='EXIT')
        assert record.kind == SEGMENT and record.id == f'walk/s{number}'
        assert record.stamp_ns == segment.start_ns and record.end_ns == segment.end_ns
        assert record.x == pytest.approx(np.mean([f.x for f in expected]))
        assert record.y == pytest.approx(np.mean([f.y for f in expected]))
        assert record.pose_valid and record.image_ref == 'grid' and record.text == 'EXIT'
    assert segmenter.counts['late_frames'] == 0
    assert segmenter.state('walk') == SegmenterState(T0, 40, T0 + 40 * WINDOW_NS)


def test_a_segment_has_no_sighting_its_frames_keep_theirs():
    sighting = Sighting(CameraModel.from_hfov(640, 480, 90.0), (TextBox('EXIT', 0, 0, 1, 1),))
    frames = [dataclasses.replace(frame(T0 + i * MS, i), sighting=sighting) for i in range(3)]
    segmenter = Segmenter(DEFAULT_WINDOW_S)

    (segment,) = feed(segmenter, frames) + segmenter.flush()

    assert segment.record().sighting is None
    assert [f.sighting for f in segment.frames] == [sighting] * 3


def test_a_frame_past_the_window_closes_it():
    segmenter = Segmenter(1.5)
    assert segmenter.add(frame(T0, 0)) == []
    assert segmenter.add(frame(T0 + 1499 * MS, 1)) == []
    closed = segmenter.add(frame(T0 + 1500 * MS, 2))
    assert [len(s.frames) for s in closed] == [2]
    assert segmenter.open_frames('walk') == 1


def test_empty_windows_make_no_segment_and_indices_stay_dense():
    # Frames in windows 0, 1, then a 10 s gap (robot stopped, or no keyframes), then 9.
    stamps = [0, 500, 1600, 2900, 13_600, 14_000]
    segmenter = Segmenter(1.5)
    segments = feed(segmenter, [frame(T0 + s * MS, i) for i, s in enumerate(stamps)])
    segments += segmenter.flush()
    assert [s.index for s in segments] == [0, 1, 2]
    assert [s.start_ns - T0 for s in segments] == [0, WINDOW_NS, 9 * WINDOW_NS]
    assert [len(s.frames) for s in segments] == [2, 2, 2]


def test_sessions_interleaved_keep_separate_windows_and_indices():
    segmenter = Segmenter(1.5)
    frames = []
    for i in range(30):
        frames.append(frame(T0 + i * 100 * MS, i, session='a', x=1.0))
        frames.append(frame(T0 + 50 * MS + i * 200 * MS, i, session='b', x=2.0))
    segments = feed(segmenter, frames) + segmenter.flush()
    by_session = {name: [s for s in segments if s.session == name] for name in 'ab'}
    assert [s.index for s in by_session['a']] == [0, 1]
    assert [s.index for s in by_session['b']] == [0, 1, 2, 3]
    assert by_session['b'][0].start_ns == T0 + 50 * MS  # b's own origin
    assert all(f.session == s.session for s in segments for f in s.frames)
    assert {s.record().x for s in by_session['a']} == {1.0}
    assert {s.record().x for s in by_session['b']} == {2.0}


def test_late_frames_are_counted_not_segmented():
    segmenter = Segmenter(1.5)
    feed(segmenter, [frame(T0 + s * MS, i) for i, s in enumerate([0, 700, 1600, 3100])])
    # 1000 ms: window 0 is closed. 2000 ms: window 1 is closed too (window 2 is open).
    assert segmenter.add(frame(T0 + 1000 * MS, 10)) == []
    assert segmenter.add(frame(T0 + 2000 * MS, 11)) == []
    # A clock reset far before the origin in the same session is late as well.
    assert segmenter.add(frame(T0 - 3600 * 10**9, 12)) == []
    assert segmenter.counts['late_frames'] == 3
    # Out of order but inside the open window: kept, in time order.
    assert segmenter.add(frame(T0 + 3050 * MS, 13)) == []
    (last,) = segmenter.flush()
    assert [f.index for f in last.frames] == [13, 3]
    assert segmenter.counts['late_frames'] == 3


def test_a_map_epoch_change_inside_a_window_averages_the_latest_epoch_only():
    segmenter = Segmenter(1.5)
    old = [frame(T0 + i * 100 * MS, i, x=100.0, y=100.0, epoch=3) for i in range(5)]
    new = [frame(T0 + (5 + i) * 100 * MS, 5 + i, x=float(i), epoch=4) for i in range(5)]
    feed(segmenter, old + new)
    (segment,) = segmenter.flush()
    record = segment.record()
    assert record.map_epoch == 4
    assert record.x == pytest.approx(2.0) and record.y == pytest.approx(0.0)
    assert len(segment.frames) == 10  # all frames still belong to the segment


def test_pose_validity_and_yaw_of_a_segment_record():
    segmenter = Segmenter(1.5)
    frames = [
        frame(T0, 0, x=1.0, yaw=0.1, text_size=0.2),
        frame(T0 + 700 * MS, 1, x=50.0, valid=False, text_size=0.4),
        frame(T0 + 800 * MS, 2, x=3.0, yaw=0.7),  # nearest the middle (750 ms)
        frame(T0 + 1400 * MS, 3, x=5.0, yaw=1.4),
    ]
    feed(segmenter, frames)
    record = segmenter.flush()[0].record()
    assert record.x == pytest.approx(3.0)  # the invalid frame is left out
    assert record.yaw == pytest.approx(0.7)
    assert record.text_size == pytest.approx(0.4)

    # No valid pose at all: the entry says so. A later epoch without poses does not hide
    # an earlier one that has them.
    feed(segmenter, [frame(T0 + 2000 * MS, 4, x=9.0, valid=False)])
    blind = segmenter.flush()[0].record()
    assert not blind.pose_valid and (blind.x, blind.y) == (0.0, 0.0)
    feed(
        segmenter,
        [frame(T0 + 3100 * MS, 5, x=7.0, epoch=1), frame(T0 + 3200 * MS, 6, epoch=2, valid=False)],
    )
    mixed = segmenter.flush()[0].record()
    assert mixed.pose_valid and mixed.map_epoch == 1 and mixed.x == pytest.approx(7.0)


def test_resume_continues_indices_on_the_same_grid():
    first = Segmenter(1.5)
    stamps = [i * 100 * MS for i in range(40)]  # 4 s: windows 0, 1 closed, 2 open
    closed = feed(first, [frame(T0 + s, i) for i, s in enumerate(stamps)])
    assert [s.index for s in closed] == [0, 1]
    state = first.state('walk')
    assert state == SegmenterState(T0, 2, T0 + 2 * WINDOW_NS)

    restarted = Segmenter(1.5)
    restarted.resume('walk', state)
    assert restarted.add(frame(T0 + 2 * WINDOW_NS - 1, 99)) == []  # already closed
    assert restarted.counts['late_frames'] == 1
    feed(restarted, [frame(T0 + 3500 * MS, 100), frame(T0 + 5000 * MS, 101)])
    segments = restarted.flush()
    assert [s.index for s in segments] == [3]
    assert restarted.state('walk').next_index == 4
    assert restarted.state('walk').closed_until_ns == T0 + 4 * WINDOW_NS


def test_resume_is_refused_once_a_window_is_open():
    segmenter = Segmenter(1.5)
    segmenter.add(frame(T0, 0))
    with pytest.raises(ValueError, match='open window'):
        segmenter.resume('walk', SegmenterState(T0, 0, T0))


def test_flush_closes_open_windows_by_session_or_by_time():
    segmenter = Segmenter(1.5)
    segmenter.add(frame(T0, 0, session='a'))
    segmenter.add(frame(T0 + 10 * 10**9, 0, session='b'))
    assert segmenter.flush(before_ns=T0 + WINDOW_NS - 1) == []
    assert [s.session for s in segmenter.flush(before_ns=T0 + WINDOW_NS)] == ['a']
    assert segmenter.flush('a') == []
    assert [s.session for s in segmenter.flush('b')] == ['b']
    assert segmenter.flush() == []
    # After a flush the session continues; frames in the flushed window are late.
    assert segmenter.add(frame(T0 + 100 * MS, 1, session='a')) == []
    assert segmenter.counts['late_frames'] == 1
    segmenter.add(frame(T0 + 2 * WINDOW_NS, 2, session='a'))
    assert [s.index for s in segmenter.flush('a')] == [1]


def test_forget_lets_a_session_name_start_over():
    segmenter = Segmenter(1.5)
    feed(segmenter, [frame(T0 + i * WINDOW_NS, i) for i in range(3)])
    segmenter.forget('walk')
    assert segmenter.state('walk') is None
    segmenter.add(frame(T0 - 10 * 10**9, 0))
    (segment,) = segmenter.flush()
    assert segment.index == 0 and segment.start_ns == T0 - 10 * 10**9


def test_a_crowded_window_keeps_a_bounded_evenly_spread_set_of_frames():
    segmenter = Segmenter(1.5, max_open_frames=8)
    frames = [frame(T0 + i * MS, i) for i in range(1000)]  # 1000 frames in one window
    feed(segmenter, frames)
    assert segmenter.open_frames('walk') <= 8
    (segment,) = segmenter.flush()
    kept = [f.index for f in segment.frames]
    assert 4 <= len(kept) <= 8
    assert kept == sorted(kept)
    gaps = np.diff(kept)
    assert gaps.max() == gaps.min()  # evenly spread
    assert kept[0] < 1000 / 8 and kept[-1] > 1000 - 2 * 1000 / 8  # over the whole window
    assert segmenter.counts['frames_thinned'] == 1000 - len(kept)


def test_segmenter_rejects_bad_settings():
    with pytest.raises(ValueError):
        Segmenter(0.0)
    with pytest.raises(ValueError):
        Segmenter(math.nan)
    with pytest.raises(ValueError):
        Segmenter(1.5, max_open_frames=3)


def test_mean_unit_is_a_unit_vector_or_none():
    rng = np.random.default_rng(0)
    vectors = [rng.normal(size=16).astype(np.float32) for _ in range(5)]
    mean = mean_unit(vectors)
    assert mean.dtype == np.float32 and mean.shape == (16,)
    assert np.linalg.norm(mean) == pytest.approx(1.0, abs=1e-6)
    # Each vector counts once, whatever its length.
    a, b = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    assert np.allclose(mean_unit([10 * a, b]), [math.sqrt(0.5)] * 2)
    assert mean_unit([]) is None
    assert mean_unit([a, -a]) is None
    assert mean_unit([np.zeros(2)]) is None


def test_pick_evenly():
    assert pick_evenly(list(range(10))) == [1, 3, 6, 8]
    assert pick_evenly(list(range(4))) == [0, 1, 2, 3]
    assert pick_evenly(['a', 'b']) == ['a', 'b']
    assert pick_evenly([]) == []
    assert pick_evenly(list(range(9)), 1) == [4]
    assert len(set(pick_evenly(list(range(5))))) == 4
    with pytest.raises(ValueError):
        pick_evenly([1], 0)


def test_tile_grid_is_always_two_by_two():
    red = np.zeros((480, 640, 3), np.uint8)
    red[..., 0] = 255
    grid = tile_grid([red] * 4)
    assert grid.shape == (480, 640, 3) and grid.dtype == np.uint8
    assert (grid[..., 0] == 255).all()

    one = tile_grid([red], tile_size=(160, 120))
    assert one.shape == (240, 320, 3)
    assert (one[:120, :160, 0] == 255).all()
    assert not one[120:].any() and not one[:, 160:].any()  # three black tiles

    # A wide image keeps its shape: black bars above and below in its tile.
    wide = np.full((100, 400, 3), 200, np.uint8)
    tile = tile_grid([wide, wide, wide], tile_size=(320, 240))[:240, :320]
    assert not tile[:50].any() and (tile[120, :, :] == 200).all()

    grey = np.full((30, 40), 90, np.uint8)
    assert tile_grid([grey])[0:240, 0:320].mean() == pytest.approx(90, abs=1)
    with pytest.raises(ValueError):
        tile_grid([])
    with pytest.raises(ValueError):
        tile_grid([red] * 5)


def test_center_crop_keeps_the_middle():
    image = np.zeros((480, 640, 3), np.uint8)
    image[120:360, 160:480] = 255
    crop = center_crop(image)
    assert crop.shape == (240, 320, 3)
    assert (crop == 255).all()
    assert center_crop(image, 1.0).shape == image.shape
    assert center_crop(np.zeros((3, 3), np.uint8), 0.1).shape == (1, 1)
    with pytest.raises(ValueError):
        center_crop(image, 0.0)
