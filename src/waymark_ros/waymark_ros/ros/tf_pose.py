# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The robot's pose from TF (parent_frame -> child_frame), for `pose_type: tf`.

With tf2_ros installed (a ROS 2 install), its Buffer and TransformListener answer the
lookups. Without it, /tf and /tf_static are read as tf2_msgs/TFMessage into the core's
TransformTree, which composes the chain (map -> odom -> base_link) itself. The transform is
looked up at `rate_hz`, and handed on like a pose message when its stamp is new; a chain of
static transforms only is stamped with the node's clock. TF carries no covariance.
"""

from __future__ import annotations

from collections.abc import Callable

from geometry_msgs.msg import Pose as PoseMsg
from rclpy.node import Node
from rclpy.time import Time
from std_msgs.msg import Header

from waymark.geometry import InvalidPoseError, Pose
from waymark.parameters.common import TfPoseParameters
from waymark.transforms import Lookup, TransformError, TransformTree
from waymark_ros.ros import qos
from waymark_ros.ros.conversions import NS_PER_S, ns_to_stamp, pose_to_msg, stamp_to_ns

MISSING = (
    "pose_type 'tf' needs the tf2_ros or the tf2_msgs Python package, and neither is "
    'installed (they come with a ROS 2 install, not with the PyPI wheels): install '
    'tf2_ros, or read the pose from a topic with another pose_type'
)


class _Tf2Lookup:
    """tf2_ros's buffer, filled by its listener."""

    def __init__(self, node: Node, tf2_ros) -> None:
        self._tf2 = tf2_ros
        self.buffer = tf2_ros.Buffer()
        self._listener = tf2_ros.TransformListener(self.buffer, node, spin_thread=False)

    def lookup(self, parent: str, child: str, now_ns: int, max_age_ns: int) -> Lookup:
        try:
            found = self.buffer.lookup_transform(parent, child, Time())
        except self._tf2.TransformException as error:
            raise TransformError(' '.join(str(error).split())) from None
        stamp = stamp_to_ns(found.header.stamp) or None  # 0: only static links
        if stamp is not None and now_ns - stamp > max_age_ns:
            raise TransformError(
                f'transform {parent} -> {child} is {(now_ns - stamp) / NS_PER_S:.2f} s old '
                f'(more than {max_age_ns / NS_PER_S:g} s)'
            )
        t, r = found.transform.translation, found.transform.rotation
        try:
            pose = Pose.checked((t.x, t.y, t.z), (r.x, r.y, r.z, r.w))
        except InvalidPoseError as error:
            raise TransformError(f'bad transform {parent} -> {child}: {error}') from None
        return Lookup(pose, stamp)

    def reset(self) -> None:
        self.buffer.clear()

    def close(self) -> None:
        self._listener.unregister()


class _MessageLookup:
    """/tf and /tf_static into a TransformTree."""

    def __init__(self, node: Node, tf2_msgs, callback_group) -> None:
        self._node = node
        self._tree = TransformTree()
        message = tf2_msgs.msg.TFMessage
        self._subscriptions = [
            node.create_subscription(
                message, '/tf', self._on_dynamic, qos.tf(), callback_group=callback_group
            ),
            node.create_subscription(
                message,
                '/tf_static',
                self._on_static,
                qos.tf_static(),
                callback_group=callback_group,
            ),
        ]

    def _on_dynamic(self, msg) -> None:
        self._add(msg, static=False)

    def _on_static(self, msg) -> None:
        self._add(msg, static=True)

    def _add(self, msg, static: bool) -> None:
        for stamped in msg.transforms:
            t, r = stamped.transform.translation, stamped.transform.rotation
            parent, child = stamped.header.frame_id, stamped.child_frame_id
            try:
                transform = Pose.checked((t.x, t.y, t.z), (r.x, r.y, r.z, r.w))
            except InvalidPoseError as error:
                why = str(error)
            else:
                why = self._tree.add(
                    parent, child, transform, stamp_to_ns(stamped.header.stamp), static
                )
            if why:
                self._node.get_logger().warning(
                    f'TF {parent} -> {child} ignored: {why}', throttle_duration_sec=10.0
                )

    def lookup(self, parent: str, child: str, now_ns: int, max_age_ns: int) -> Lookup:
        return self._tree.lookup(parent, child, now_ns, max_age_ns)

    def reset(self) -> None:
        self._tree.clear_dynamic()

    def close(self) -> None:
        for subscription in self._subscriptions:
            self._node.destroy_subscription(subscription)
        self._subscriptions = []


class TfPoseInput:
    """Looks up the pose at `rate_hz` and calls `callback(header, pose, None)` when it is
    new. `last_error` says why the latest lookup failed ('' when it did not)."""

    def __init__(
        self,
        node: Node,
        settings: TfPoseParameters,
        callback: Callable[[Header, PoseMsg, None], None],
        callback_group=None,
    ) -> None:
        self._node, self._settings, self._callback = node, settings, callback
        self.source = f'TF {settings.parent_frame} -> {settings.child_frame}'
        self._lookup = _lookup_for(node, callback_group)
        self._max_age_ns = round(settings.max_age_s * NS_PER_S)
        self._last_stamp: int | None = None
        self._last_now = 0
        self.last_error = ''
        self._timer = node.create_timer(
            1.0 / settings.rate_hz, self._tick, callback_group=callback_group
        )

    def _tick(self) -> None:
        now = self._node.get_clock().now().nanoseconds
        if now < self._last_now:  # a replay looped or restarted: old transforms are void
            self._lookup.reset()
            self._last_stamp = None
            self._node.get_logger().info('time went backwards: TF transforms forgotten')
        self._last_now = now
        s = self._settings
        try:
            found = self._lookup.lookup(s.parent_frame, s.child_frame, now, self._max_age_ns)
        except TransformError as error:
            self.last_error = str(error)
            return
        self.last_error = ''
        stamp = found.stamp_ns if found.stamp_ns is not None else now
        if stamp == self._last_stamp:
            return
        self._last_stamp = stamp
        header = Header(frame_id=s.parent_frame, stamp=ns_to_stamp(stamp))
        self._callback(header, pose_to_msg(found.pose), None)

    def close(self) -> None:
        self._node.destroy_timer(self._timer)
        self._lookup.close()


def _lookup_for(node: Node, callback_group) -> _Tf2Lookup | _MessageLookup:
    """tf2_ros where installed, else the TFMessage reader; RuntimeError with neither."""
    try:
        import tf2_ros
    except ImportError:
        pass
    else:
        return _Tf2Lookup(node, tf2_ros)
    try:
        import tf2_msgs.msg
    except ImportError:
        raise RuntimeError(MISSING) from None
    return _MessageLookup(node, tf2_msgs, callback_group)
