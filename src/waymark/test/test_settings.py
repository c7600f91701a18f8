# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Settings on config dataclasses: names, checks, building and changing a config."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from waymark.settings import build, replaced, setting, settings


@dataclass(frozen=True)
class Inner:
    low_s: float = setting(1.0, 'Lower.', low=0.0, high=10.0, live=True)
    high_s: float = setting(2.0, 'Upper.', low=0.0, high=10.0, live=True)

    def __post_init__(self) -> None:
        if self.high_s < self.low_s:
            raise ValueError('high_s must be >= low_s')


@dataclass(frozen=True)
class Outer:
    mode: str = setting('a', 'Mode.', choices=('a', 'b'))
    count: int = setting(3, 'Count.', low=1, high=5)
    pose: tuple[float, ...] = setting([0, 0, 1], 'A pose.')
    inner: Inner = field(default_factory=Inner)
    runtime: object = None  # not a setting


def by_name(config_type=Outer) -> dict:
    return {info.name: info for info in settings(config_type)}


def test_settings_are_listed_by_dotted_name_with_their_defaults():
    infos = settings(Outer, prefix='node.')
    assert [info.name for info in infos] == [
        'node.mode',
        'node.count',
        'node.pose',
        'node.inner.low_s',
        'node.inner.high_s',
    ]
    assert infos[2].default == (0.0, 0.0, 1.0)  # sequences are floats
    assert [info.spec.live for info in infos] == [False, False, False, True, True]


@pytest.mark.parametrize(
    ('name', 'value', 'reason'),
    [
        ('mode', 'c', 'must be one of a, b'),
        ('count', 6, 'must be in [1, 5]'),
        ('count', 2.0, 'must be an integer, not float'),
        ('count', True, 'must be an integer, not bool'),
        ('inner.low_s', 1, 'must be a float, not int'),
        ('inner.low_s', float('nan'), 'must be finite'),
        ('pose', [0, 1], 'must be a list of floats'),
    ],
)
def test_a_value_that_does_not_fit_gets_the_reason(name, value, reason):
    assert by_name()[name].problem(value) == reason


def test_fitting_values_pass():
    infos = by_name()
    assert infos['mode'].problem('b') == infos['count'].problem(5) == ''
    assert infos['pose'].problem([1.0, 2.0]) == ''


def test_build_takes_given_values_and_keeps_defaults():
    config = build(Outer, {'count': 4, 'inner.high_s': 9.0, 'pose': [1.0, 2.0, 3.0]})
    assert config == Outer(count=4, pose=(1.0, 2.0, 3.0), inner=Inner(high_s=9.0))


def test_replaced_changes_one_setting_and_runs_the_dataclass_checks():
    infos = by_name()
    config = replaced(Outer(), infos['inner.high_s'], 7.5)
    assert config.inner == Inner(low_s=1.0, high_s=7.5) and config.count == 3
    with pytest.raises(ValueError, match='high_s must be >= low_s'):
        replaced(config, infos['inner.low_s'], 8.0)


def test_a_setting_whose_default_does_not_fit_is_a_mistake():
    with pytest.raises(ValueError, match='must be in'):
        setting(7, 'Too big.', low=0, high=5)
    with pytest.raises(TypeError, match='range'):
        setting('x', 'Text with a range.', low=0, high=5)
    with pytest.raises(ValueError, match='both low and high'):
        setting(1.0, 'Half a range.', low=0.0)
