# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""What a recording says about where the robot went: its occupancy map (the last
nav_msgs/OccupancyGrid on /map, when it has one) and the trajectory of its pose topic,
drawn under the evaluation's answers so a real bag's map.png shows where they fall."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from rosbags.highlevel import AnyReader

MAP_TOPIC = '/map'
OCCUPANCY_GRID = 'nav_msgs/msg/OccupancyGrid'
MAX_TRAJECTORY_POINTS = 20_000  # more do not show at a plot's resolution


@dataclass(frozen=True)
class OccupancyMap:
    cells: np.ndarray  # (rows, cols) int8: -1 unknown, 0 free .. 100 occupied; row 0 at y0
    origin: tuple[float, float]  # x, y of the corner of cell (0, 0), metres
    resolution: float  # metres per cell
    frame: str

    @property
    def extent(self) -> tuple[float, float, float, float]:
        """x_min, x_max, y_min, y_max in metres."""
        rows, cols = self.cells.shape
        x0, y0 = self.origin
        return x0, x0 + cols * self.resolution, y0, y0 + rows * self.resolution


@dataclass(frozen=True)
class BagBackground:
    occupancy: OccupancyMap | None
    trajectory: np.ndarray  # (N, 2) x, y in the pose topic's frame; may be empty


def read_background(
    bag: Path, pose_topic: str | None, max_points: int = MAX_TRAJECTORY_POINTS
) -> BagBackground:
    """The bag's map (an unrotated grid on /map only) and its poses' x, y, at most
    `max_points` of them, evenly spaced."""
    occupancy, points = None, []
    with AnyReader([Path(bag)]) as reader:
        grids = [
            c for c in reader.connections if c.topic == MAP_TOPIC and c.msgtype == OCCUPANCY_GRID
        ]
        # (messages() of no connections would read every topic)
        for connection, _, raw in reader.messages(connections=grids) if grids else ():
            occupancy = _occupancy(reader.deserialize(raw, connection.msgtype)) or occupancy
        poses = [c for c in reader.connections if c.topic == pose_topic]
        for connection, _, raw in reader.messages(connections=poses) if poses else ():
            msg = reader.deserialize(raw, connection.msgtype)
            pose = msg.pose.pose if hasattr(msg.pose, 'pose') else msg.pose
            points.append((pose.position.x, pose.position.y))
    trajectory = np.asarray(points, dtype=float).reshape(-1, 2)
    trajectory = trajectory[np.all(np.isfinite(trajectory), axis=1)]
    if len(trajectory) > max_points:
        trajectory = trajectory[np.linspace(0, len(trajectory) - 1, max_points).astype(int)]
    return BagBackground(occupancy, trajectory)


def _occupancy(msg) -> OccupancyMap | None:
    """The grid, unless its origin is rotated (drawn axis-aligned, it would mislead)."""
    q = msg.info.origin.orientation
    yaw = math.atan2(2.0 * (q.w * q.z + q.x * q.y), 1.0 - 2.0 * (q.y * q.y + q.z * q.z))
    rows, cols = int(msg.info.height), int(msg.info.width)
    if abs(yaw) > 1e-3 or rows * cols == 0 or len(msg.data) != rows * cols:
        return None
    cells = np.asarray(msg.data, dtype=np.int8).reshape(rows, cols)
    origin = (float(msg.info.origin.position.x), float(msg.info.origin.position.y))
    return OccupancyMap(cells, origin, float(msg.info.resolution), msg.header.frame_id)


def plot_extent(
    occupancy: OccupancyMap | None, points: np.ndarray, margin: float = 0.05, min_margin_m=1.0
) -> tuple[float, float, float, float] | None:
    """x_min, x_max, y_min, y_max covering the map and the points with a margin (a share of
    the larger side, at least `min_margin_m`); None with neither."""
    boxes = []
    if occupancy is not None:
        boxes.append(occupancy.extent)
    if len(points):
        boxes.append(
            (points[:, 0].min(), points[:, 0].max(), points[:, 1].min(), points[:, 1].max())
        )
    if not boxes:
        return None
    x0, x1 = min(b[0] for b in boxes), max(b[1] for b in boxes)
    y0, y1 = min(b[2] for b in boxes), max(b[3] for b in boxes)
    pad = max(min_margin_m, margin * max(x1 - x0, y1 - y0))
    return float(x0 - pad), float(x1 + pad), float(y0 - pad), float(y1 + pad)
