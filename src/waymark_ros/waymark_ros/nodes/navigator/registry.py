# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The navigator's backends, by the name its `backend` parameter takes; the first is the
default. A new backend is one module, one line here and its name in
waymark.parameters.navigator.BACKENDS (the parameter's choices)."""

from __future__ import annotations

from waymark.parameters.navigator import GOAL_TOPIC, INTERNAL, NAV2
from waymark_ros.nodes.navigator.backend import Backend
from waymark_ros.nodes.navigator.goal_topic import GoalTopicBackend
from waymark_ros.nodes.navigator.internal import InternalBackend
from waymark_ros.nodes.navigator.nav2 import Nav2Backend

BACKENDS: dict[str, type[Backend]] = {
    INTERNAL: InternalBackend,
    NAV2: Nav2Backend,
    GOAL_TOPIC: GoalTopicBackend,
}
