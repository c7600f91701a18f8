# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""RViz markers of what memory holds and of the last search's hits.

Pure functions over core records, so they are tested without DDS. Each array starts with a
DELETEALL: the arrays are republished whole, and without it markers of records that were
forgotten (or hits of an older query) would stay on screen. RViz applies DELETEALL to the
whole display, so memory and hits go on separate topics.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import count

from builtin_interfaces.msg import Time
from geometry_msgs.msg import Point, Quaternion
from std_msgs.msg import ColorRGBA, Header
from visualization_msgs.msg import Marker, MarkerArray

from waymark.geometry import quaternion_from_yaw
from waymark.memory.entries import FRAME, PLACE, SEGMENT, FrameRecord, Hit
from waymark.memory.places import name_and_room

# Time ramp of keyframes: old blue -> new orange. Red rises and blue falls monotonically,
# so the order stays readable for colour-blind viewers too.
_OLD = (0.15, 0.35, 1.0)
_NEW = (1.0, 0.55, 0.0)
_LINE = ColorRGBA(r=0.8, g=0.8, b=0.8, a=0.6)
_LABEL = ColorRGBA(r=1.0, g=1.0, b=1.0, a=1.0)
_BEST = (1.0, 0.85, 0.1)
_WORST = (0.75, 0.2, 0.2)
_PLACE = ColorRGBA(r=0.2, g=0.85, b=0.4, a=0.9)
_LABEL_CHARS = 60


def memory_markers(
    records: Sequence[FrameRecord],
    frame_id: str,
    stamp: Time,
    *,
    max_points: int = 5000,
    max_labels: int = 100,
) -> MarkerArray:
    """Trajectories, keyframes coloured by age, text labels and segments of `records`,
    and each named place (a place record's row 0) as a pin with its name.

    Frames with pose_valid=false are not drawn and break the trajectory, as do changes of
    session or map epoch: a line across them would join points of unrelated maps. Beyond
    `max_points` frames (and, separately, segments), an even subsample in time is drawn,
    which keeps RViz responsive on a long memory. The `max_labels` newest texts are shown.
    """
    header = Header(frame_id=frame_id, stamp=stamp)
    frames = sorted((r for r in records if r.kind == FRAME), key=_time_order)
    drawn = _subsample([r for r in frames if r.pose_valid], max_points)
    segments = _subsample(
        sorted((r for r in records if r.kind == SEGMENT and r.pose_valid), key=_time_order),
        max_points,
    )
    colour = _time_ramp(drawn + segments)
    markers = [_delete_all(header, '')]

    kept = {id(r) for r in drawn}
    line_ids = count()
    for run in _runs(frames):
        points = [_point(r) for r in run if id(r) in kept]
        if len(points) >= 2:
            line = _marker(header, 'trajectory', next(line_ids), Marker.LINE_STRIP)
            line.scale.x = 0.05
            line.color = _LINE
            line.points = points
            markers.append(line)

    for namespace, kind, scale, group in (
        ('keyframes', Marker.SPHERE_LIST, 0.15, drawn),
        ('segments', Marker.CUBE_LIST, 0.3, segments),
    ):
        for marker_id, members in enumerate(_by_map(group)):
            cloud = _marker(header, namespace, marker_id, kind)
            cloud.scale.x = cloud.scale.y = cloud.scale.z = scale
            cloud.color.a = 1.0  # RViz multiplies the per-point colours by this
            cloud.points = [_point(r) for r in members]
            cloud.colors = [colour(r) for r in members]
            markers.append(cloud)

    texts = [r for r in frames if r.pose_valid and r.text][-max_labels:] if max_labels > 0 else []
    for marker_id, record in enumerate(texts):
        markers.append(_text(header, 'text', marker_id, _point(record, 0.4), record.text))
    places = sorted((r for r in records if r.kind == PLACE and r.index == 0), key=_time_order)
    for marker_id, record in enumerate(places):
        pin = _marker(header, 'places', marker_id, Marker.CYLINDER)
        pin.pose.position = _point(record, 0.25)
        pin.scale.x = pin.scale.y = 0.25
        pin.scale.z = 0.5
        pin.color = _PLACE
        label = _text(header, 'place_names', marker_id, _point(record, 0.8), _shown(record))
        markers += [pin, label]
    return MarkerArray(markers=markers)


def hit_markers(hits: Sequence[Hit], frame_id: str, stamp: Time, query: str) -> MarkerArray:
    """The last query's hits, in ns 'hits': a sphere, a heading arrow and a label each.

    Size and colour follow the rank, not the score: scores of different views are not
    comparable (cosine similarity, seconds, metres), and for some lower is better. Hits
    without a valid pose are skipped; the query is written above the best drawn hit.
    """
    header = Header(frame_id=frame_id, stamp=stamp)
    markers = [_delete_all(header, 'hits')]
    ids = count()
    valid = [(rank, hit) for rank, hit in enumerate(hits, start=1) if hit.record.pose_valid]
    last = max(1, len(hits) - 1)
    for rank, hit in valid:
        record = hit.record
        fraction = (rank - 1) / last
        colour = _mix(_BEST, _WORST, fraction, 0.9)
        sphere = _marker(header, 'hits', next(ids), Marker.SPHERE)
        sphere.pose.position = _point(record)
        sphere.scale.x = sphere.scale.y = sphere.scale.z = 0.6 - 0.35 * fraction
        sphere.color = colour
        arrow = _marker(header, 'hits', next(ids), Marker.ARROW)
        arrow.pose.position = _point(record)
        x, y, z, w = quaternion_from_yaw(record.yaw)
        arrow.pose.orientation = Quaternion(x=x, y=y, z=z, w=w)
        arrow.scale.x, arrow.scale.y, arrow.scale.z = 0.8, 0.08, 0.08
        arrow.color = colour
        text = f'#{rank} {hit.score:.2f} {hit.view}'
        if record.text:
            text += f': {_shown(record)}'
        label = _text(header, 'hits', next(ids), _point(record, 0.6), text)
        markers += [sphere, arrow, label]
    if query and valid:
        position = _point(valid[0][1].record, 1.0)
        markers.append(_text(header, 'hits', next(ids), position, f'query: {query}'))
    return MarkerArray(markers=markers)


def _shown(record: FrameRecord) -> str:
    """The text to label a record with: a place's name, an entry's reading."""
    return name_and_room(record)[0] if record.kind == PLACE else record.text


def _time_order(record: FrameRecord) -> tuple[int, str, int]:
    return record.stamp_ns, record.session, record.index


def _subsample(records: list[FrameRecord], limit: int) -> list[FrameRecord]:
    """At most `limit` records, spread evenly in order, the newest always included."""
    if len(records) <= limit:
        return records
    if limit <= 1:
        return records[-1:] if limit == 1 else []
    step = (len(records) - 1) / (limit - 1)
    return [records[round(i * step)] for i in range(limit)]


def _runs(frames: list[FrameRecord]) -> list[list[FrameRecord]]:
    """Frames (in time order) split where a line must not be drawn: an invalid pose, or a
    change of session or map epoch."""
    runs: dict[str, list[list[FrameRecord]]] = {}
    for record in frames:
        session_runs = runs.setdefault(record.session, [[]])
        current = session_runs[-1]
        if not record.pose_valid or (current and current[-1].map_epoch != record.map_epoch):
            session_runs.append(current := [])
        if record.pose_valid:
            current.append(record)
    return [run for session_runs in runs.values() for run in session_runs if run]


def _by_map(records: list[FrameRecord]) -> list[list[FrameRecord]]:
    groups: dict[tuple[str, int], list[FrameRecord]] = {}
    for record in records:
        groups.setdefault((record.session, record.map_epoch), []).append(record)
    return list(groups.values())


def _time_ramp(records: list[FrameRecord]) -> Callable[[FrameRecord], ColorRGBA]:
    """Colour of a record by its time within the span of `records`."""
    oldest = min((r.stamp_ns for r in records), default=0)
    span = max((r.stamp_ns for r in records), default=0) - oldest

    def colour(record: FrameRecord) -> ColorRGBA:
        return _mix(_OLD, _NEW, (record.stamp_ns - oldest) / span if span else 1.0, 0.9)

    return colour


def _mix(start: tuple, end: tuple, fraction: float, alpha: float) -> ColorRGBA:
    r, g, b = (x + (y - x) * fraction for x, y in zip(start, end, strict=True))
    return ColorRGBA(r=r, g=g, b=b, a=alpha)


def _delete_all(header: Header, namespace: str) -> Marker:
    return Marker(header=header, ns=namespace, action=Marker.DELETEALL)


def _marker(header: Header, namespace: str, marker_id: int, kind: int) -> Marker:
    marker = Marker(header=header, ns=namespace, id=marker_id, type=kind, action=Marker.ADD)
    marker.pose.orientation.w = 1.0
    return marker


def _text(header: Header, namespace: str, marker_id: int, position: Point, text: str) -> Marker:
    label = _marker(header, namespace, marker_id, Marker.TEXT_VIEW_FACING)
    label.pose.position = position
    label.scale.z = 0.25
    label.color = _LABEL
    label.text = text if len(text) <= _LABEL_CHARS else text[: _LABEL_CHARS - 3] + '...'
    return label


def _point(record: FrameRecord, lift: float = 0.0) -> Point:
    return Point(x=float(record.x), y=float(record.y), z=float(record.z) + lift)
