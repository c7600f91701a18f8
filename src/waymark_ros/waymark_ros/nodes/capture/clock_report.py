# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""capture_node's report of the image/pose clock check (waymark.memory.ingest.clocks).

Clocks that disagree are said once on the console, naming both topics, the offset and
the fix, and once more when they agree again; /diagnostics carries a status named
"<node>: clocks" at every publication, ERROR with the offset while it lasts.
"""

from __future__ import annotations

from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
from rclpy.node import Node

from waymark.memory.ingest.clocks import ClockCheck

FIX = (
    'synchronise them: PTP (IEEE 1588) for the Livox MID-360, chrony between the '
    'computers; see docs/clocks.md'
)


class ClockReport:
    def __init__(self, node: Node, image_topic: str, pose_source: str) -> None:
        self._node = node
        self._topics = f'images on {image_topic} and poses on {pose_source}'
        self._reported: bool | None = None  # the verdict last said on the console

    def check(self, clocks: ClockCheck) -> DiagnosticStatus:
        """Say a changed verdict on the console; the status for /diagnostics."""
        images, poses = clocks.lateness()
        values = {
            'offset_s (image minus pose)': clocks.offset_s,
            'max_offset_s': clocks.config.max_offset_s,
            'image_lateness_s': images.median_s if images else None,
            'pose_lateness_s': poses.median_s if poses else None,
        }
        status = DiagnosticStatus(
            name=f'{self._node.get_name()}: clocks',
            hardware_id=self._topics,
            values=[
                KeyValue(key=key, value='' if value is None else f'{value:.3f}')
                for key, value in values.items()
            ],
        )
        offset, limit = clocks.offset_s, clocks.config.max_offset_s
        if not clocks.enabled:
            status.level, status.message = DiagnosticStatus.OK, 'not checked (clock.max_offset_s 0)'
        elif clocks.disagree is None:
            status.level = DiagnosticStatus.OK
            status.message = 'not measured yet: needs both streams, received as stamped'
        elif clocks.disagree:
            status.level = DiagnosticStatus.ERROR
            status.message = (
                f'image and pose clocks differ by {offset:+.3f} s (more than '
                f'clock.max_offset_s {limit:g} s): images get no pose; {FIX}'
            )
        else:
            status.level = DiagnosticStatus.OK
            status.message = f'image and pose clocks agree ({offset:+.3f} s)'
        if clocks.disagree is not None and clocks.disagree != self._reported:
            logger = self._node.get_logger()
            if clocks.disagree:
                logger.warning(
                    f'the clocks of {self._topics} differ by {offset:+.3f} s (image minus '
                    f'pose; more than clock.max_offset_s {limit:g} s): no keyframe gets a '
                    f'pose until they agree; {FIX}'
                )
            elif self._reported:
                logger.info(f'the clocks of {self._topics} agree again ({offset:+.3f} s)')
            self._reported = clocks.disagree
        return status
