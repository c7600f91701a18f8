# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The QoS profiles waymark uses, in one place so publishers and subscribers match."""

from __future__ import annotations

from rclpy.qos import (
    DurabilityPolicy,
    HistoryPolicy,
    QoSProfile,
    ReliabilityPolicy,
)


def sensor_input(reliable: bool, depth: int) -> QoSProfile:
    """Camera and pose input.

    Best effort with a short queue matches every publisher (a live driver) and never
    lets a slow callback fall behind. Reliable with KEEP_ALL makes a reliable publisher
    (a bag replay) wait for the subscriber instead of overwriting what it has not read,
    so a replay at any rate loses nothing.
    """
    if reliable:
        return QoSProfile(
            history=HistoryPolicy.KEEP_ALL,
            reliability=ReliabilityPolicy.RELIABLE,
            durability=DurabilityPolicy.VOLATILE,
        )
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST,
        depth=depth,
        reliability=ReliabilityPolicy.BEST_EFFORT,
        durability=DurabilityPolicy.VOLATILE,
    )


def state_input(reliable: bool, depth: int) -> QoSProfile:
    """The robot's pose for a control loop: only the newest counts.

    Unlike sensor_input, a reliable subscription here still keeps only the last `depth`
    messages, so a busy planner never works through a backlog of old poses.
    """
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST,
        depth=depth,
        reliability=ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT,
        durability=DurabilityPolicy.VOLATILE,
    )


def keyframes(depth: int) -> QoSProfile:
    """Keyframes are few and precious: reliable, deep history."""
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST,
        depth=depth,
        reliability=ReliabilityPolicy.RELIABLE,
        durability=DurabilityPolicy.VOLATILE,
    )


def latched(depth: int = 1) -> QoSProfile:
    """Status and markers: late joiners (RViz, tests) get the last message."""
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST,
        depth=depth,
        reliability=ReliabilityPolicy.RELIABLE,
        durability=DurabilityPolicy.TRANSIENT_LOCAL,
    )


def requests(depth: int) -> QoSProfile:
    """Service requests (and action goals) that come in bursts: the services default with
    a deeper history, since a request not taken before `depth` more arrive is overwritten
    and its caller never answered."""
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST,
        depth=depth,
        reliability=ReliabilityPolicy.RELIABLE,
        durability=DurabilityPolicy.VOLATILE,
    )


# Responses a client keeps until its executor takes them: a burst of answers (many
# questions refused "busy" at once) must not overwrite one another, or a caller would
# wait for an answer that came.
RESPONSE_HISTORY_DEPTH = 100


def responses() -> QoSProfile:
    """A service client's QoS: the services default with a deeper history for bursts."""
    return requests(RESPONSE_HISTORY_DEPTH)


def tf() -> QoSProfile:
    """/tf, as tf2 publishes and listens: reliable, volatile, a deep queue for bursts."""
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST,
        depth=100,
        reliability=ReliabilityPolicy.RELIABLE,
        durability=DurabilityPolicy.VOLATILE,
    )


def tf_static() -> QoSProfile:
    """/tf_static: latched, so a late listener gets every static publisher's transforms."""
    return latched(depth=100)


def commands(depth: int = 10) -> QoSProfile:
    """Velocity commands: reliable, so the last one (a stop) is not lost; KEEP_LAST, so a
    slow reader never works through old ones. Matches the rclpy and teleop defaults."""
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST,
        depth=depth,
        reliability=ReliabilityPolicy.RELIABLE,
        durability=DurabilityPolicy.VOLATILE,
    )
