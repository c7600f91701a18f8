# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""RViz markers of an answer: where the thing is, where it sends the robot, and the
evidence it cites.

A pure function of the Answer message, so it is tested without DDS. The array starts with
a DELETEALL, so the markers of the previous answer go.
"""

from __future__ import annotations

from geometry_msgs.msg import Point
from std_msgs.msg import ColorRGBA, Header
from visualization_msgs.msg import Marker, MarkerArray

from waymark.localisation.estimate import BEARING, DEPTH, ROBOT, TRIANGULATED, VIEWPOINT
from waymark_interfaces.msg import Answer
from waymark_ros.ros.conversions import ns_to_stamp

_LABEL_CHARS = 60
# A target's colour says how it was found: green when ranged, grey for a bare viewpoint,
# blue for the robot's own pose.
METHOD_COLOURS = {
    ROBOT: ColorRGBA(r=0.2, g=0.4, b=1.0, a=1.0),
    DEPTH: ColorRGBA(r=0.1, g=0.9, b=0.2, a=1.0),
    TRIANGULATED: ColorRGBA(r=0.1, g=0.8, b=0.9, a=1.0),
    BEARING: ColorRGBA(r=1.0, g=0.8, b=0.1, a=1.0),
    VIEWPOINT: ColorRGBA(r=0.6, g=0.6, b=0.6, a=1.0),
}
_UNKNOWN_METHOD = ColorRGBA(r=1.0, g=0.2, b=0.2, a=1.0)
_MIN_DISC_M = 0.05  # a zero sigma still draws a visible disc
_DISC_HEIGHT_M = 0.04
_DISC_ALPHA = 0.35
_POINT_M = 0.15


def answer_markers(answer: Answer, frame_id: str, stamp_ns: int) -> MarkerArray:
    """The goal as an arrow under the answer's text; the target as a disc of radius sigma
    coloured by how it was found, with a point at its centre, a label with the method and
    sigma, and a line from the goal to it; and each piece of evidence with a position as
    a sphere labelled with its id, score and view (sized by rank, best first)."""
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
    if answer.has_target:
        markers += _target_markers(answer, header)
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


def _target_markers(answer: Answer, header: Header) -> list[Marker]:
    where = answer.target_position.point
    colour = METHOD_COLOURS.get(answer.target_method, _UNKNOWN_METHOD)
    disc = _marker(header, 'target', 0, Marker.CYLINDER)
    disc.pose.position = where
    disc.scale.x = disc.scale.y = max(2.0 * answer.target_sigma_m, _MIN_DISC_M)
    disc.scale.z = _DISC_HEIGHT_M
    disc.color = ColorRGBA(r=colour.r, g=colour.g, b=colour.b, a=_DISC_ALPHA)
    point = _marker(header, 'target', 1, Marker.SPHERE)
    point.pose.position = where
    point.scale.x = point.scale.y = point.scale.z = _POINT_M
    point.color = colour
    label = _marker(header, 'target', 2, Marker.TEXT_VIEW_FACING)
    label.pose.position = Point(x=where.x, y=where.y, z=where.z + 0.5)
    label.scale.z = 0.2
    label.color = ColorRGBA(r=1.0, g=1.0, b=1.0, a=1.0)
    label.text = _clip(f'target: {answer.target_method} +/- {answer.target_sigma_m:.2f} m')
    markers = [disc, point, label]
    if answer.has_goal:
        line = _marker(header, 'target', 3, Marker.LINE_STRIP)
        line.points = [answer.goal.pose.position, where]
        line.scale.x = 0.03
        line.color = colour
        markers.append(line)
    return markers


def _marker(header: Header, namespace: str, marker_id: int, kind: int) -> Marker:
    marker = Marker(header=header, ns=namespace, id=marker_id, type=kind, action=Marker.ADD)
    marker.pose.orientation.w = 1.0
    return marker


def _clip(text: str) -> str:
    return text if len(text) <= _LABEL_CHARS else text[: _LABEL_CHARS - 3] + '...'
