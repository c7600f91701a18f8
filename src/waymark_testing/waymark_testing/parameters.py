# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Changing a running node's parameters, as `ros2 param set` does.

Both calls are sent again when unanswered for RESEND_AFTER_S: a request sent in the moment
before the node's service has matched the caller back is dropped (see MATCH_SETTLE_S), and
reading a parameter or setting it to the same value twice changes nothing.
"""

from __future__ import annotations

from typing import Any

from rcl_interfaces.msg import SetParametersResult
from rcl_interfaces.srv import GetParameters, SetParameters
from rclpy.parameter import Parameter, parameter_value_to_python

RESEND_AFTER_S = 5.0


def set_parameters(ros, node: str, values: dict[str, Any]) -> dict[str, SetParametersResult]:
    """Set each of `values` on `node` (one by one, as its set_parameters service does);
    returns each one's result by name."""
    request = SetParameters.Request(
        parameters=[
            Parameter(name, value=value).to_parameter_msg() for name, value in values.items()
        ]
    )
    response = ros.call(
        SetParameters, f'/{node}/set_parameters', request, resend_after_s=RESEND_AFTER_S
    )
    return dict(zip(values, response.results, strict=True))


def get_parameter(ros, node: str, name: str) -> Any:
    response = ros.call(
        GetParameters,
        f'/{node}/get_parameters',
        GetParameters.Request(names=[name]),
        resend_after_s=RESEND_AFTER_S,
    )
    return parameter_value_to_python(response.values[0])


def assert_refused(result: SetParametersResult, reason: str) -> None:
    assert not result.successful, 'the change was accepted'
    assert reason in result.reason, result.reason
