# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Helpers for declaring validated, self-documenting node parameters."""

from __future__ import annotations

from typing import Any

from rcl_interfaces.msg import (
    FloatingPointRange,
    IntegerRange,
    ParameterDescriptor,
)
from rclpy.node import Node


def declare(
    node: Node,
    name: str,
    default: Any,
    description: str,
    *,
    low: float | None = None,
    high: float | None = None,
    choices: tuple[str, ...] = (),
    read_only: bool = True,
) -> Any:
    """Declare a parameter with a descriptor and return its validated value.

    Ranges become descriptor constraints: rclpy refuses values outside them, and
    `ros2 param describe` shows them. Choices are checked here.
    """
    descriptor = ParameterDescriptor(description=description, read_only=read_only)
    if choices:
        descriptor.additional_constraints = 'one of: ' + ', '.join(choices)
    if low is not None and high is not None:
        if isinstance(default, bool) or not isinstance(default, (int, float)):
            raise TypeError(f'range given for non-numeric parameter {name}')
        if isinstance(default, int):
            descriptor.integer_range = [
                IntegerRange(from_value=int(low), to_value=int(high), step=0)
            ]
        else:
            descriptor.floating_point_range = [
                FloatingPointRange(from_value=float(low), to_value=float(high), step=0.0)
            ]
    value = node.declare_parameter(name, default, descriptor).value
    if choices and value not in choices:
        raise ValueError(f'parameter {name}={value!r} must be one of {", ".join(choices)}')
    return value
