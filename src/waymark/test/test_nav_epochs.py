# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Map epochs: reading capture_node's report of the current one, and judging a target's."""

from __future__ import annotations

import json

import pytest

from waymark.navigation.epochs import parse_epoch, stale_reason


def test_the_current_epoch_is_read_from_the_stats_and_none_before_a_session():
    assert parse_epoch(json.dumps({'session': 'tour', 'map_epoch': 2, 'frames': 9})) == (
        'tour',
        2,
    )
    assert parse_epoch(json.dumps({'session': '', 'map_epoch': 0})) is None


@pytest.mark.parametrize(
    ('data', 'says'),
    [
        ('not json', 'Expecting value'),
        ('[1, 2]', 'indices'),
        (json.dumps({'map_epoch': 1}), "'session'"),
        (json.dumps({'session': 'tour', 'map_epoch': -1}), 'map_epoch -1'),
        (json.dumps({'session': 'tour', 'map_epoch': True}), 'map_epoch True'),
        (json.dumps({'session': 3, 'map_epoch': 1}), 'session 3'),
    ],
)
def test_stats_that_do_not_say_the_epoch_are_refused_with_why(data, says):
    with pytest.raises(ValueError, match=says):
        parse_epoch(data)


def test_a_target_is_stale_only_in_another_known_epoch():
    assert stale_reason(('tour', 2), ('tour', 2)) == ''
    assert stale_reason(('tour', 2), None) == ''
    reason = stale_reason(('tour', 1), ('tour', 2))
    assert 'target is from session tour map epoch 1' in reason
    assert 'the map is now session tour epoch 2' in reason
    assert stale_reason(('yesterday', 2), ('tour', 2)) != ''
