# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Where several bearings to one thing meet: least squares over 2-D rays."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from waymark.localisation.bearing import Ray
from waymark.localisation.params import LocalisationParams


@dataclass(frozen=True)
class Intersection:
    x: float
    y: float
    residual_m: float  # RMS perpendicular miss of the rays used
    sigma_m: float  # 1-sigma along the worst axis of the solution's covariance
    rays: tuple[Ray, ...]  # those used, the first one given first


def triangulate(rays: Sequence[Ray], params: LocalisationParams) -> Intersection | None:
    """The point nearest (least squares) to all rays, or None when the rays cannot fix it.

    Rays are dropped that point away from the solution (it lies behind or too near their
    camera); the first ray is the one that matched and must stay. None when fewer than two
    rays are left, their cameras are closer than min_baseline_m or their directions differ
    by less than min_ray_angle_deg (near-parallel rays fix nothing along them), the point
    is beyond max_range_m of the first camera, or the rays miss it by more than
    max_residual_m RMS. The uncertainty combines the residual with the bearing noise and
    the geometry, so it grows with disagreement and with narrow angles.
    """
    used = list(rays[: params.max_rays])
    while len(used) >= 2 and _spread_enough(used, params):
        point, normals, offsets = _solve(used)
        ahead = [
            ray
            for ray in used
            if np.dot(ray.direction, point - (ray.x, ray.y)) >= params.min_range_m
        ]
        if len(ahead) == len(used):
            return _checked(used, point, normals, offsets, params)
        if used[0] not in ahead:
            return None
        used = ahead
    return None


def _spread_enough(rays: list[Ray], params: LocalisationParams) -> bool:
    origins = np.array([(ray.x, ray.y) for ray in rays])
    baseline = max(np.linalg.norm(a - b) for a, b in itertools.combinations(origins, 2))
    widest = max(_angle_between(a.angle, b.angle) for a, b in itertools.combinations(rays, 2))
    return baseline >= params.min_baseline_m and widest >= math.radians(params.min_ray_angle_deg)


def _angle_between(a: float, b: float) -> float:
    """Angle between two lines' directions, in [0, pi/2] (a ray and its reverse are one line)."""
    return abs(math.remainder(a - b, math.pi))


def _solve(rays: list[Ray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Least-squares point of the lines n . p = n . origin (n: each ray's normal)."""
    normals = np.array([(-math.sin(ray.angle), math.cos(ray.angle)) for ray in rays])
    offsets = np.einsum('ij,ij->i', normals, [(ray.x, ray.y) for ray in rays])
    point, *_ = np.linalg.lstsq(normals, offsets, rcond=None)
    return point, normals, offsets


def _checked(
    rays: list[Ray],
    point: np.ndarray,
    normals: np.ndarray,
    offsets: np.ndarray,
    params: LocalisationParams,
) -> Intersection | None:
    ranges = [math.hypot(point[0] - ray.x, point[1] - ray.y) for ray in rays]
    if ranges[0] > params.max_range_m:
        return None
    misses = normals @ point - offsets
    residual = float(np.sqrt(np.mean(misses**2)))
    if residual > params.max_residual_m:
        return None
    # Per-ray perpendicular noise: the larger of what the misses show (unbiased once the
    # two unknowns are taken out) and what the bearing noise gives at the rays' ranges.
    dof = len(rays) - 2
    observed = float(np.sum(misses**2)) / dof if dof else 0.0
    bearing = (np.mean(ranges) * math.radians(params.bearing_sigma_deg)) ** 2
    covariance = max(observed, bearing) * np.linalg.inv(normals.T @ normals)
    sigma = math.sqrt(float(np.linalg.eigvalsh(covariance).max()))
    if not math.isfinite(sigma):
        return None
    return Intersection(float(point[0]), float(point[1]), residual, sigma, tuple(rays))
