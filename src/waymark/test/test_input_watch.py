# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Silent input streams: when they are reported, how often, and their recovery."""

from __future__ import annotations

from waymark.input_watch import InputWatch

TOPIC = '/zed/zed_node/rgb/image_rect_color'


def test_a_stream_that_never_came_is_reported_after_the_timeout():
    watch = InputWatch('image', TOPIC, started_s=100.0)
    assert watch.check(104.9, timeout_s=5.0, repeat_s=30.0) is None
    assert watch.status(104.9, 5.0) == (True, 'starting')
    report = watch.check(105.0, timeout_s=5.0, repeat_s=30.0)
    assert report.silent
    assert report.message == f'no image on {TOPIC} for 5.0 s (none yet)'
    assert watch.status(106.0, 5.0) == (False, f'no image on {TOPIC} for 6.0 s (none yet)')


def test_silence_is_repeated_at_the_repeat_interval_only():
    watch = InputWatch('pose', '/odom', started_s=0.0)
    watch.seen(1.0)
    assert watch.check(5.9, 5.0, 10.0) is None
    assert watch.check(6.0, 5.0, 10.0).message == 'no pose on /odom for 5.0 s'
    assert watch.check(15.9, 5.0, 10.0) is None
    assert watch.check(16.0, 5.0, 10.0).message == 'no pose on /odom for 15.0 s'


def test_recovery_is_reported_once_with_the_length_of_the_gap():
    watch = InputWatch('pose', '/odom', started_s=0.0)
    watch.seen(1.0)
    assert watch.check(7.0, 5.0, 10.0).silent
    watch.seen(9.5)
    report = watch.check(9.6, 5.0, 10.0)
    assert not report.silent
    assert report.message == 'pose on /odom again, after 8.5 s'
    assert watch.check(9.7, 5.0, 10.0) is None
    assert watch.status(9.7, 5.0) == (True, 'receiving')


def test_a_stream_needed_once_is_never_silent_after_it_came():
    watch = InputWatch('map', '/map', started_s=0.0, once=True)
    assert watch.check(5.0, 5.0, 10.0).message == 'no map on /map for 5.0 s (none yet)'
    watch.seen(6.0)
    assert not watch.check(6.1, 5.0, 10.0).silent
    assert watch.check(1000.0, 5.0, 10.0) is None
    assert watch.status(1000.0, 5.0) == (True, 'receiving')
