# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
import pytest

from waymark.tasks.handover import sanitize_handover


@pytest.mark.parametrize(
    ('text', 'kept', 'removed'),
    [
        (
            'The mug is at (3.2, \u22121.5) on the counter.',
            'The mug is at on the counter.',
            ['(3.2, \u22121.5)'],
        ),
        ('Sign seen near [1, 2, 0.5].', 'Sign seen near.', ['[1, 2, 0.5]']),
        ('Stopped at 3.4, -2 facing the door.', 'Stopped at facing the door.', ['3.4, -2']),
        ('Robot at x=1.2, y: -3 m in the hall.', 'Robot at, in the hall.', ['x=1.2', 'y: -3 m']),
        ('The mug is 1.5 m north of the sofa.', 'The mug is north of the sofa.', ['1.5 m']),
        ('Turned 90 degrees then 45° left.', 'Turned then left.', ['90 degrees', '45°']),
        ('Walked 12 metres past 2cm of water.', 'Walked past of water.', ['12 metres', '2cm']),
        ('Pose yaw = 0.25 rad held.', 'Pose held.', ['yaw = 0.25 rad']),
    ],
)
def test_coordinate_like_expressions_are_removed_and_the_words_stay(text, kept, removed):
    result = sanitize_handover(text)
    assert result.text == kept
    assert list(result.removed) == removed
    assert not result.truncated


@pytest.mark.parametrize(
    'text',
    [
        'Room 2 has 3 chairs and 5 mugs; aisle 4, 5 or 6 next.',
        'Checked the kitchen at 10:30 for 3 minutes, then the 2nd floor.',
        'Door B12 leads to the hall; version 1.2 of the sign.',
    ],
)
def test_counts_labels_and_times_are_not_coordinates(text):
    result = sanitize_handover(text)
    assert result.text == text and result.removed == ()


def test_control_characters_are_dropped_newlines_kept_tabs_spaced():
    result = sanitize_handover('Kitchen\x1b searched\u202e.\nHall\tnext.\x00')
    assert result.text == 'Kitchen searched.\nHall next.'
    assert result.control_characters == 3


def test_more_than_the_word_cap_is_cut_and_reported():
    text = ' '.join(f'w{n}' for n in range(130))
    result = sanitize_handover(text)
    assert result.text.split() == [f'w{n}' for n in range(120)]
    assert result.words_dropped == 10 and result.truncated
    exact = sanitize_handover(' '.join(['word'] * 120))
    assert exact.words_dropped == 0 and not exact.truncated


def test_words_are_counted_after_coordinates_go():
    text = ' '.join(['look'] * 119) + ' at (1.0, 2.0)'
    result = sanitize_handover(text)
    assert result.words_dropped == 0 and result.text.endswith('look at')


def test_an_overlong_input_is_cut_to_max_chars_before_it_is_read():
    result = sanitize_handover('a' * 50 + ' (1, 2)', max_words=5, max_chars=52)
    assert result.text == 'a' * 50 + ' ('  # the cut pair is no longer a coordinate
    assert result.chars_dropped == 5 and result.truncated and result.removed == ()


def test_bad_limits_are_refused():
    with pytest.raises(ValueError, match='max_words'):
        sanitize_handover('text', max_words=0)
