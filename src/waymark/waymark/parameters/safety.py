# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""safety_node's parameters. Speed and acceleration limits and the timeouts are live (an
operator lowers the speed for a first walk without a restart); topics and the footprint's
geometry are fixed at start."""

from __future__ import annotations

from dataclasses import dataclass, field

from waymark.safety.footprint import Footprint
from waymark.safety.gate import GateConfig
from waymark.safety.limits import VelocityLimits
from waymark.settings import setting


@dataclass(frozen=True)
class LimitParameters:
    max_linear: float = setting(
        0.5,
        'Forward and backward speed limit (m/s); a first walk uses 0.2.',
        low=0.01,
        high=5.0,
        live=True,
    )
    max_angular: float = setting(1.0, 'Yaw rate limit (rad/s).', low=0.01, high=10.0, live=True)
    max_linear_accel: float = setting(
        1.0, 'Speed change limit (m/s^2); stops are not limited.', low=0.01, high=20.0, live=True
    )
    max_angular_accel: float = setting(
        2.0,
        'Yaw rate change limit (rad/s^2); stops are not limited.',
        low=0.01,
        high=50.0,
        live=True,
    )

    def limits(self) -> VelocityLimits:
        return VelocityLimits(
            self.max_linear, self.max_angular, self.max_linear_accel, self.max_angular_accel
        )


@dataclass(frozen=True)
class LocalStopParameters:
    cloud_topic: str = setting(
        '',
        'sensor_msgs/PointCloud2 in the body frame, live; empty: no local stop (the node '
        'warns and says so in its diagnostics).',
    )
    frame_id: str = setting(
        '', 'The frame the cloud must be in (the body frame); empty: not checked.'
    )
    cloud_frame_id: str = setting(
        '',
        "The frame the cloud comes in when it is not frame_id (a depth camera's optical "
        'frame): its static transform into frame_id is looked up from TF at start, and clouds '
        'are refused (forward motion stopped) until it is there; empty: clouds come in '
        'frame_id.',
    )
    tf_timeout_s: float = setting(
        30.0, 'How long the cloud_frame_id transform is looked for.', low=0.1, high=3600.0
    )
    reliable: bool = setting(False, 'Subscribe to the cloud reliably (best effort matches all).')
    cloud_timeout_s: float = setting(
        0.5,
        'A cloud older than this (or none yet) stops forward motion, as an obstacle does.',
        low=0.01,
        high=60.0,
        live=True,
    )
    body_height_m: float = setting(
        0.3,
        "The body frame's origin above the floor (Go1 standing: about 0.3 m).",
        low=-10.0,
        high=10.0,
    )
    ahead_from_m: float = setting(
        0.3,
        'The box starts this far ahead of the body origin (the front of the body).',
        low=-5.0,
        high=10.0,
    )
    ahead_to_m: float = setting(0.8, 'The box ends this far ahead.', low=-5.0, high=20.0)
    width_m: float = setting(0.5, 'The box is this wide, centred.', low=0.01, high=10.0)
    h_min_m: float = setting(
        0.1, 'Points at least this high above the floor count.', low=-10.0, high=10.0
    )
    h_max_m: float = setting(
        0.6, 'Points up to this high above the floor count.', low=-10.0, high=10.0
    )
    min_points: int = setting(
        3,
        'Points in the box that make an obstacle (fewer are noise).',
        low=1,
        high=1_000_000,
        live=True,
    )

    def footprint(self) -> Footprint:
        return Footprint(
            self.ahead_from_m,
            self.ahead_to_m,
            self.width_m,
            self.h_min_m,
            self.h_max_m,
            self.body_height_m,
        )


@dataclass(frozen=True)
class SafetyParameters:
    input_topic: str = setting(
        'cmd_vel_nav',
        "geometry_msgs/Twist in: the navigator's command, or twist_mux's output (cmd_vel_mux, "
        'teleop and navigator) on the Go1 (config/go1_safety.yaml).',
    )
    output_topic: str = setting('cmd_vel', "geometry_msgs/Twist out: the base driver's command.")
    e_stop_topic: str = setting(
        'e_stop', 'std_msgs/Bool, latched (reliable, transient local): true halts until false.'
    )
    rate_hz: float = setting(20.0, 'Output rate while commands come.', low=1.0, high=500.0)
    command_timeout_s: float = setting(
        0.4,
        "Zero output when no command came for this long (the Go1 driver's own is 0.4 s).",
        low=0.01,
        high=60.0,
        live=True,
    )
    stop_repeat_s: float = setting(
        2.0,
        'After the timeout, zero twists go out at rate_hz for this long, then none.',
        low=0.0,
        high=3600.0,
        live=True,
    )
    state_period_s: float = setting(
        0.2,
        'safety/state goes out on every change and at least this often: navigator_node '
        'refuses to drive when it stops coming.',
        low=0.02,
        high=10.0,
    )
    diagnostics_period_s: float = setting(
        1.0, 'How often /diagnostics is published.', low=0.05, high=60.0
    )
    limits: LimitParameters = field(default_factory=LimitParameters)
    local_stop: LocalStopParameters = field(default_factory=LocalStopParameters)

    def __post_init__(self) -> None:
        if not (self.input_topic and self.output_topic and self.e_stop_topic):
            raise ValueError('input_topic, output_topic and e_stop_topic must not be empty')
        if self.input_topic == self.output_topic:
            raise ValueError(f'input_topic and output_topic are both {self.input_topic!r}')
        self.local_stop.footprint()  # its checks across fields
        self.gate_config()

    def gate_config(self) -> GateConfig:
        stop = self.local_stop
        return GateConfig(
            limits=self.limits.limits(),
            command_timeout_s=self.command_timeout_s,
            stop_repeat_s=self.stop_repeat_s,
            local_stop=bool(stop.cloud_topic),
            cloud_timeout_s=stop.cloud_timeout_s,
            min_points=stop.min_points,
            max_step_s=2.0 / self.rate_hz,
        )
