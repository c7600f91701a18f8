# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The driver models' zeroing arithmetic, exactly (sim_base_node runs it on a timer)."""

import pytest

from waymark.sim.driver import UNITREE_RESET_WINDOW_NS as WINDOW
from waymark.sim.driver import zeroes_on_check

TIMEOUT_NS = 400_000_000


@pytest.mark.parametrize('window_ns', [WINDOW, None])
def test_no_driver_zeroes_before_its_timeout(window_ns):
    assert not zeroes_on_check(TIMEOUT_NS - 1, TIMEOUT_NS, window_ns)


@pytest.mark.parametrize('late_ns', [0, 1_000_000, WINDOW])
def test_the_released_driver_zeroes_inside_its_window(late_ns):
    assert zeroes_on_check(TIMEOUT_NS + late_ns, TIMEOUT_NS, WINDOW)


@pytest.mark.parametrize('silent_ns', [TIMEOUT_NS + WINDOW + 1, 10 * TIMEOUT_NS])
def test_the_released_driver_keeps_the_command_once_its_window_passed(silent_ns):
    assert not zeroes_on_check(silent_ns, TIMEOUT_NS, WINDOW)


@pytest.mark.parametrize('silent_ns', [TIMEOUT_NS, TIMEOUT_NS + WINDOW + 1, 10**12])
def test_the_patched_driver_zeroes_at_any_check_from_its_timeout(silent_ns):
    assert zeroes_on_check(silent_ns, TIMEOUT_NS, None)
