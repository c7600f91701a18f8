# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""When a simulated base zeroes its last command on silence (sim_base_node's driver models).

Pure, so that the window arithmetic is tested exactly: whether a real timer lands in a 2 ms
window depends on the scheduler, which a test cannot hold still.
"""

from __future__ import annotations

UNITREE_RESET_WINDOW_NS = 2_000_000  # the released Go1 driver zeroes only in these 2 ms


def zeroes_on_check(silent_ns: int, timeout_ns: int, window_ns: int | None) -> bool:
    """Whether a zeroing check that runs `silent_ns` after the last command stops the base.

    With a `window_ns` (the released unitree_ros driver) only a check inside
    [timeout, timeout + window] zeroes; without one (the patched driver) any check from the
    timeout on does.
    """
    if silent_ns < timeout_ns:
        return False
    return window_ns is None or silent_ns <= timeout_ns + window_ns
