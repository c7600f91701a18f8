# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Fill a ROS message from a dict, as `ros2 service call` and `ros2 action send_goal` do
with their YAML argument (rosidl_runtime_py is not part of the PyPI wheels).

Nested messages are filled recursively, sequences of messages element by element. A key
that is not a field of the message raises UnknownFieldError naming the fields there are,
and a value of the wrong kind raises TypeError naming the field, so a misspelt field in a
documented command fails instead of being dropped.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from rosidl_parser.definition import AbstractGenericString, BasicType, NamespacedType

_FLOATS = {'float', 'double', 'long double'}
_BOOLEANS = {'boolean'}


class UnknownFieldError(ValueError):
    """A key of the dict is not a field of the message."""


def message_class(namespaced_type: NamespacedType) -> type:
    """The Python class of a rosidl NamespacedType (e.g. geometry_msgs.msg.Point)."""
    module = importlib.import_module('.'.join(namespaced_type.namespaces))
    return getattr(module, namespaced_type.name)


def set_fields(msg: Any, values: Mapping[str, Any] | None, _path: str = '') -> Any:
    """Set the fields of `msg` named in `values` (recursively); returns `msg`."""
    if values is None:
        return msg
    where = _path or type(msg).__name__
    if not isinstance(values, Mapping):
        raise TypeError(
            f'{where} ({type(msg).__name__}) needs a mapping of its fields, got {values!r}'
        )
    fields = msg.get_fields_and_field_types()
    slot_types = dict(zip(fields, msg.SLOT_TYPES, strict=True))
    for name, value in values.items():
        if name not in fields:
            raise UnknownFieldError(
                f'{type(msg).__name__} has no field {name!r}; its fields: {", ".join(fields)}'
            )
        path = f'{_path}.{name}' if _path else name
        slot = slot_types[name]
        if isinstance(slot, NamespacedType):
            set_fields(getattr(msg, name), value, path)
        else:
            setattr(msg, name, _convert(path, slot, value))
    return msg


def _convert(path: str, slot, value: Any) -> Any:
    """`value` as field `path` of type `slot` holds it; TypeError rather than a guess."""
    element = getattr(slot, 'value_type', None)
    if element is not None:  # a sequence or an array
        if not isinstance(value, (list, tuple)):
            raise TypeError(f'field {path!r} needs a list, got {value!r}')
        if isinstance(element, NamespacedType):
            cls = message_class(element)
            return [set_fields(cls(), item, f'{path}[{i}]') for i, item in enumerate(value)]
        return [_convert(f'{path}[{i}]', element, item) for i, item in enumerate(value)]
    if isinstance(slot, AbstractGenericString):
        # YAML reads an unquoted 2026 as a number; the CLI sends it as the text it was.
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise TypeError(f'field {path!r} needs text, got {value!r}')
        return str(value)
    if isinstance(slot, BasicType) and slot.typename in _BOOLEANS:
        if not isinstance(value, bool):
            raise TypeError(f'field {path!r} needs true or false, got {value!r}')
        return value
    if isinstance(slot, BasicType) and slot.typename in _FLOATS:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f'field {path!r} needs a number, got {value!r}')
        return float(value)
    if isinstance(slot, BasicType):  # integers, octets, chars
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f'field {path!r} needs an integer, got {value!r}')
        return value
    return value
