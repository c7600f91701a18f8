# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""RViz markers of an answer: where it sends the robot and the evidence it cites.

A pure function of the Answer message, so it is tested without DDS. The array starts with
a DELETEALL, so the markers of the previous answer go.
"""

from __future__ import annotations

from std_msgs.msg import ColorRGBA, Header
from visualization_msgs.msg import Marker, MarkerArray

from waymark_interfaces.msg import Answer
from waymark_ros.ros.conversions import ns_to_stamp

_LABEL_CHARS = 60


def answer_markers(answer: Answer, frame_id: str, stamp_ns: int) -> MarkerArray:
    """The goal as an arrow under the answer's text, and each piece of evidence with a
    position as a sphere labelled with its id, score and view (sized by rank, best
    first)."""
    header = Header(frame_id=frame_id, stamp=ns_to_stamp(stamp_ns))
    placed = [hit for hit in answer.evidence if hit.pose_valid]
    markers = [Marker(header=header, action=Marker.DELETEALL)]
    if answer.has_goal:
        arrow = _marker(header, 'goal', 0, Marker.ARROW)
        arrow.pose = answer.goal.pose
        arrow.scale.x, arrow.scale.y, arrow.scale.z = 0.8, 0.12, 0.12
        arrow.color = ColorRGBA(r=1.0, g=0.4, b=1.0, a=1.0)
        label = _marker(header, 'goal', 1, Marker.TEXT_VIEW_FACING)
        label.pose.position.x = answer.goal.pose.position.x
        label.pose.position.y = answer.goal.pose.position.y
        label.pose.position.z = answer.goal.pose.position.z + 0.8
        label.scale.z = 0.25
        label.color = ColorRGBA(r=1.0, g=1.0, b=1.0, a=1.0)
        label.text = _clip(answer.text or 'goal')
        markers += [arrow, label]
    for rank, hit in enumerate(placed):
        fraction = rank / max(1, len(placed) - 1)
        sphere = _marker(header, 'evidence', rank, Marker.SPHERE)
        sphere.pose.position = hit.pose.pose.position
        size = 0.5 - 0.25 * fraction
        sphere.scale.x = sphere.scale.y = sphere.scale.z = size
        sphere.color = ColorRGBA(r=1.0, g=0.85 - 0.5 * fraction, b=0.1, a=0.9)
        label = _marker(header, 'evidence_labels', rank, Marker.TEXT_VIEW_FACING)
        label.pose.position.x = hit.pose.pose.position.x
        label.pose.position.y = hit.pose.pose.position.y
        label.pose.position.z = hit.pose.pose.position.z + 0.5
        label.scale.z = 0.2
        label.color = ColorRGBA(r=1.0, g=1.0, b=1.0, a=1.0)
        label.text = _clip(f'[{hit.id}] {hit.score:.2f} {hit.view}')
        markers += [sphere, label]
    return MarkerArray(markers=markers)


def _marker(header: Header, namespace: str, marker_id: int, kind: int) -> Marker:
    marker = Marker(header=header, ns=namespace, id=marker_id, type=kind, action=Marker.ADD)
    marker.pose.orientation.w = 1.0
    return marker


def _clip(text: str) -> str:
    return text if len(text) <= _LABEL_CHARS else text[: _LABEL_CHARS - 3] + '...'
