# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""An answer's two places from its memory entry: the target, and the pose to drive to."""

from __future__ import annotations

from collections.abc import Iterable

from waymark.localisation.estimate import ROBOT, TargetEstimate
from waymark.localisation.locate import locate
from waymark.localisation.params import LocalisationParams
from waymark.localisation.self_position import about_the_robot
from waymark.localisation.standoff import FreeSpace, StandoffPose, standoff_goal
from waymark.memory.entries import FrameRecord, TextBox


def place(
    record: FrameRecord,
    query: str,
    others: Iterable[FrameRecord] = (),
    params: LocalisationParams | None = None,
    is_free: FreeSpace | None = None,
    region: TextBox | None = None,
) -> tuple[TargetEstimate, StandoffPose]:
    """The target `record` shows for `query` (see locate) and the standoff pose facing it,
    on the side the record's camera saw it from; the agent and the baselines share it so
    that they are scored on the same placement. A question about where the robot itself
    was gets the keyframe's own pose as both: that is where the robot stood."""
    if about_the_robot(query):
        where = TargetEstimate(
            record.x,
            record.y,
            record.z,
            0.0,
            ROBOT,
            record.map_epoch,
            record.session,
            sources=(record.id,),
        )
        return where, StandoffPose(record.x, record.y, record.yaw, at_viewpoint=True)
    target = locate(record, query, others, params, region)
    pose = standoff_goal(target, (record.x, record.y), params, is_free, record.yaw)
    return target, pose
