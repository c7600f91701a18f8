# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Landmarks (signs and objects) with stable ids, and which of them a camera pose sees.

The evaluation scores answers against these ids, so an id names the same landmark in the
world JSON, the landmark list and every image's `visible` list of the ground truth.
Visibility is geometric, as in `visibility.sees`: inside the horizontal (and optionally
vertical) field of view, within range, with no wall across the line of sight; signs count
only from their front side. It is vectorised because a long bag asks it for every image.
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass

import numpy as np

from waymark.geometry import Pose
from waymark.sim.world import World

SIGN_RANGE_M = 8.0
OBJECT_RANGE_M = 6.0
SIGN_STOP_SHORT_M = 0.1  # the line of sight ends this far before a sign, off its own wall


@dataclass(frozen=True)
class Landmark:
    """Something a question can be about; `color` is None for signs."""

    id: str  # 'sign-<index in world.signs>' or 'obj-<index in world.objects>'
    kind: str  # 'sign' or 'object'
    label: str  # the sign's text, or '<color> <category>'
    category: str  # 'sign', or the object class
    color: str | None
    room: str
    position: tuple[float, float, float]

    def to_dict(self) -> dict:
        data = asdict(self)
        data['position'] = [round(float(v), 6) for v in self.position]
        return data


@functools.lru_cache(maxsize=8)
def landmarks(world: World) -> tuple[Landmark, ...]:
    """Every sign, then every object, in world order."""
    signs = tuple(
        Landmark(f'sign-{i}', 'sign', s.text, 'sign', None, s.room, s.position)
        for i, s in enumerate(world.signs)
    )
    objects = tuple(
        Landmark(
            f'obj-{i}',
            'object',
            o.label,
            o.category,
            o.color,
            o.room,
            (o.position[0], o.position[1], 0.5 * o.height),
        )
        for i, o in enumerate(world.objects)
    )
    return signs + objects


@dataclass(frozen=True)
class _Index:
    ids: tuple[str, ...]
    xy: np.ndarray  # (L, 2)
    z: np.ndarray  # (L,)
    is_sign: np.ndarray  # (L,) bool
    normal: np.ndarray  # (L, 2) sign normals; zero for objects
    wall_a: np.ndarray  # (N, 2)
    wall_b: np.ndarray  # (N, 2)


@functools.lru_cache(maxsize=8)
def _index(world: World) -> _Index:
    marks = landmarks(world)
    normals = [s.normal for s in world.signs] + [(0.0, 0.0)] * len(world.objects)
    return _Index(
        ids=tuple(m.id for m in marks),
        xy=np.array([m.position[:2] for m in marks], dtype=float).reshape(-1, 2),
        z=np.array([m.position[2] for m in marks], dtype=float),
        is_sign=np.array([m.kind == 'sign' for m in marks], dtype=bool),
        normal=np.array(normals, dtype=float).reshape(-1, 2),
        wall_a=np.array([w.a for w in world.walls], dtype=float).reshape(-1, 2),
        wall_b=np.array([w.b for w in world.walls], dtype=float).reshape(-1, 2),
    )


def visible_landmarks(
    world: World,
    camera_pose: Pose,
    hfov_deg: float,
    *,
    sign_range_m: float = SIGN_RANGE_M,
    object_range_m: float = OBJECT_RANGE_M,
    vfov_deg: float | None = None,
) -> list[str]:
    """Ids of the landmarks `camera_pose` sees, in landmark order."""
    index = _index(world)
    if not index.ids:
        return []
    eye = np.asarray(camera_pose.position[:2], dtype=float)
    offset = index.xy - eye
    distance = np.linalg.norm(offset, axis=1)
    yaw = camera_pose.yaw
    bearing = np.arctan2(offset[:, 1], offset[:, 0]) - yaw
    bearing = np.abs(np.arctan2(np.sin(bearing), np.cos(bearing)))
    in_range = np.where(index.is_sign, distance <= sign_range_m, distance <= object_range_m)
    keep = in_range & (distance > 1e-6) & (bearing <= math.radians(hfov_deg) / 2)
    keep &= ~index.is_sign | ((index.normal * -offset).sum(axis=1) > 0.0)
    if vfov_deg is not None:
        forward = distance * np.cos(bearing)  # depth along the optical axis
        with np.errstate(divide='ignore', invalid='ignore'):
            elevation = np.arctan2(index.z - camera_pose.position[2], forward)
        keep &= np.abs(elevation) <= math.radians(vfov_deg) / 2
    candidates = np.nonzero(keep)[0]
    if candidates.size == 0:
        return []
    shorten = np.where(index.is_sign[candidates], SIGN_STOP_SHORT_M, 0.0)
    ends = eye + offset[candidates] * (1.0 - shorten / distance[candidates])[:, None]
    blocked = _any_crossing(eye, ends, index.wall_a, index.wall_b)
    return [index.ids[i] for i in candidates[~blocked]]


def _any_crossing(eye: np.ndarray, ends: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(K,) whether the segment eye→ends[k] properly crosses any wall segment a→b."""
    if len(a) == 0:
        return np.zeros(len(ends), dtype=bool)

    def side(o, u, v):
        return (u[..., 0] - o[..., 0]) * (v[..., 1] - o[..., 1]) - (u[..., 1] - o[..., 1]) * (
            v[..., 0] - o[..., 0]
        )

    p = eye[None, None, :]
    q = ends[:, None, :]
    wa, wb = a[None, :, :], b[None, :, :]
    crosses = (side(p, q, wa) * side(p, q, wb) < 0) & (side(wa, wb, p) * side(wa, wb, q) < 0)
    return crosses.any(axis=1)
