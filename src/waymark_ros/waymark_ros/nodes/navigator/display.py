# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""What the navigator shows in RViz: the goal as asked and as checked, its path, and the
frontiers of a running exploration."""

from __future__ import annotations

import numpy as np
from nav_msgs.msg import Path
from rclpy.node import Node
from visualization_msgs.msg import MarkerArray

from waymark.navigation.frontiers import Frontier
from waymark_ros.nodes.navigator.backend import CheckedGoal
from waymark_ros.ros import qos
from waymark_ros.ros.navigation_msgs import navigation_markers, path_msg


class Display:
    def __init__(self, node: Node, map_frame: str, robot_radius_m: float) -> None:
        self._node = node
        self._frame = map_frame
        self._radius = robot_radius_m
        self._plan = node.create_publisher(Path, 'plan', qos.latched())
        self._markers = node.create_publisher(MarkerArray, 'navigation_markers', qos.latched())
        self._frontiers: tuple[tuple[Frontier, ...], Frontier | None] = ((), None)

    def show(self, goal: CheckedGoal, waypoints: np.ndarray | None) -> None:
        """Publish the goal, and its path when the navigator planned one."""
        stamp = self._node.get_clock().now().to_msg()
        position = goal.target.pose.position
        if waypoints is not None:
            self._plan.publish(path_msg(waypoints, self._frame, stamp))
        self._markers.publish(
            navigation_markers(
                self._frame,
                stamp,
                goal=(position.x, position.y),
                snapped_goal=(goal.check.x, goal.check.y),
                path=waypoints,
                frontiers=self._frontiers[0],
                chosen_frontier=self._frontiers[1],
                robot_radius_m=self._radius,
            )
        )

    def show_frontiers(self, frontiers: tuple[Frontier, ...], chosen: Frontier | None) -> None:
        """Frontiers to show with the goals that follow; none once exploration ends."""
        self._frontiers = (frontiers, chosen)
