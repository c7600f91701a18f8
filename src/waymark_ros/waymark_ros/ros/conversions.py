# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Time and pose message <-> core conversions, for every node. Everything that reads a
message validates it here; memory's messages are in memory_msgs, so that a node that
never touches memory (navigator, safety, the base) does not load it."""

from __future__ import annotations

from builtin_interfaces.msg import Time
from geometry_msgs.msg import Pose as PoseMsg
from geometry_msgs.msg import PoseStamped

from waymark.geometry import Pose

NS_PER_S = 1_000_000_000


def stamp_to_ns(stamp: Time) -> int:
    return int(stamp.sec) * NS_PER_S + int(stamp.nanosec)


def ns_to_stamp(ns: int) -> Time:
    sec, nanosec = divmod(int(ns), NS_PER_S)
    return Time(sec=sec, nanosec=nanosec)


def pose_from_msg(msg: PoseMsg) -> Pose:
    """Raises InvalidPoseError on NaN/inf or a zero quaternion."""
    p, q = msg.position, msg.orientation
    return Pose.checked((p.x, p.y, p.z), (q.x, q.y, q.z, q.w))


def pose_to_msg(pose: Pose) -> PoseMsg:
    msg = PoseMsg()
    msg.position.x, msg.position.y, msg.position.z = (float(v) for v in pose.position)
    q = msg.orientation
    q.x, q.y, q.z, q.w = (float(v) for v in pose.orientation)
    return msg


def pose_stamped(pose: Pose, frame_id: str, stamp_ns: int) -> PoseStamped:
    msg = PoseStamped()
    msg.header.frame_id = frame_id
    msg.header.stamp = ns_to_stamp(stamp_ns)
    msg.pose = pose_to_msg(pose)
    return msg
