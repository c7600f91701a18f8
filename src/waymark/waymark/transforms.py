# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""A small transform tree: the newest transform of each frame from its parent, composed
along the chain on request (map -> odom -> base_link gives map -> base_link).

Where tf2_ros is not installed, the nodes read the robot's pose from /tf and /tf_static
through this tree. It keeps only the newest transform per frame, which is all a pose
lookup at "now" needs; it is no replacement for tf2's buffer of past transforms.
"""

from __future__ import annotations

from dataclasses import dataclass

from waymark.geometry import Pose


class TransformError(LookupError):
    """No usable transform: a missing link, or one older than allowed."""


@dataclass(frozen=True)
class Edge:
    parent: str
    transform: Pose  # the child frame's pose in the parent frame
    stamp_ns: int
    static: bool


@dataclass(frozen=True)
class Lookup:
    pose: Pose  # the child frame's pose in the parent frame
    stamp_ns: int | None  # the oldest dynamic link's stamp; None: every link is static


def inverse(pose: Pose) -> Pose:
    rotation = pose.rotation.inv()
    position = -rotation.apply(pose.position)
    return Pose(tuple(position.tolist()), tuple(rotation.as_quat().tolist()))


class TransformTree:
    """Frames linked to their parents by the newest transform heard."""

    def __init__(self) -> None:
        self._edges: dict[str, Edge] = {}

    def add(self, parent: str, child: str, transform: Pose, stamp_ns: int, static: bool) -> str:
        """Keep the transform; '' when kept, else why not (an older stamp than the one
        kept, a frame of its own parent, an empty frame name)."""
        if not parent or not child:
            return f'empty frame name in {parent!r} -> {child!r}'
        if parent == child:
            return f'frame {child!r} cannot be its own parent'
        known = self._edges.get(child)
        dynamic = known is not None and not static and not known.static
        if dynamic and stamp_ns < known.stamp_ns:
            return (
                f'{parent} -> {child} stamped {(known.stamp_ns - stamp_ns) / 1e9:.3f} s '
                'before the one kept (time went backwards?)'
            )
        self._edges[child] = Edge(parent, transform, stamp_ns, static)
        return ''

    def clear_dynamic(self) -> None:
        """Forget every non-static transform, as tf2 does when time jumps back."""
        self._edges = {child: e for child, e in self._edges.items() if e.static}

    def lookup(self, parent: str, child: str, now_ns: int, max_age_ns: int) -> Lookup:
        """`child`'s pose in `parent`; TransformError when a link is missing or a dynamic
        link is more than `max_age_ns` older than `now_ns`."""
        up_child, up_parent = self._chain(child), self._chain(parent)
        common = next((frame for frame, _ in up_child if frame in dict(up_parent)), None)
        if common is None:
            raise TransformError(
                f'no transform {parent} -> {child}: {child} leads up to '
                f'{up_child[-1][0]}, {parent} to {up_parent[-1][0]}'
                + ('' if self._edges else ' (no transforms received yet)')
            )
        to_child, oldest = self._compose(up_child, common)
        to_parent, oldest_parent = self._compose(up_parent, common)
        if oldest is None or (oldest_parent is not None and oldest_parent < oldest):
            oldest = oldest_parent
        if oldest is not None and now_ns - oldest > max_age_ns:
            raise TransformError(
                f'transform {parent} -> {child} is {(now_ns - oldest) / 1e9:.2f} s old '
                f'(more than {max_age_ns / 1e9:g} s)'
            )
        return Lookup(inverse(to_parent).compose(to_child), oldest)

    def _chain(self, frame: str) -> list[tuple[str, Edge | None]]:
        """frame, its parent, ... up to the root, each with the edge to its parent."""
        chain: list[tuple[str, Edge | None]] = []
        seen = set()
        while frame not in seen:
            seen.add(frame)
            edge = self._edges.get(frame)
            chain.append((frame, edge))
            if edge is None:
                break
            frame = edge.parent
        return chain

    @staticmethod
    def _compose(chain: list[tuple[str, Edge | None]], ancestor: str) -> tuple[Pose, int | None]:
        """The first frame's pose in `ancestor`, and the oldest dynamic stamp on the way."""
        pose, oldest = Pose(), None
        for frame, edge in chain:
            if frame == ancestor:
                break
            pose = edge.transform.compose(pose)
            if not edge.static:
                oldest = edge.stamp_ns if oldest is None else min(oldest, edge.stamp_ns)
        return pose, oldest
