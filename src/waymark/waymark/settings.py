# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Settings: config dataclass fields that describe themselves, so one definition gives the
default, the documentation, the valid range and whether a value may change while running.

A field made with `setting(...)` is a setting; a field whose type is a dataclass is a
group, and its settings are named `group.name` (as ROS parameters are). Fields made
otherwise are not settings (runtime values that no file or operator sets). The ROS side
declares these as node parameters (waymark_ros.ros.params); docs/parameters.md is written
from them; nothing here imports ROS.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

_KEY = 'waymark.setting'
# Values a setting may hold: what a ROS parameter of the same type holds.
SCALARS = (bool, int, float, str)
_KIND_NAMES = {bool: 'a bool', int: 'an integer', float: 'a float', str: 'a string'}


@dataclass(frozen=True)
class Setting:
    """What a setting means and what it may be; `live`: it may change while running."""

    description: str
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    live: bool = False


@dataclass(frozen=True)
class SettingInfo:
    """One setting of a config dataclass, by its dotted name."""

    name: str
    path: tuple[str, ...]  # attribute names from the outermost config to the field
    default: Any
    spec: Setting

    @property
    def kind(self) -> type:
        """bool, int, float, str, or tuple (of floats)."""
        return type(self.default)

    def problem(self, value: Any) -> str:
        """Why `value` cannot be this setting's value ('' when it can)."""
        return check(self, value)


def setting(
    default: Any,
    description: str,
    *,
    low: float | None = None,
    high: float | None = None,
    choices: tuple[str, ...] = (),
    live: bool = False,
) -> Any:
    """A dataclass field that is a setting; sequences become tuples of floats."""
    if isinstance(default, (list, tuple)):
        default = tuple(float(value) for value in default)
    spec = Setting(description, low, high, tuple(choices), live)
    if (low is None) != (high is None):
        raise ValueError(f'a setting needs both low and high or neither: {description!r}')
    info = SettingInfo('', (), default, spec)
    if not isinstance(default, (*SCALARS, tuple)):
        raise TypeError(f'a setting holds bool, int, float, str or floats, not {default!r}')
    if low is not None and not _is_number(default):
        raise TypeError(f'a range is given for the non-numeric setting {description!r}')
    problem = check(info, default)
    if problem:
        raise ValueError(f'the default {default!r} of {description!r} {problem}')
    return dataclasses.field(default=default, metadata={_KEY: spec})


def settings(config_type: type, prefix: str = '') -> list[SettingInfo]:
    """Every setting of a config dataclass and its groups, in field order."""
    return list(_walk(config_type, prefix, ()))


def _walk(config_type: type, prefix: str, path: tuple[str, ...]) -> Iterator[SettingInfo]:
    hints = typing.get_type_hints(config_type)
    for field in dataclasses.fields(config_type):
        spec = field.metadata.get(_KEY)
        if spec is not None:
            yield SettingInfo(prefix + field.name, (*path, field.name), field.default, spec)
        elif dataclasses.is_dataclass(hints[field.name]):
            yield from _walk(hints[field.name], f'{prefix}{field.name}.', (*path, field.name))


def check(info: SettingInfo, value: Any) -> str:
    """Why `value` does not fit the setting's type, range or choices ('' when it does).

    Types are strict, as ROS parameters are: 1 is not a float setting's value, 1.0 is.
    """
    kind, spec = info.kind, info.spec
    if kind is tuple:
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, float) for v in value):
            return 'must be a list of floats'
        return ''
    if type(value) is not kind:
        return f'must be {_KIND_NAMES[kind]}, not {type(value).__name__}'
    if kind is float and not math.isfinite(value):
        return 'must be finite'
    if spec.low is not None and not spec.low <= value <= spec.high:
        return f'must be in [{spec.low:g}, {spec.high:g}]'
    if spec.choices and value not in spec.choices:
        return f'must be one of {", ".join(spec.choices)}'
    return ''


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def build(config_type: type, values: Mapping[str, Any], prefix: str = '') -> Any:
    """A config made of `values` (by dotted name; missing ones keep their defaults)."""
    hints = typing.get_type_hints(config_type)
    kwargs = {}
    for field in dataclasses.fields(config_type):
        name = prefix + field.name
        if _KEY in field.metadata:
            if name in values:
                kwargs[field.name] = _converted(field.default, values[name])
        elif dataclasses.is_dataclass(hints[field.name]):
            kwargs[field.name] = build(hints[field.name], values, name + '.')
    return config_type(**kwargs)


def replaced(config: Any, info: SettingInfo, value: Any) -> Any:
    """`config` with one setting changed; the dataclasses' own checks run again."""
    return _replaced(config, info.path, _converted(info.default, value))


def _replaced(config: Any, path: tuple[str, ...], value: Any) -> Any:
    head, *rest = path
    inner = _replaced(getattr(config, head), tuple(rest), value) if rest else value
    return dataclasses.replace(config, **{head: inner})


def _converted(default: Any, value: Any) -> Any:
    if isinstance(default, tuple):
        return tuple(float(v) for v in value)
    if isinstance(default, float):
        return float(value)
    return value
