# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Where the robot may stand, from the latest occupancy grid: what answers' goals are
checked against, so that a goal near a target is a place the navigator can reach.

The grid is inflated by the robot's radius with the navigator's own code, unknown space
counted as an obstacle, so a point is free only where the navigator would plan to. Before
the first map every point is not free. A map in another frame than the map frame, or
one that cannot be read, is refused with an error and the previous one kept; `refusals`
counts them and `last_refusal` says why the last one was.
"""

from __future__ import annotations

import threading

from nav_msgs.msg import OccupancyGrid
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from waymark.navigation.grid import TraversabilityGrid, inflate
from waymark_ros.ros.navigation_msgs import occupancy_map_from_msg


class FreeSpace:
    """Subscribed to `topic` while it exists; `is_free` may be called from any thread."""

    def __init__(
        self,
        node: Node,
        topic: str,
        map_frame: str,
        robot_radius_m: float,
        transient_local: bool = True,
    ) -> None:
        self._logger = node.get_logger()
        self._map_frame = map_frame
        self._robot_radius_m = robot_radius_m
        self._lock = threading.Lock()
        self._grid: TraversabilityGrid | None = None
        self.refusals = 0
        self.last_refusal = ''
        durability = (
            DurabilityPolicy.TRANSIENT_LOCAL if transient_local else DurabilityPolicy.VOLATILE
        )
        self.topic = topic
        self._subscription = node.create_subscription(
            OccupancyGrid,
            topic,
            self._on_map,
            QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=durability),
            callback_group=MutuallyExclusiveCallbackGroup(),
        )

    @property
    def has_map(self) -> bool:
        with self._lock:
            return self._grid is not None

    def is_free(self, x: float, y: float) -> bool:
        """Whether the robot's centre may stand at (x, y) of the map frame: a known free
        cell clear of obstacles and unknown space by the robot's radius."""
        with self._lock:
            grid = self._grid
        if grid is None or not grid.geometry.contains(x, y):
            return False
        return grid.is_traversable(*grid.geometry.world_to_cell(x, y))

    def _on_map(self, msg: OccupancyGrid) -> None:
        try:
            occupancy = occupancy_map_from_msg(msg)
        except ValueError as error:
            self._refuse(f'map on {self.topic} refused: {error}')
            return
        if occupancy.frame_id != self._map_frame:
            self._refuse(
                f'map on {self.topic} in frame {occupancy.frame_id!r}, not '
                f'{self._map_frame!r}: ignored'
            )
            return
        grid = inflate(occupancy, self._robot_radius_m, unknown_is_obstacle=True)
        with self._lock:
            self._grid = grid
        g = grid.geometry
        self._logger.info(
            f'free space from {self.topic}: {g.width}x{g.height} cells of {g.resolution:g} m, '
            f'{int(grid.traversable.sum())} free for a robot of radius {self._robot_radius_m:g} m'
        )

    def _refuse(self, why: str) -> None:
        with self._lock:
            self.refusals += 1
            self.last_refusal = why
        self._logger.error(why)
