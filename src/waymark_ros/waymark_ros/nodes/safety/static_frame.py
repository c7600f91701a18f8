# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Points from a sensor's frame into a body frame, by a static transform from TF.

A depth camera publishes its cloud in its optical frame (z forward, y down: realsense-ros's
`camera_depth_optical_frame`); safety_node's local stop needs a level body frame. The
camera is bolted on, so the transform between the two is static: it is looked up once, in
a background thread so that the node's timers (its watchdog) never wait on TF, and every
cloud is moved by it. Until it is there, or when it never comes, `apply` refuses with the
reason, and the caller treats the cloud as missing (fail safe).
"""

from __future__ import annotations

import threading

import numpy as np
from rclpy.node import Node

from waymark.geometry import InvalidPoseError, Pose
from waymark_ros.ros.tf_once import lookup_once


class StaticFrame:
    def __init__(self, node: Node, target: str, source: str, timeout_s: float) -> None:
        self.target, self.source = target, source
        self._logger = node.get_logger()
        self._rotation: np.ndarray | None = None  # (3, 3), source -> target
        self._translation: np.ndarray | None = None
        self._failure = ''
        self._thread = threading.Thread(
            target=self._look_up, args=(node, timeout_s), name='static-frame', daemon=True
        )
        self._thread.start()

    def _look_up(self, node: Node, timeout_s: float) -> None:
        try:
            t = lookup_once(node, self.target, self.source, timeout_s)
            pose = Pose.checked(
                (t.translation.x, t.translation.y, t.translation.z),
                (t.rotation.x, t.rotation.y, t.rotation.z, t.rotation.w),
            )
        except ImportError:
            self._failure = (
                'needs the tf2_ros Python package (it comes with a ROS 2 install, not the PyPI '
                'wheels)'
            )
        except (TimeoutError, InvalidPoseError) as error:
            self._failure = f'{error} (is the robot description running?)'
        except Exception as error:  # any other failure: said, and clouds stay refused
            self._failure = f'lookup failed: {error!r}'
        else:
            self._translation = np.asarray(pose.position)
            self._rotation = pose.rotation.as_matrix()
            self._logger.info(f'clouds in {self.source} moved into {self.target} by TF')
            return
        self._logger.error(f'no transform {self.target} -> {self.source}: {self._failure}')

    def apply(self, points: np.ndarray) -> np.ndarray:
        """(N, 3) points in `source` expressed in `target`; ValueError while there is no
        transform."""
        rotation, translation = self._rotation, self._translation
        if rotation is None or translation is None:
            why = self._failure or 'still looking it up'
            raise ValueError(f'cloud in {self.source!r}: no transform into {self.target!r}, {why}')
        return np.asarray(points, dtype=float) @ rotation.T + translation
