# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The safety gate's pure logic: limits, watchdog, e-stop and the local stop."""

from __future__ import annotations

import math

import numpy as np
import pytest

from waymark.parameters.safety import SafetyParameters
from waymark.safety.footprint import Footprint
from waymark.safety.gate import E_STOP, NO_CLOUD, NO_COMMAND, OBSTACLE, GateConfig, SafetyGate
from waymark.safety.limits import VelocityLimits

LIMITS = VelocityLimits(
    max_linear=0.5, max_angular=1.0, max_linear_accel=1.0, max_angular_accel=2.0
)
STEP_S = 0.05


def gate(local_stop: bool = False, **changes) -> SafetyGate:
    config = dict(
        limits=LIMITS,
        command_timeout_s=0.5,
        stop_repeat_s=1.0,
        local_stop=local_stop,
        cloud_timeout_s=0.5,
        min_points=3,
    )
    return SafetyGate(GateConfig(**(config | changes)), now_s=0.0)


def drive(g: SafetyGate, command, start_s: float, seconds: float, inside: int | None = None):
    """Commands and steps every STEP_S from start_s; returns the decisions."""
    decisions = []
    for i in range(round(seconds / STEP_S)):
        now = start_s + i * STEP_S
        g.command(*command, now)
        if inside is not None:
            g.cloud(inside, now)
        decisions.append(g.step(now))
    return decisions


def test_speed_is_clamped_and_reached_no_faster_than_the_acceleration_limits():
    g = gate()
    decisions = drive(g, (2.0, -5.0), 0.0, 1.0)
    linear = [d.velocity[0] for d in decisions]
    angular = [d.velocity[1] for d in decisions]
    assert max(linear) == pytest.approx(0.5) and min(angular) == pytest.approx(-1.0)
    steps = np.diff([0.0, *linear])
    assert np.all(steps <= 1.0 * STEP_S + 1e-9)  # 1 m/s^2
    assert np.all(np.abs(np.diff([0.0, *angular])) <= 2.0 * STEP_S + 1e-9)
    assert linear[-1] == pytest.approx(0.5) and all(not d.reasons for d in decisions)
    assert g.counts['clamped'] == len(decisions)


def test_a_late_step_ramps_over_max_step_s_only_not_over_the_whole_delay():
    g = gate(max_step_s=0.1)
    g.command(0.5, 0.0, 0.0)
    assert g.step(0.0).velocity == (0.0, 0.0)
    g.command(0.5, 0.0, 0.45)
    late = g.step(0.45)  # 0.45 s late (a loaded machine): 0.1 s of ramp, not 0.45
    assert late.velocity[0] == pytest.approx(0.1)
    with pytest.raises(ValueError, match='max_step_s'):
        gate(max_step_s=0.0)


def test_non_finite_commands_become_zero_and_are_counted():
    g = gate()
    drive(g, (0.4, 0.0), 0.0, 1.0)
    assert not g.command(math.nan, 0.2, 1.0)
    assert not g.command(0.1, math.inf, 1.0)
    decision = g.step(1.0)
    assert decision.publish and decision.velocity[0] < 0.4 and decision.velocity[1] == 0.0
    assert g.counts['non_finite'] == 2
    later = drive(g, (math.nan, math.nan), 1.05, 1.0)
    assert later[-1].velocity == (0.0, 0.0)


def test_the_watchdog_stops_at_once_repeats_the_stop_then_falls_silent():
    g = gate()
    drive(g, (0.5, 0.3), 0.0, 1.0)  # last command at 0.95 s
    assert g.step(1.4).velocity != (0.0, 0.0)  # within the timeout: still driving
    stopped = g.step(1.5)
    assert stopped.velocity == (0.0, 0.0) and stopped.publish
    assert stopped.reasons == (NO_COMMAND,)
    assert g.step(2.4).publish  # within stop_repeat_s of the stop
    assert not g.step(2.5).publish
    # A new command ramps up again from standstill.
    assert g.command(0.5, 0.0, 3.0) and g.step(3.0).velocity[0] <= 1.0 * 0.5 + 1e-9


def test_without_any_command_it_publishes_zero_for_a_while_after_start():
    g = gate()
    first = g.step(0.0)
    assert first.velocity == (0.0, 0.0) and first.publish and first.reasons == (NO_COMMAND,)
    assert not g.step(1.1).publish


def test_e_stop_halts_holds_and_needs_a_new_command_after_release():
    g = gate()
    drive(g, (0.5, 0.0), 0.0, 1.0)
    g.set_e_stop(True)
    halted = g.step(1.0)
    assert halted.velocity == (0.0, 0.0) and halted.reasons == (E_STOP,)
    assert not g.command(0.5, 0.0, 1.05)  # dropped while engaged
    later = g.step(30.0)  # held, and published, however long
    assert later.publish and later.velocity == (0.0, 0.0) and later.reasons == (E_STOP,)
    g.set_e_stop(False)
    assert g.step(30.05).reasons == (NO_COMMAND,)  # the old command is not resumed
    assert g.command(0.5, 0.0, 30.1)
    resumed = g.step(30.1)
    assert resumed.velocity[0] > 0.0 and not resumed.reasons
    assert g.counts['dropped_in_e_stop'] == 1


def test_an_obstacle_ahead_zeroes_forward_motion_at_once_but_allows_turning_and_backing():
    g = gate(local_stop=True)
    drive(g, (0.5, 0.0), 0.0, 1.0, inside=0)
    assert g.step(1.0).velocity[0] > 0.4
    g.cloud(3, 1.0)
    g.command(0.5, 0.8, 1.0)
    blocked = g.step(1.05)
    assert blocked.velocity[0] == 0.0 and blocked.velocity[1] > 0.0
    assert blocked.reasons == (OBSTACLE,)
    g.command(-0.2, 0.0, 1.1)
    assert g.step(1.1).velocity[0] < 0.0  # backing away
    cleared = drive(g, (0.5, 0.0), 1.15, 1.0, inside=2)  # below min_points: noise
    assert not cleared[-1].reasons and cleared[-1].velocity[0] == pytest.approx(0.5)


def test_a_stale_or_missing_cloud_stops_forward_motion():
    g = gate(local_stop=True)
    assert g.step(0.0).reasons == (NO_COMMAND, NO_CLOUD)  # a blind sensor is told while idle
    assert drive(g, (0.5, 0.0), 0.0, 0.5)[-1].reasons == (NO_CLOUD,)  # none yet
    g.cloud(0, 0.5)
    assert g.step(0.6).velocity[0] > 0.0
    g.command(0.5, 0.0, 1.05)
    stale = g.step(1.05)  # cloud 0.55 s old
    assert stale.velocity[0] == 0.0 and stale.reasons == (NO_CLOUD,)


def test_bad_configs_are_refused():
    with pytest.raises(ValueError, match='max_linear'):
        VelocityLimits(0.0, 1.0, 1.0, 1.0)
    with pytest.raises(ValueError, match='command_timeout_s'):
        gate(command_timeout_s=math.nan)
    with pytest.raises(ValueError, match='min_points'):
        gate(min_points=0)


def test_footprint_counts_points_in_the_box_ahead_with_heights_above_the_floor():
    box = Footprint(
        ahead_from_m=0.3, ahead_to_m=0.8, width_m=0.5, h_min_m=0.1, h_max_m=0.6, body_height_m=0.3
    )
    points = np.array(
        [
            [0.5, 0.0, 0.0],  # inside: 0.3 m above the floor
            [0.5, 0.2, -0.15],  # inside: 0.15 m up, near the side
            [0.5, 0.0, -0.28],  # floor (0.02 m up): not an obstacle
            [0.5, 0.0, 0.4],  # 0.7 m up: passes over
            [0.5, 0.3, 0.0],  # beside the box
            [0.2, 0.0, 0.0],  # under the body, behind the box's start
            [0.9, 0.0, 0.0],  # beyond the box
            [math.nan, 0.0, 0.0],
        ]
    )
    assert box.count_inside(points) == 2
    assert box.count_inside(np.empty((0, 3))) == 0
    with pytest.raises(ValueError, match=r'\(N, 3\)'):
        box.count_inside(np.zeros((4, 2)))
    with pytest.raises(ValueError, match='h_max_m'):
        Footprint(0.3, 0.8, 0.5, 0.6, 0.1, 0.3)
    with pytest.raises(ValueError, match='ahead_from_m'):
        Footprint(0.8, 0.3, 0.5, 0.1, 0.6, 0.3)


def test_parameters_make_the_gate_and_refuse_a_loop():
    params = SafetyParameters()
    config = params.gate_config()
    assert config.limits.max_linear == 0.5 and config.limits.max_angular == 1.0
    assert not config.local_stop  # no cloud topic by default
    with pytest.raises(ValueError, match='both'):
        SafetyParameters(input_topic='cmd_vel', output_topic='cmd_vel')
