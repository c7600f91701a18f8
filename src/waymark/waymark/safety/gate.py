# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The safety gate: which velocity goes to the base at each step, and why it was held back.

Each step (at a fixed rate) turns the newest command into the output:

- e-stop engaged: zero, every step, until released; commands that arrive meanwhile are
  dropped, so the robot moves again only on a command sent after the release;
- no command for `command_timeout_s` (or none yet): zero, repeated for `stop_repeat_s`
  and then silent, so the base stops when the sender dies and a lower-priority input of a
  twist multiplexer gets its turn afterwards;
- local stop (with a cloud): while at least `min_points` points are in the footprint
  ahead, or the newest cloud is older than `cloud_timeout_s` (or none came yet), forward
  speed is zero at once; turning in place and backing away stay allowed. A missing cloud
  stops forward motion like an obstacle does: the gate cannot tell that the way is free;
- otherwise the command within the speed limits and, from the last output, the
  acceleration limits. Stops are never ramped: they take effect at once.

Non-finite commands count as zero commands (they are counted, and they keep the
watchdog fed: the sender is alive, but what it says cannot be driven).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from waymark.safety.limits import Velocity, VelocityLimits

E_STOP = 'e-stop engaged'
NO_COMMAND = 'no command'
OBSTACLE = 'obstacle ahead'
NO_CLOUD = 'no fresh cloud'
_ZERO: Velocity = (0.0, 0.0)


@dataclass(frozen=True)
class GateConfig:
    limits: VelocityLimits
    command_timeout_s: float
    stop_repeat_s: float
    local_stop: bool  # whether a cloud is watched at all
    cloud_timeout_s: float
    min_points: int
    # Longest time one step may ramp over (about two step periods): a step that comes late
    # (a loaded machine) must not turn the delay into one large speed change.
    max_step_s: float = 0.1

    def __post_init__(self) -> None:
        for name in ('command_timeout_s', 'cloud_timeout_s', 'max_step_s'):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0.0):
                raise ValueError(f'{name} must be finite and > 0, got {value}')
        if not (math.isfinite(self.stop_repeat_s) and self.stop_repeat_s >= 0.0):
            raise ValueError(f'stop_repeat_s must be finite and >= 0, got {self.stop_repeat_s}')
        if self.min_points < 1:
            raise ValueError(f'min_points must be >= 1, got {self.min_points}')


@dataclass(frozen=True)
class Decision:
    velocity: Velocity
    publish: bool  # False: stay silent (stopped long enough)
    reasons: tuple[str, ...]  # why motion is held back; empty while the command passes


class SafetyGate:
    def __init__(self, config: GateConfig, now_s: float) -> None:
        self._config = config
        self._started_s = now_s
        self._command: Velocity = _ZERO
        self._command_s: float | None = None  # when the newest command came
        self._e_stop = False
        self._cloud_s: float | None = None
        self._inside = 0
        self._output: Velocity = _ZERO
        self._step_s = now_s
        self.counts = {'commands': 0, 'non_finite': 0, 'clamped': 0, 'dropped_in_e_stop': 0}

    def use(self, config: GateConfig) -> None:
        """New limits and timeouts: from the next step on."""
        self._config = config

    @property
    def e_stop(self) -> bool:
        return self._e_stop

    @property
    def inside_points(self) -> int:
        return self._inside

    def command(self, linear: float, angular: float, now_s: float) -> bool:
        """Take a command; False when it was not finite (taken as zero) or dropped."""
        if self._e_stop:
            self.counts['dropped_in_e_stop'] += 1
            return False
        self.counts['commands'] += 1
        finite = math.isfinite(linear) and math.isfinite(angular)
        if not finite:
            self.counts['non_finite'] += 1
            linear, angular = _ZERO
        self._command, self._command_s = (float(linear), float(angular)), now_s
        return finite

    def set_e_stop(self, engaged: bool) -> None:
        if engaged and not self._e_stop:
            self._command, self._command_s = _ZERO, None
        self._e_stop = engaged

    def cloud(self, inside_points: int, now_s: float) -> None:
        """A cloud came: this many of its points are in the footprint ahead."""
        self._inside, self._cloud_s = inside_points, now_s

    def step(self, now_s: float) -> Decision:
        config = self._config
        dt_s = min(max(now_s - self._step_s, 0.0), config.command_timeout_s, config.max_step_s)
        self._step_s = now_s
        blocked = self._forward_blocked(now_s)  # reported even while stopped otherwise
        if self._e_stop:
            return self._stop(True, (E_STOP, *blocked))
        if self._command_s is None or now_s - self._command_s > config.command_timeout_s:
            stopped_since = (
                self._started_s
                if self._command_s is None
                else self._command_s + config.command_timeout_s
            )
            repeat = now_s - stopped_since <= config.stop_repeat_s
            return self._stop(repeat, (NO_COMMAND, *blocked))
        target = config.limits.clamped(self._command)
        if target != self._command:
            self.counts['clamped'] += 1
        reasons = blocked
        if reasons and target[0] > 0.0:
            target = (0.0, target[1])
        linear, angular = config.limits.ramped(self._output, target, dt_s)
        if reasons and linear > 0.0:
            linear = 0.0  # at once, not ramped down
        self._output = (linear, angular)
        return Decision(self._output, True, reasons)

    def _forward_blocked(self, now_s: float) -> tuple[str, ...]:
        config = self._config
        if not config.local_stop:
            return ()
        if self._cloud_s is None or now_s - self._cloud_s > config.cloud_timeout_s:
            return (NO_CLOUD,)
        if self._inside >= config.min_points:
            return (OBSTACLE,)
        return ()

    def _stop(self, publish: bool, reasons: tuple[str, ...]) -> Decision:
        self._output = _ZERO
        return Decision(_ZERO, publish, reasons)
