# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""A PD waypoint follower for a legged base: (linear x, angular z) commands for cmd_vel.

RAVEN drove its Go1 along A* waypoints with a PD controller; this is that controller with
the guards a real robot needs. The target is the first waypoint at least `lookahead_m` away
(or not yet passed), so dense A* paths are tracked like a carrot and corners are cut by at
most about `lookahead_m / 2`. The robot turns in place while the heading error is large,
slows near the goal so that it can stop within the acceleration limit, and optionally turns
to a goal yaw at the end. Lateral velocity is never commanded: it is a unicycle controller.

Failure handling, so that the caller never has to guess:

- every status but RUNNING commands zero, immediately: a stuck, lost or canceled robot
  must stop now, and the robot's own controller smooths that step;
- a pose older than `pose_timeout_s`, or with any non-finite number (also in its stamp or
  the clock, or arising from absurdly large ones), gives STALE_POSE. It is the one status
  that is not final: the path is kept and following resumes from rest on the next good
  pose. Nothing here raises on bad poses, so a node cannot be brought down by one bad
  message;
- no progress (`progress_min_m` along the path, or `progress_min_rad` of heading error
  while turning) within `progress_window_s` gives STUCK; `timeout_s` overall gives
  TIMED_OUT, even while poses are stale.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass, fields


def wrap_angle(angle: float) -> float:
    """The same angle in (-pi, pi]."""
    wrapped = math.remainder(angle, math.tau)
    return math.pi if wrapped == -math.pi else wrapped


@dataclass(frozen=True)
class FollowerParams:
    """Gains and limits; defaults suit a Go1 walking indoors (SI units, radians)."""

    max_linear: float = 0.5
    max_angular: float = 1.0
    max_linear_accel: float = 0.5
    max_angular_accel: float = 1.5
    kp_heading: float = 1.5
    kd_heading: float = 0.1
    kp_distance: float = 1.0
    kd_distance: float = 0.1
    lookahead_m: float = 0.4
    goal_tolerance_m: float = 0.15
    yaw_tolerance_rad: float = 0.1
    turn_in_place_rad: float = 0.8
    progress_window_s: float = 5.0
    progress_min_m: float = 0.1
    progress_min_rad: float = 0.2
    timeout_s: float = 300.0
    pose_timeout_s: float = 0.5
    max_dt_s: float = 0.2

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            if field.name.startswith('kd_'):
                if not (math.isfinite(value) and value >= 0):
                    raise ValueError(f'{field.name} must be a finite number >= 0, got {value}')
            elif not (math.isfinite(value) and value > 0):
                raise ValueError(f'{field.name} must be a finite number > 0, got {value}')
        if self.turn_in_place_rad > math.pi:
            raise ValueError(f'turn_in_place_rad must be <= pi, got {self.turn_in_place_rad}')
        if self.goal_tolerance_m > self.lookahead_m:
            raise ValueError('goal_tolerance_m must be <= lookahead_m')


class FollowerStatus(enum.Enum):
    IDLE = 'idle'
    RUNNING = 'running'
    ARRIVED = 'arrived'
    STUCK = 'stuck'
    TIMED_OUT = 'timed_out'
    STALE_POSE = 'stale_pose'
    CANCELED = 'canceled'


@dataclass(frozen=True)
class Command:
    """Body-frame velocity: forward (m/s) and counter-clockwise turn rate (rad/s)."""

    linear: float = 0.0
    angular: float = 0.0


STOP = Command()


@dataclass(frozen=True)
class FollowerOutput:
    """One step's command and state; `waypoint_index` is the waypoint being steered at."""

    command: Command
    status: FollowerStatus
    distance_remaining_m: float
    waypoint_index: int


def _ramp(current: float, target: float, max_step: float) -> float:
    return current + min(max(target - current, -max_step), max_step)


def _checked_path(waypoints: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    path = [(float(x), float(y)) for x, y in waypoints]
    if not path:
        raise ValueError('the path has no waypoints')
    if not all(math.isfinite(x) and math.isfinite(y) for x, y in path):
        raise ValueError('the path has non-finite waypoints')
    return path


class PathFollower:
    """Tracks one path at a time; call `update` at the pose rate (10-50 Hz)."""

    def __init__(self, params: FollowerParams | None = None) -> None:
        self.params = params or FollowerParams()
        self._status = FollowerStatus.IDLE
        self._command = STOP
        self._goal_yaw: float | None = None
        self._start_s = self._last_s = 0.0
        self._progress_since_s: float | None = None
        self._set_path([])

    @property
    def status(self) -> FollowerStatus:
        return self._status

    @property
    def active(self) -> bool:
        """Following a path: RUNNING, or STALE_POSE and waiting for a good pose."""
        return self._status in (FollowerStatus.RUNNING, FollowerStatus.STALE_POSE)

    def start(
        self, waypoints: Sequence[tuple[float, float]], goal_yaw: float | None, now_s: float
    ) -> None:
        """Follow a new path; a path already being followed is replaced without a jolt."""
        path = _checked_path(waypoints)
        if goal_yaw is not None and not math.isfinite(goal_yaw):
            raise ValueError(f'goal_yaw must be finite, got {goal_yaw}')
        if not math.isfinite(now_s):
            raise ValueError(f'now_s must be finite, got {now_s}')
        if not self.active:
            self._command = STOP
        self._goal_yaw = goal_yaw
        self._start_s = now_s
        self._progress_since_s = None
        self._last_s = now_s
        self._set_path(path)
        self._status = FollowerStatus.RUNNING

    def replace_path(self, waypoints: Sequence[tuple[float, float]]) -> None:
        """Swap in a replanned path to the same goal, keeping speed, goal yaw and clocks.

        The progress clock is not restarted, so replanning cannot hide a stuck robot.
        """
        if not self.active:
            raise RuntimeError(f'no path is being followed (status {self._status.value})')
        self._set_path(_checked_path(waypoints))

    def cancel(self) -> None:
        if self.active:
            self._stop(FollowerStatus.CANCELED)

    def _set_path(self, path: list[tuple[float, float]]) -> None:
        self._path = path
        # Suffix sums: path length from each waypoint to the end.
        self._tail = [0.0] * len(path)
        for i in range(len(path) - 2, -1, -1):
            self._tail[i] = self._tail[i + 1] + math.dist(path[i], path[i + 1])
        self._index = 0
        self._remaining = self._tail[0] if path else 0.0
        self._segment_start: tuple[float, float] | None = None
        self._aligning = False
        self._previous_error: tuple[object, float, float] | None = None
        # What progress is measured against; None until the next update measures it.
        self._progress_m: float | None = None
        self._progress_rad = math.inf

    def _stop(self, status: FollowerStatus) -> FollowerOutput:
        self._status = status
        self._command = STOP
        self._previous_error = None
        return self._output()

    def _output(self) -> FollowerOutput:
        return FollowerOutput(self._command, self._status, self._remaining, self._index)

    def update(
        self, x: float, y: float, yaw: float, pose_stamp_s: float, now_s: float
    ) -> FollowerOutput:
        """One control step from the latest pose; the returned command is always finite."""
        if not self.active:
            return self._output()
        if not math.isfinite(now_s):
            return self._stop(FollowerStatus.STALE_POSE)
        if now_s - self._start_s > self.params.timeout_s:
            return self._stop(FollowerStatus.TIMED_OUT)
        values = (x, y, yaw, pose_stamp_s)
        if not all(math.isfinite(v) for v in values) or (
            now_s - pose_stamp_s > self.params.pose_timeout_s
        ):
            self._last_s = now_s
            self._progress_since_s = self._progress_m = None  # stopped: measure afresh
            return self._stop(FollowerStatus.STALE_POSE)
        self._status = FollowerStatus.RUNNING
        elapsed = now_s - self._last_s
        self._last_s = now_s
        dt = min(max(elapsed, 0.0), self.params.max_dt_s)

        self._advance(x, y)
        target = self._path[self._index]
        to_target = math.dist((x, y), target)
        self._remaining = to_target + self._tail[self._index]
        last = len(self._path) - 1
        if self._index == last and to_target <= self.params.goal_tolerance_m:
            if self._goal_yaw is None:
                return self._stop(FollowerStatus.ARRIVED)
            self._aligning = True
        if self._aligning:
            error = wrap_angle(self._goal_yaw - yaw)
            if abs(error) <= self.params.yaw_tolerance_rad:
                return self._stop(FollowerStatus.ARRIVED)
        else:
            error = wrap_angle(math.atan2(target[1] - y, target[0] - x) - yaw)
        if self._no_progress(now_s, error):
            return self._stop(FollowerStatus.STUCK)
        command = self._limit(self._target_command(error, elapsed), dt)
        if not (math.isfinite(command.linear) and math.isfinite(command.angular)):
            return self._stop(FollowerStatus.STALE_POSE)  # finite but absurd numbers overflowed
        self._command = command
        return self._output()

    def _advance(self, x: float, y: float) -> None:
        """Move the target past waypoints that are within the lookahead or already passed."""
        last = len(self._path) - 1
        if self._segment_start is None:
            self._segment_start = (x, y)
        while self._index < last:
            tx, ty = self._path[self._index]
            sx, sy = self._segment_start
            near = math.hypot(x - tx, y - ty) < self.params.lookahead_m
            passed = (x - tx) * (tx - sx) + (y - ty) * (ty - sy) > 0.0
            if not (near or passed):
                return
            self._segment_start = (tx, ty)
            self._index += 1

    def _no_progress(self, now_s: float, heading_error: float) -> bool:
        """True when neither the path left nor the heading error has shrunk for a window.

        A new path only re-measures the references: the clock keeps running.
        """
        p = self.params
        turn = abs(heading_error)
        measured = self._progress_m is not None
        if (
            measured
            and self._remaining > self._progress_m - p.progress_min_m
            and turn > self._progress_rad - p.progress_min_rad
        ):
            return now_s - self._progress_since_s > p.progress_window_s
        if measured or self._progress_since_s is None:
            self._progress_since_s = now_s
        self._progress_m, self._progress_rad = self._remaining, turn
        return False

    def _target_command(self, error: float, elapsed: float) -> Command:
        """PD on heading (and on distance left), clipped so braking fits the accel limits."""
        p = self.params
        # The derivative restarts whenever its error changes meaning (new waypoint, mode).
        key = (self._index, self._aligning)
        previous = self._previous_error
        self._previous_error = (key, error, self._remaining)
        fresh = previous is not None and previous[0] == key and elapsed > 1e-6
        d_error = wrap_angle(error - previous[1]) / elapsed if fresh else 0.0
        d_remaining = (self._remaining - previous[2]) / elapsed if fresh else 0.0

        turn_cap = min(p.max_angular, math.sqrt(2.0 * p.max_angular_accel * abs(error)))
        angular = p.kp_heading * error + p.kd_heading * d_error
        angular = min(max(angular, -turn_cap), turn_cap)
        if self._aligning:
            return Command(0.0, angular)
        drive_cap = min(p.max_linear, math.sqrt(2.0 * p.max_linear_accel * self._remaining))
        linear = p.kp_distance * self._remaining + p.kd_distance * d_remaining
        linear = min(max(linear, 0.0), drive_cap)
        # Full speed when facing the target, none from turn_in_place_rad on: turn in place.
        if abs(error) >= p.turn_in_place_rad:
            return Command(0.0, angular)
        return Command(linear * math.cos(abs(error) / p.turn_in_place_rad * math.pi / 2.0), angular)

    def _limit(self, target: Command, dt: float) -> Command:
        p = self.params
        return Command(
            _ramp(self._command.linear, target.linear, p.max_linear_accel * dt),
            _ramp(self._command.angular, target.angular, p.max_angular_accel * dt),
        )
