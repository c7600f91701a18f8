# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Geometry checks on synthetic worlds shared by the world tests."""

from __future__ import annotations

import numpy as np

from waymark.sim.world import World


def distance_to_walls(world: World, points: np.ndarray) -> np.ndarray:
    """Distance from each 2-D point to the nearest wall face."""
    a = np.array([w.a for w in world.walls])
    e = np.array([w.b for w in world.walls]) - a
    p = points[:, None, :]
    u = np.clip(((p - a) * e).sum(-1) / (e * e).sum(-1), 0.0, 1.0)
    return np.linalg.norm(p - (a + u[..., None] * e), axis=-1).min(axis=1)


def reachable_rooms(world: World) -> set[str]:
    """Rooms reachable from the first one through doorways."""
    reached, frontier = {world.rooms[0].name}, [world.rooms[0].name]
    while frontier:
        room = frontier.pop()
        for doorway in world.doorways:
            if room in doorway.rooms:
                new = set(doorway.rooms) - reached
                reached |= new
                frontier.extend(new)
    return reached
