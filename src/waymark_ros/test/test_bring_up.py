# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""When the launch asks a lifecycle node again for the transition it has not begun."""

from waymark_ros.launch_support.bring_up import (
    BRING_UP_S,
    MAX_TRANSITION_RESENDS,
    RESEND_TRANSITION_S,
    bring_up_over,
    transition_to_resend,
)

WAIT = RESEND_TRANSITION_S


def test_a_configure_never_begun_is_asked_again_with_a_growing_wait():
    entered = {'started': 0.0}
    assert transition_to_resend(entered, WAIT - 1, 0) is None  # still importing, perhaps
    assert transition_to_resend(entered, WAIT, 0) == 'configure'
    assert transition_to_resend(entered, 2 * WAIT - 1, 1) is None
    assert transition_to_resend(entered, 2 * WAIT, 1) == 'configure'


def test_a_transition_under_way_is_never_asked_again():
    # memory_node loads its models while configuring: that takes as long as it takes.
    assert transition_to_resend({'started': 0.0, 'configuring': 1.0}, 10 * WAIT, 0) is None
    activating = {'started': 0.0, 'configuring': 1.0, 'inactive': 2.0, 'activating': 3.0}
    assert transition_to_resend(activating, 10 * WAIT, 0) is None


def test_an_activate_never_begun_after_configuring_is_asked_again():
    entered = {'started': 0.0, 'configuring': 1.0, 'inactive': 30.0}
    assert transition_to_resend(entered, 30.0 + WAIT - 1, 0) is None
    assert transition_to_resend(entered, 30.0 + WAIT, 0) == 'activate'


def test_looking_after_the_bring_up_ends():
    assert bring_up_over({'started': 0.0, 'active': 5.0}, 6.0, 0)
    assert bring_up_over({'started': 0.0}, 10.0, MAX_TRANSITION_RESENDS)
    assert bring_up_over({'started': 0.0}, BRING_UP_S + 1, 0)
    assert not bring_up_over({'started': 0.0, 'configuring': 1.0}, 100.0, 2)
