# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""A replay's side of a running stack: the nodes' status, and the map it publishes.

Questions and drives go through the client API (waymark_ros.client)."""

from __future__ import annotations

import json
import time

from nav_msgs.msg import OccupancyGrid
from rclpy.node import Node
from std_msgs.msg import String

from waymark_ros.ros import qos


class StackClient(Node):
    """Status subscriptions, and a latched map publisher (a simulation's map stands in for
    the SLAM one)."""

    def __init__(self, name: str = 'waymark_client') -> None:
        super().__init__(name)
        self.status: dict[str, dict] = {'capture': {}, 'memory': {}}
        for source in self.status:
            self.create_subscription(
                String,
                f'{source}/stats',
                lambda msg, s=source: self._on_status(s, msg),
                qos.latched(),
            )
        self.map = self.create_publisher(OccupancyGrid, '/map', qos.latched())

    def _on_status(self, name: str, msg: String) -> None:
        self.status[name] = json.loads(msg.data)


def spin_until(executor, predicate, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f'timed out after {timeout_s:.0f} s waiting for {what}')
        executor.spin_once(timeout_sec=0.1)


def wait_for_ingest(executor, client: StackClient, images: int, timeout_s: float) -> None:
    """Until every image was placed, every keyframe is in memory and capture_node holds
    none unacknowledged (its resends would otherwise still be counted as received)."""

    def done() -> bool:
        capture, memory = client.status['capture'], client.status['memory']
        return (
            capture.get('images_received') == images
            and capture.get('images_pending') == 0
            and capture.get('outbox_pending') == 0
            and memory.get('queued') == 0
            and memory.get('keyframes_received') == capture.get('keyframes_published')
            and memory.get('frames', -1) >= 0
            and memory.get('keyframes_received', 0)
            == memory.get('keyframes_ingested', 0)
            + memory.get('keyframes_undecodable', 0)
            + memory.get('keyframes_rejected', 0)
            + memory.get('keyframes_failed', 0)
        )

    spin_until(executor, done, timeout_s, 'memory to ingest the replay')
