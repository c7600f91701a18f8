# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The agent's tool schemas and the model's times: what is accepted, and what is refused."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime

import pytest

from waymark.agent.evidence import NS_PER_S, clock, parse_time
from waymark.agent.tools import (
    FINAL,
    MAX_ARGUMENT_CHARS,
    TOOLS,
    FinalAnswer,
    ImageSearch,
    PositionSearch,
    RangeSearch,
    SearchBetween,
    TextSearch,
    TimeSearch,
    ToolArgumentError,
    parse_call,
    tool_specs,
)

ALL = list(TOOLS)

GOOD = {
    'retrieve_from_text': ({'query': 'the red mug'}, TextSearch),
    'retrieve_from_image': ({}, ImageSearch),
    'retrieve_from_time': ({'time': '2025-06-15T15:06:42'}, TimeSearch),
    'retrieve_from_position': ({'x': 1.5, 'y': -2, 'z': 0.25}, PositionSearch),
    'retrieve_in_range': ({'x': 0, 'y': 0, 'radius': 3.5}, RangeSearch),
    'search_between': (
        {'target': 'coffee shop', 'from_place': 'office', 'to_place': 'station'},
        SearchBetween,
    ),
    'final_answer': (
        {
            'kind': 'position',
            'text': 'By the door.',
            'evidence_ids': ['route/37'],
            'goal': {'x': 18.5, 'y': 0.0, 'z': 0.4, 'yaw': 0.137},
            'confidence': 0.8,
        },
        FinalAnswer,
    ),
}


def call(name: str, arguments, allowed=ALL):
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return parse_call(name, text, allowed)


def refused(name: str, arguments, allowed=ALL) -> str:
    with pytest.raises(ToolArgumentError) as caught:
        call(name, arguments, allowed)
    return str(caught.value)


def test_every_tool_has_good_arguments_checked_here():
    assert set(GOOD) == set(TOOLS)


@pytest.mark.parametrize('name', list(GOOD))
def test_good_arguments_are_accepted(name):
    arguments, model = GOOD[name]
    parsed = call(name, arguments)
    assert type(parsed) is model
    assert parsed.model_dump(exclude_unset=True) == arguments


def test_parsed_values_are_the_ones_sent():
    position = call('retrieve_from_position', {'x': 1.5, 'y': -2})
    assert (position.x, position.y, position.z) == (1.5, -2.0, 0.0)  # z defaults to 0
    final = call('final_answer', GOOD['final_answer'][0])
    assert final.kind == 'position' and final.evidence_ids == ['route/37']
    assert (final.goal.x, final.goal.y, final.goal.z, final.goal.yaw) == (18.5, 0.0, 0.4, 0.137)
    assert call('retrieve_from_image', '').model_dump() == {}  # no arguments at all
    between = call(
        'search_between',
        {'target': 'bakery', 'from_position': {'x': 1, 'y': 2}, 'to_place': 'station'},
    )
    assert (between.from_position.x, between.from_position.y) == (1.0, 2.0)
    assert between.from_place is None and between.to_place == 'station'


@pytest.mark.parametrize('name', list(GOOD))
def test_an_extra_key_is_refused(name):
    arguments = {**GOOD[name][0], 'k': 5}
    message = refused(name, arguments)
    assert f'invalid arguments for {name}' in message and 'k: Extra inputs' in message


@pytest.mark.parametrize(
    'name, arguments, where',
    [
        ('retrieve_from_text', {'query': 5}, 'query'),
        ('retrieve_from_text', {'query': ['red', 'mug']}, 'query'),
        ('retrieve_from_time', {'time': 1750000000}, 'time'),
        ('retrieve_from_position', {'x': 'east', 'y': 0}, 'x'),
        ('retrieve_from_position', {'x': '1.5', 'y': 0}, 'x'),  # a number, not its text
        ('retrieve_from_position', {'x': True, 'y': 0}, 'x'),
        ('retrieve_from_position', {'x': [1.0], 'y': 0}, 'x'),
        ('retrieve_in_range', {'x': 0, 'y': 0, 'radius': '3 m'}, 'radius'),
        ('search_between', {'target': 'bakery', 'from_place': 3, 'to_place': 'x'}, 'from_place'),
        ('final_answer', {'kind': 'yes_no', 'text': '', 'yes': 'yes'}, 'yes'),
        ('final_answer', {'kind': 'yes_no', 'text': '', 'yes': 1}, 'yes'),
        ('final_answer', {'kind': 'text', 'text': 'x', 'evidence_ids': 'route/1'}, 'evidence_ids'),
        ('final_answer', {'kind': 'position', 'text': 'x', 'goal': [1, 2]}, 'goal'),
        ('final_answer', {'kind': 'location', 'text': 'x'}, 'kind'),
        ('final_answer', {'text': 'x'}, 'kind'),
    ],
)
def test_wrong_types_and_missing_fields_are_refused(name, arguments, where):
    message = refused(name, arguments)
    assert f'invalid arguments for {name}: {where}' in message


@pytest.mark.parametrize(
    'name, arguments, where',
    [
        # json reads 1e999 as inf, and (beyond the JSON standard) NaN and Infinity.
        ('retrieve_from_position', '{"x": 1e999, "y": 0}', 'x'),
        ('retrieve_from_position', '{"x": 0, "y": -1e999}', 'y'),
        ('retrieve_from_position', '{"x": NaN, "y": 0}', 'x'),
        ('retrieve_in_range', '{"x": 0, "y": 0, "radius": Infinity}', 'radius'),
        ('final_answer', '{"kind": "text", "text": "x", "confidence": NaN}', 'confidence'),
        ('final_answer', '{"kind": "text", "text": "", "goal": {"x": 1e999, "y": 0}}', 'goal.x'),
        ('search_between', '{"target": "b", "from_position": {"x": NaN, "y": 0}, "to_place": '
         '"s"}', 'from_position.x'),
    ],
)  # fmt: skip
def test_infinite_and_nan_numbers_are_refused(name, arguments, where):
    assert math.isinf(json.loads('1e999'))
    message = refused(name, arguments)
    assert f': {where}:' in message and 'finite number' in message


@pytest.mark.parametrize(
    'name, arguments, where',
    [
        ('retrieve_from_text', {'query': 'x' * 301}, 'query'),
        ('retrieve_from_text', {'query': ''}, 'query'),
        ('retrieve_from_time', {'time': '1' * 301}, 'time'),
        ('search_between', {'target': 'b' * 301, 'from_place': 'o', 'to_place': 's'}, 'target'),
        ('final_answer', {'kind': 'text', 'text': 'x' * 1001}, 'text'),
        ('final_answer', {'kind': 'text', 'text': 'x', 'evidence_ids': ['i'] * 21}, 'evidence_ids'),
        ('final_answer', {'kind': 'text', 'text': '', 'evidence_ids': ['i' * 101]}, 'evidence_ids'),
        ('final_answer', {'kind': 'text', 'text': 'x', 'confidence': 1.5}, 'confidence'),
        ('final_answer', {'kind': 'position', 'text': '', 'goal': {'x': 0, 'y': 0, 'yaw': 7}},
         'goal.yaw'),
        ('retrieve_from_position', {'x': 2e6, 'y': 0}, 'x'),
        ('retrieve_in_range', {'x': 0, 'y': 0, 'radius': 0}, 'radius'),
        ('retrieve_in_range', {'x': 0, 'y': 0, 'radius': 101}, 'radius'),
    ],
)  # fmt: skip
def test_out_of_bounds_values_are_refused(name, arguments, where):
    assert f'invalid arguments for {name}: {where}' in refused(name, arguments)


def test_the_bounds_themselves_are_accepted():
    assert len(call('retrieve_from_text', {'query': 'x' * 300}).query) == 300
    assert call('retrieve_in_range', {'x': 0, 'y': 0, 'radius': 100}).radius == 100
    assert len(call('final_answer', {'kind': 'text', 'text': 'x' * 1000}).text) == 1000


def test_too_long_arguments_are_refused_before_parsing():
    arguments = json.dumps({'query': 'x' * MAX_ARGUMENT_CHARS})
    assert 'arguments are too long' in refused('retrieve_from_text', arguments)


@pytest.mark.parametrize('name', ['retrieve_everything', 'final-answer', 'x' * 500])
def test_an_unknown_tool_is_refused_with_the_tools_there_are(name):
    message = refused(name, {'query': 'mug'})
    assert message.startswith(f'there is no tool {name[:60]!r} here')
    assert 'use one of: retrieve_from_text, retrieve_from_image' in message
    assert len(message) < 400  # a long name is not echoed in full


def test_a_tool_not_offered_now_is_refused():
    message = refused('retrieve_from_text', {'query': 'mug'}, allowed=[FINAL])
    assert message == "there is no tool 'retrieve_from_text' here; use one of: final_answer"


@pytest.mark.parametrize('arguments', ['[1, 2]', '"the red mug"', '3', 'null', 'true'])
def test_arguments_that_are_not_an_object_are_refused(arguments):
    assert refused('retrieve_from_text', arguments) == 'arguments must be a JSON object'


@pytest.mark.parametrize(
    'arguments', ['{"query": "mug"', "{'query': 'mug'}", '{"query": "mug",}', 'query=mug']
)
def test_malformed_json_is_refused(arguments):
    assert refused('retrieve_from_text', arguments).startswith('arguments are not valid JSON: ')


def test_a_raw_line_break_inside_a_string_is_read_as_one():
    assert call('retrieve_from_text', '{"query": "red\nmug"}').query == 'red\nmug'


@pytest.mark.parametrize(
    'arguments, problem',
    [
        ({'target': 'b'}, 'exactly one of from_place and from_position'),
        (
            {'target': 'b', 'from_place': 'o', 'from_position': {'x': 0, 'y': 0}, 'to_place': 's'},
            'exactly one of from_place and from_position',
        ),
        ({'target': 'b', 'from_place': 'o'}, 'exactly one of to_place and to_position'),
        (
            {'target': 'b', 'from_place': 'o', 'to_place': 's', 'to_position': {'x': 1, 'y': 1}},
            'exactly one of to_place and to_position',
        ),
        ({'target': 'b', 'from_place': None, 'to_place': 's'}, 'from_place and from_position'),
    ],
)
def test_search_between_needs_exactly_one_start_and_one_end(arguments, problem):
    assert problem in refused('search_between', arguments)


def test_a_route_point_takes_no_height():
    arguments = {'target': 'b', 'from_position': {'x': 0, 'y': 0, 'z': 1}, 'to_place': 's'}
    assert 'from_position.z: Extra inputs' in refused('search_between', arguments)


def test_tool_specs_are_openai_functions_whose_parameters_are_the_schemas():
    names = ['final_answer', 'retrieve_from_text', 'search_between']
    specs = tool_specs(names)
    assert [spec['function']['name'] for spec in specs] == names  # in the order asked
    for spec in specs:
        assert set(spec) == {'type', 'function'} and spec['type'] == 'function'
        function = spec['function']
        assert set(function) == {'name', 'description', 'parameters'}
        model = TOOLS[function['name']]
        schema = model.model_json_schema()
        schema.pop('title')
        assert function['parameters'] == schema
        assert function['parameters']['type'] == 'object'
        assert function['parameters']['additionalProperties'] is False
        assert function['description'] == ' '.join(model.__doc__.split())
        json.dumps(spec)  # plain JSON, ready to send
    between = specs[2]['function']['parameters']
    assert between['required'] == ['target']
    assert between['properties']['target']['maxLength'] == 300
    assert between['$defs']['Point']['additionalProperties'] is False
    final = specs[0]['function']['parameters']
    assert final['properties']['kind']['enum'] == ['position', 'text', 'time', 'yes_no']
    assert set(final['required']) == {'kind', 'text'}


def test_every_tool_has_a_spec_and_an_unknown_name_has_none():
    assert [spec['function']['name'] for spec in tool_specs(ALL)] == ALL
    with pytest.raises(KeyError):
        tool_specs(['retrieve_everything'])


# -- times ---------------------------------------------------------------------------------

T0 = 1_750_000_000 * NS_PER_S  # 2025-06-15 15:06:40 UTC
NOW = T0 + 2 * 3600 * NS_PER_S  # 17:06:40


@pytest.mark.parametrize(
    'text, expected',
    [
        ('2025-06-15T15:06:42', T0 + 2 * NS_PER_S),  # no offset: UTC
        ('2025-06-15 15:06:42', T0 + 2 * NS_PER_S),
        ('2025-06-15T15:06:42Z', T0 + 2 * NS_PER_S),
        ('2025-06-15T17:06:42+02:00', T0 + 2 * NS_PER_S),
        ('2025-06-15T10:06:42-05:00', T0 + 2 * NS_PER_S),
        ('2025-06-15 15:06:42 UTC', T0 + 2 * NS_PER_S),  # as the hits show times
        ('  2025-06-15T15:06:42  ', T0 + 2 * NS_PER_S),
        # Exact to the microsecond: a float timestamp would be off by up to ~100 ns.
        ('2025-06-15T15:06:42.000001', T0 + 2 * NS_PER_S + 1000),
        ('2025-06-15T15:06:42.123456', T0 + 2 * NS_PER_S + 123_456_000),
    ],
)
def test_iso_times(text, expected):
    assert parse_time(text, NOW) == expected


def test_the_clock_format_of_the_hits_reads_back():
    for stamp in (T0, T0 + 7 * NS_PER_S, NOW):
        assert parse_time(clock(stamp), NOW) == stamp


@pytest.mark.parametrize(
    'text, expected',
    [
        ('16:00', datetime(2025, 6, 15, 16, 0, tzinfo=UTC)),
        ('15:06:42', datetime(2025, 6, 15, 15, 6, 42, tzinfo=UTC)),
        ('15:06:42 UTC', datetime(2025, 6, 15, 15, 6, 42, tzinfo=UTC)),
        ('15:06:42Z', datetime(2025, 6, 15, 15, 6, 42, tzinfo=UTC)),
        ('15:06 utc', datetime(2025, 6, 15, 15, 6, tzinfo=UTC)),
        ('9:05', datetime(2025, 6, 15, 9, 5, tzinfo=UTC)),
        ('17:06:40', datetime(2025, 6, 15, 17, 6, 40, tzinfo=UTC)),  # now itself
        ('17:06:41', datetime(2025, 6, 14, 17, 6, 41, tzinfo=UTC)),  # a second ahead: yesterday
        ('23:59', datetime(2025, 6, 14, 23, 59, tzinfo=UTC)),
        ('00:00', datetime(2025, 6, 15, 0, 0, tzinfo=UTC)),
    ],
)
def test_a_clock_time_is_its_latest_occurrence_at_or_before_now(text, expected):
    assert parse_time(text, NOW) == int(expected.timestamp()) * NS_PER_S


def test_a_clock_time_rolls_back_over_midnight_and_month_ends():
    just_after_midnight = int(datetime(2025, 7, 1, 0, 10, tzinfo=UTC).timestamp()) * NS_PER_S
    assert parse_time('23:50', just_after_midnight) == (
        int(datetime(2025, 6, 30, 23, 50, tzinfo=UTC).timestamp()) * NS_PER_S
    )
    assert parse_time('00:05', just_after_midnight) == (
        int(datetime(2025, 7, 1, 0, 5, tzinfo=UTC).timestamp()) * NS_PER_S
    )
    # Now a fraction of a second past 00:10:00: 00:10:00 itself is not in the future.
    assert parse_time('00:10', just_after_midnight + 400_000_000) == just_after_midnight


@pytest.mark.parametrize(
    'text',
    ['', 'soon', '25:00', '12:60', '12:30:61', '24:00', '1230', '12:3', '12h30',
     '2025-13-01T00:00:00', '2025-06-15T15:06:42 PST', 'the kitchen'],
)  # fmt: skip
def test_garbage_times_are_refused_with_a_reason(text):
    with pytest.raises(ValueError, match=r'is not a (clock )?time'):
        parse_time(text, NOW)


BERLIN = 'Europe/Berlin'  # UTC+2 on the day of NOW


def test_clock_times_and_bare_iso_times_are_in_the_sessions_zone():
    assert (
        parse_time('16:00', NOW, BERLIN)
        == int(datetime(2025, 6, 15, 14, 0, tzinfo=UTC).timestamp()) * NS_PER_S
    )
    assert parse_time('2025-06-15T17:06:42', NOW, BERLIN) == T0 + 2 * NS_PER_S
    assert parse_time('15:06:42 UTC', NOW, BERLIN) == T0 + 2 * NS_PER_S  # said in UTC
    assert clock(T0, BERLIN) == '2025-06-15 17:06:40 +02:00'
    for stamp in (T0, NOW):
        assert parse_time(clock(stamp, BERLIN), NOW, BERLIN) == stamp


def test_spoken_times_are_read_against_now_and_the_session_start():
    assert parse_time('five minutes ago', NOW) == NOW - 300 * NS_PER_S
    assert parse_time('a minute and a half after I started', NOW, start_ns=T0) == (
        T0 + 90 * NS_PER_S
    )
    with pytest.raises(ValueError, match='session start'):
        parse_time('two minutes into the run', NOW)
    this_morning = datetime(2025, 6, 15, 3, 0, tzinfo=UTC)  # 05:00 in Berlin
    assert parse_time('this morning', NOW, BERLIN) == int(this_morning.timestamp()) * NS_PER_S


def test_an_unknown_zone_is_refused():
    with pytest.raises(ValueError, match='IANA'):
        parse_time('16:00', NOW, 'Nowhere/Atlantis')
