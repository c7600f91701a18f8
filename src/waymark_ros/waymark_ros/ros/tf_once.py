# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""One transform from /tf and /tf_static, looked up once with a deadline.

For what is bolted on or fixed while a node runs (the camera on its mount, the floor under
the map's origin): a lookup per message would tie the node to the timing of the TF tree.
The lookup spins a short-lived node of its own, so it works wherever it is called from (a
constructor, or a lifecycle callback inside the node's executor). tf2_ros comes with a ROS
install, not with the PyPI wheels, so it is imported only here.
"""

from __future__ import annotations

import time

from geometry_msgs.msg import Transform
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.time import Time


def lookup_once(node: Node, target: str, source: str, timeout_s: float) -> Transform:
    """`source`'s pose in `target`. ImportError without tf2_ros, TimeoutError past timeout_s."""
    import tf2_ros

    helper = Node(
        f'{node.get_name()}_tf_once',
        namespace=node.get_namespace(),
        context=node.context,
        use_global_arguments=False,  # a launch's `__node` remap would rename it too
        start_parameter_services=False,
    )
    buffer = tf2_ros.Buffer()
    listener = tf2_ros.TransformListener(buffer, helper, spin_thread=False)
    executor = SingleThreadedExecutor(context=node.context)
    executor.add_node(helper)
    try:
        deadline = time.monotonic() + timeout_s
        while not buffer.can_transform(target, source, Time()):
            if time.monotonic() > deadline:
                raise TimeoutError(f'no transform {target} -> {source} within {timeout_s:g} s')
            executor.spin_once(timeout_sec=0.1)
        return buffer.lookup_transform(target, source, Time()).transform
    finally:
        listener.unregister()
        executor.remove_node(helper)
        executor.shutdown()
        helper.destroy_node()
