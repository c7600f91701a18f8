# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""A task's `Exclusions` on the Ask goal: task_node writes them, reasoner_node reads them."""

from __future__ import annotations

import math

from geometry_msgs.msg import Point

from waymark.agent.exclusions import Exclusions
from waymark_interfaces.action import Ask


def exclusions_to_goal(exclusions: Exclusions, goal: Ask.Goal) -> None:
    goal.excluded_entry_ids = list(exclusions.entry_ids)
    goal.excluded_positions = [Point(x=float(x), y=float(y)) for x, y in exclusions.positions]
    goal.exclusion_radius_m = float(exclusions.radius_m)


def exclusions_from_goal(goal: Ask.Goal) -> Exclusions:
    """The goal's exclusions; ValueError names the limit a goal breaks. The radius travels
    as float32, so it is rounded back to the metre's thousandth it was sent with."""
    radius = float(goal.exclusion_radius_m)
    return Exclusions(
        entry_ids=tuple(goal.excluded_entry_ids),
        positions=tuple((point.x, point.y) for point in goal.excluded_positions),
        radius_m=round(radius, 3) if math.isfinite(radius) else radius,
    )
