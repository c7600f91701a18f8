# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Node parameters from core settings (waymark.settings): declared with descriptors that
carry their description, range and whether they may change while the node runs.

rclpy refuses read-only parameters and values outside a range by itself; the checks of
the core (types, choices, and the config dataclasses' own checks across fields) run in an
on-set-parameters callback, which refuses a change with the reason, and a post-set
callback hands the changed config to the node, which applies it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from rcl_interfaces.msg import (
    FloatingPointRange,
    IntegerRange,
    ParameterDescriptor,
    SetParametersResult,
)
from rclpy.node import Node
from rclpy.parameter import Parameter

from waymark.settings import SettingInfo, build, replaced, settings

Config = TypeVar('Config')


def declare_settings(
    node: Node,
    config_type: type[Config],
    prefix: str = '',
    on_change: Callable[[Config], None] | None = None,
) -> Config:
    """Declare every setting of `config_type` (named `prefix` + its dotted name) and
    return the config they make. With `on_change`, the live settings are writable: each
    accepted change calls it with the whole new config."""
    infos = settings(config_type)
    values = {info.name: declare_setting(node, prefix + info.name, info) for info in infos}
    config = build(config_type, values)
    live = {prefix + info.name: info for info in infos if info.spec.live}
    if on_change is not None and live:
        current = [config]

        def validate(parameters: list[Parameter]) -> SetParametersResult:
            candidate = current[0]
            for parameter in parameters:
                info = live.get(parameter.name)
                if info is None:
                    continue
                problem = info.problem(parameter.value)
                if problem:
                    return _refused(f'{parameter.name}={parameter.value!r} {problem}')
                try:
                    candidate = replaced(candidate, info, parameter.value)
                except ValueError as error:
                    return _refused(f'{parameter.name}={parameter.value!r}: {error}')
            return SetParametersResult(successful=True)

        def apply(parameters: list[Parameter]) -> None:
            ours = [parameter for parameter in parameters if parameter.name in live]
            for parameter in ours:
                current[0] = replaced(current[0], live[parameter.name], parameter.value)
            if ours:
                on_change(current[0])

        node.add_on_set_parameters_callback(validate)
        node.add_post_set_parameters_callback(apply)
    return config


def declare_setting(node: Node, name: str, info: SettingInfo) -> Any:
    """Declare one setting and return its value, refused with the reason when it does not
    fit (rclpy checks ranges; the core checks choices)."""
    spec = info.spec
    descriptor = ParameterDescriptor(description=spec.description, read_only=not spec.live)
    if spec.choices:
        descriptor.additional_constraints = 'one of: ' + ', '.join(spec.choices)
    if spec.low is not None and info.kind is int:
        descriptor.integer_range = [
            IntegerRange(from_value=int(spec.low), to_value=int(spec.high), step=0)
        ]
    elif spec.low is not None:
        descriptor.floating_point_range = [
            FloatingPointRange(from_value=float(spec.low), to_value=float(spec.high), step=0.0)
        ]
    default = list(info.default) if isinstance(info.default, tuple) else info.default
    value = node.declare_parameter(name, default, descriptor).value
    problem = info.problem(value)
    if problem:
        raise ValueError(f'parameter {name}={value!r} {problem}')
    return value


def _refused(reason: str) -> SetParametersResult:
    return SetParametersResult(successful=False, reason=reason)
