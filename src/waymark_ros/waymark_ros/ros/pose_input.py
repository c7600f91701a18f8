# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The robot's pose, in whichever message type its SLAM or camera driver publishes, or
from TF.

LIO SLAM publishes Odometry, the ZED's tracking a PoseWithCovarianceStamped, other drivers a
PoseStamped; a robot with a localisation that only broadcasts TF gives map -> base_link.
Every node that reads the pose takes the same `pose_type` choice, so one preset can point
all of them at the same source.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from geometry_msgs.msg import Pose, PoseStamped, PoseWithCovarianceStamped
from nav_msgs.msg import Odometry
from rclpy.node import Node
from rclpy.qos import QoSProfile
from std_msgs.msg import Header

from waymark.parameters.common import POSE_TYPES, TF, TfPoseParameters
from waymark_ros.ros.tf_pose import TfPoseInput

# header, pose, and the 6x6 covariance (row-major) when the message carries one
PoseCallback = Callable[[Header, Pose, Sequence[float] | None], None]

_UNPACK = {
    'odometry': (Odometry, lambda m: (m.header, m.pose.pose, m.pose.covariance)),
    'pose_stamped': (PoseStamped, lambda m: (m.header, m.pose, None)),
    'pose_with_covariance': (
        PoseWithCovarianceStamped,
        lambda m: (m.header, m.pose.pose, m.pose.covariance),
    ),
}


class TopicPoseInput:
    """A pose topic's subscription."""

    def __init__(self, node: Node, subscription, topic: str) -> None:
        self._node, self._subscription = node, subscription
        self.source = topic
        self.last_error = ''

    def close(self) -> None:
        self._node.destroy_subscription(self._subscription)


def subscribe_pose(
    node: Node,
    pose_type: str,
    topic: str,
    callback: PoseCallback,
    qos_profile: QoSProfile,
    callback_group=None,
    tf: TfPoseParameters | None = None,
) -> TopicPoseInput | TfPoseInput:
    """Call `callback(header, pose, covariance)` with each pose: from `topic` of type
    `pose_type`, or looked up in TF with `tf`'s frames when `pose_type` is tf."""
    if pose_type == TF:
        if tf is None:
            raise ValueError("pose_type 'tf' needs the tf_pose frames")
        return TfPoseInput(node, tf, callback, callback_group)
    if pose_type not in _UNPACK:
        raise ValueError(f'pose_type must be one of {", ".join(POSE_TYPES)}, got {pose_type!r}')
    msg_type, unpack = _UNPACK[pose_type]
    subscription = node.create_subscription(
        msg_type,
        topic,
        lambda msg: callback(*unpack(msg)),
        qos_profile,
        callback_group=callback_group,
    )
    return TopicPoseInput(node, subscription, topic)
