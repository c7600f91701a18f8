# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""When the launch asks a lifecycle node again for a transition it has not begun.

A change_state request, or its response, can be lost (DDS drops a request sent before the
service has matched the caller back), and launch_ros then waits for the response forever:
the node stays unconfigured or inactive and nothing says why. The launch watches the
node's transition events; a transition not begun `RESEND_TRANSITION_S` after it was due
(after the process started, for configure; after the node became inactive, for activate)
is asked for again, with the wait growing by that much after each resend. Asking again is
harmless: a node already past that transition refuses it. Pure Python, tested without ROS.
"""

from __future__ import annotations

from collections.abc import Mapping

# How long a transition may go unbegun before it is asked again (times the resends so far
# plus one), above a loaded machine's import of the heaviest node; how often the launch
# looks; how many times at most it asks again; how long after the start it stops looking.
RESEND_TRANSITION_S = 60.0
RESEND_CHECK_S = 5.0
MAX_TRANSITION_RESENDS = 6
BRING_UP_S = 1800.0


def bring_up_over(entered: Mapping[str, float], now: float, resends: int) -> bool:
    """Whether a bring-up needs no more looking after: active, out of resends, or older
    than BRING_UP_S. `entered` maps 'started' (the process) and each state the node entered
    ('configuring', 'inactive', 'activating', 'active') to when, in monotonic seconds."""
    begun = entered.get('started', now)
    return 'active' in entered or resends >= MAX_TRANSITION_RESENDS or now - begun > BRING_UP_S


def transition_to_resend(entered: Mapping[str, float], now: float, resends: int) -> str | None:
    """'configure' when the node has not begun configuring, 'activate' when it has been
    inactive without activating, each once it has waited long enough; None while a
    transition is under way, or the wait is not over."""
    waited = RESEND_TRANSITION_S * (resends + 1)
    if 'configuring' not in entered:
        return 'configure' if now - entered.get('started', now) >= waited else None
    stalled = 'inactive' in entered and 'activating' not in entered
    if stalled and now - entered['inactive'] >= waited:
        return 'activate'
    return None
