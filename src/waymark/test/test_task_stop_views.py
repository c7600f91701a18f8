# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The stop views: heading buckets, the latest view per bucket and the judge's frame selector."""

from __future__ import annotations

import itertools
import math

import pytest

from waymark.tasks.stop_views import (
    MAX_JUDGE_FRAMES,
    StopView,
    heading_bucket,
    latest_per_bucket,
    select_frames,
)


def view(stamp: int, heading: float = 0.0) -> StopView:
    return StopView(image=f'picture {stamp}'.encode(), heading=heading, stamp_ns=stamp)


@pytest.mark.parametrize(
    ('heading', 'bucket'),
    [
        (0.0, 0),
        (math.radians(44), 0),
        (math.radians(-44), 0),
        (math.radians(46), 1),
        (math.pi / 2, 1),
        (math.radians(134), 1),
        (math.radians(136), 2),
        (math.pi, 2),
        (-math.pi, 2),
        (math.radians(-90), 3),
        (math.radians(-136), 2),
        (2 * math.pi + 0.1, 0),
        (-2 * math.pi + math.pi / 2, 1),
    ],
)
def test_headings_fall_in_four_buckets_centred_on_the_axes(heading, bucket):
    assert heading_bucket(heading) == bucket


def test_bad_headings_and_bucket_counts_are_refused():
    with pytest.raises(ValueError):
        heading_bucket(math.nan)
    with pytest.raises(ValueError):
        heading_bucket(0.0, buckets=0)
    with pytest.raises(ValueError):
        StopView(image=b'', heading=0.0, stamp_ns=1)
    with pytest.raises(ValueError):
        StopView(image=b'x', heading=math.inf, stamp_ns=1)


def test_a_turn_keeps_the_latest_view_of_each_bucket_in_the_order_taken():
    turn = [
        view(1, 0.0),
        view(2, math.pi / 2),
        view(3, math.pi),
        view(4, -math.pi / 2),
        view(5, 0.1),  # the turn passes heading 0 again
        view(6, math.pi / 2 - 0.2),
    ]
    kept = latest_per_bucket(turn)
    assert [v.stamp_ns for v in kept] == [3, 4, 5, 6]
    assert sorted(heading_bucket(v.heading) for v in kept) == [0, 1, 2, 3]


def test_a_short_turn_keeps_only_the_buckets_it_saw():
    assert [v.stamp_ns for v in latest_per_bucket([view(2, 0.2), view(1, -0.2)])] == [2]
    assert latest_per_bucket([]) == []


def test_everything_is_shown_when_it_fits_in_the_order_taken():
    stops = [view(100 + i, i * math.pi / 2) for i in range(4)]
    earlier = [view(s) for s in (30, 10, 20)]
    chosen = select_frames(stops, earlier)
    assert [f.view.stamp_ns for f in chosen] == [10, 20, 30, 100, 101, 102, 103]
    assert [f.at_stop for f in chosen] == [False] * 3 + [True] * 4


@pytest.mark.parametrize('count', [9, 10, 13, 50, 1000])
def test_the_stop_views_come_first_and_earlier_frames_are_sampled_evenly(count):
    stops = [view(10_000 + i, i * math.pi / 2) for i in range(4)]
    earlier = [view(s) for s in reversed(range(count))]
    chosen = select_frames(stops, earlier)
    assert len(chosen) == MAX_JUDGE_FRAMES
    stamps = [f.view.stamp_ns for f in chosen]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
    assert [f.view.stamp_ns for f in chosen if f.at_stop] == [10_000, 10_001, 10_002, 10_003]
    sampled = [f.view.stamp_ns for f in chosen if not f.at_stop]
    assert len(sampled) == 8
    # Evenly spread: equal gaps (to a frame), and neither end favoured.
    share = count / 8
    gaps = {later - sooner for sooner, later in itertools.pairwise(sampled)}
    assert gaps <= {math.floor(share), math.ceil(share)}
    assert sampled[0] <= share / 2 and sampled[-1] >= count - 1 - share / 2


def test_too_many_stop_views_keep_the_latest_and_leave_no_room_for_earlier_frames():
    stops = [view(100 + i) for i in range(6)]
    chosen = select_frames(stops, [view(1), view(2)], max_frames=4)
    assert [(f.view.stamp_ns, f.at_stop) for f in chosen] == [
        (102, True),
        (103, True),
        (104, True),
        (105, True),
    ]


def test_without_stop_views_only_earlier_frames_are_shown():
    chosen = select_frames([], [view(s) for s in range(5)], max_frames=2)
    assert [(f.view.stamp_ns, f.at_stop) for f in chosen] == [(1, False), (3, False)]
    assert select_frames([], []) == []


@pytest.mark.parametrize('limit', [0, -1, 65])
def test_the_frame_limit_is_bounded(limit):
    with pytest.raises(ValueError):
        select_frames([view(1)], [], max_frames=limit)
