# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Named places handed to memory_node's `store_place`, so memory can find them by name and
by image and RViz shows them.

The place book is where a place is decided; memory keeps a copy for search. A copy that
cannot be made (memory down, a refused request) is said, and the mark still stands: the
next mark of that name stores it again.
"""

from __future__ import annotations

from collections.abc import Sequence

from rclpy.node import Node
from sensor_msgs.msg import CompressedImage

from waymark.geometry import Pose
from waymark.tasks.stop_views import StopView
from waymark_interfaces.srv import StorePlace
from waymark_ros.ros import qos
from waymark_ros.ros.conversions import pose_stamped
from waymark_ros.ros.service_call import NO_SERVICE, call_within

_PNG = b'\x89PNG\r\n\x1a\n'


class PlaceMemory:
    """A bounded client of `store_place`: every call waits at most `wait_s`."""

    def __init__(self, node: Node, service: str, wait_s: float, callback_group=None) -> None:
        self._client = node.create_client(
            StorePlace, service, qos_profile=qos.requests(10), callback_group=callback_group
        )
        self._service = service
        self._wait_s = wait_s

    def store(
        self,
        name: str,
        pose: Pose,
        frame: str,
        epoch: int,
        stamp_ns: int,
        views: Sequence[StopView],
    ) -> str:
        """'' when memory stored the place, else why not."""
        request = StorePlace.Request(name=name, map_epoch=epoch)
        request.pose = pose_stamped(pose, frame, stamp_ns)
        for view in views:
            fmt = 'png' if view.image.startswith(_PNG) else 'jpeg'
            request.views.append(CompressedImage(format=fmt, data=view.image))
            request.view_yaws.append(view.heading)
        return self._call(request)

    def _call(self, request: StorePlace.Request) -> str:
        response, missing = call_within(self._client, request, self._wait_s)
        if missing == NO_SERVICE:
            return f'no {self._service} service within {self._wait_s:.1f} s'
        if response is None:
            return f'{self._service} did not answer within {self._wait_s:.1f} s'
        return '' if response.success else response.message or 'refused without a reason'
