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
        return ingest_settled(client.status['capture'], client.status['memory'], images)

    spin_until(executor, done, timeout_s, 'memory to ingest the replay')


# memory_node receipts of a keyframe it had already: sent again because the acknowledgement
# came late or was lost (a busy machine), or bounced off a full queue unacknowledged.
_REPEATED_RECEIPTS = (
    'keyframes_duplicate',
    'keyframes_resent_while_journaled',
    'keyframes_refused',
)
_SETTLED_RECEIPTS = (
    'keyframes_ingested',
    'keyframes_undecodable',
    'keyframes_rejected',
    'keyframes_failed',
)


def ingest_settled(capture: dict, memory: dict, images: int) -> bool:
    """Whether the status counts show every one of `images` placed by capture_node and
    every keyframe it made received once by memory_node and settled there."""
    received = memory.get('keyframes_received', 0)
    repeats = sum(memory.get(name, 0) for name in _REPEATED_RECEIPTS)
    return (
        capture.get('images_received') == images
        and capture.get('images_pending') == 0
        and capture.get('outbox_pending') == 0
        and memory.get('queued') == 0
        and memory.get('frames', -1) >= 0
        and received - repeats == capture.get('keyframes_published')
        and received == repeats + sum(memory.get(name, 0) for name in _SETTLED_RECEIPTS)
    )
