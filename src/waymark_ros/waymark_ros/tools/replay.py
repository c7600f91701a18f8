# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Replay a rosbag2 (MCAP or sqlite3) over DDS without the ros2 CLI.

Messages go out as the bag stored them (serialized CDR), paced by their recorded
stamps times `--rate`. Publishers are reliable with a deep history and the replay
waits for subscribers before it starts and for acknowledgements before it ends, so
a replay at any rate loses nothing to a reliable subscriber. `--preset` replays the
camera and pose topics of sensor presets (this package's config/sensors/NAME.yaml, or a
path), the ones a stack launched with those presets listens to. `--wait-ready TOPIC` also
waits for a first message on a latched status topic (memory_node's `memory/stats` is
published once memory is open), so that a bag shorter than the stack's start-up is not
over before anything stores it.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import rclpy
from ament_index_python.packages import get_package_share_directory
from rclpy.duration import Duration
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rosbags.rosbag2 import Reader
from rosgraph_msgs.msg import Clock
from std_msgs.msg import String

from waymark.evaluation.sensors import SensorError, preset_path, read_presets
from waymark_ros.ros import qos as waymark_qos
from waymark_ros.ros.conversions import ns_to_stamp


class ReplayError(RuntimeError):
    pass


@dataclass
class ReplayReport:
    published: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)  # topic -> type not installed here
    duration_s: float = 0.0
    all_acknowledged: bool = True
    not_ready: list[str] = field(default_factory=list)  # status topics still silent


def message_type(name: str):
    """'sensor_msgs/msg/Image' -> the rclpy message class."""
    package, kind, message = name.split('/')
    try:
        return getattr(importlib.import_module(f'{package}.{kind}'), message)
    except (ImportError, AttributeError) as error:
        raise ReplayError(f'message type {name} is not available in this ROS install') from error


def replay(
    node: Node,
    bag: Path,
    *,
    rate: float = 1.0,
    topics: Sequence[str] = (),
    remap: dict[str, str] | None = None,
    publish_clock: bool = False,
    wait_subscribers_s: float = 5.0,
    ack_timeout_s: float = 30.0,
    wait_ready: Sequence[str] = (),
) -> ReplayReport:
    """Publish the bag's messages; rate 0 means as fast as the subscribers take them.
    `wait_ready` names latched std_msgs/String status topics to hear from first (within
    the same `wait_subscribers_s`)."""
    if rate < 0:
        raise ReplayError('rate must be >= 0')
    remap = remap or {}
    qos = QoSProfile(
        history=HistoryPolicy.KEEP_ALL,
        reliability=ReliabilityPolicy.RELIABLE,
        durability=DurabilityPolicy.VOLATILE,
    )
    with Reader(bag) as reader:
        available = {c.topic: c.msgtype for c in reader.connections}
        missing = [t for t in topics if t not in available]
        if missing:
            listing = ', '.join(f'{t} [{m}]' for t, m in sorted(available.items()))
            raise ReplayError(f'topics {missing} are not in {bag}; it has: {listing}')
        connections = [c for c in reader.connections if not topics or c.topic in topics]
        publishers = {}
        skipped = {}
        for connection in connections:
            if connection.topic in publishers:
                continue
            try:
                kind = message_type(connection.msgtype)
            except ReplayError:
                if topics:  # asked for by name: that is an error
                    raise
                skipped[connection.topic] = connection.msgtype
                continue
            publishers[connection.topic] = node.create_publisher(
                kind, remap.get(connection.topic, connection.topic), qos
            )
        connections = [c for c in connections if c.topic in publishers]
        clock = node.create_publisher(Clock, '/clock', 10) if publish_clock else None
        deadline = time.monotonic() + wait_subscribers_s
        not_ready = _wait_for_status(node, wait_ready, deadline)
        _wait_for_subscribers(node, publishers.values(), max(0.0, deadline - time.monotonic()))

        report = ReplayReport(
            published=dict.fromkeys(publishers, 0), skipped=skipped, not_ready=not_ready
        )
        started = time.monotonic()
        first_ns = None
        for connection, stamp_ns, data in reader.messages(connections=connections):
            if first_ns is None:
                first_ns = stamp_ns
            if rate > 0:
                delay = (stamp_ns - first_ns) * 1e-9 / rate - (time.monotonic() - started)
                if delay > 0:
                    time.sleep(delay)
            if clock is not None:
                clock.publish(Clock(clock=ns_to_stamp(stamp_ns)))
            publishers[connection.topic].publish(bytes(data))
            report.published[connection.topic] += 1
        for publisher in publishers.values():
            if not publisher.wait_for_all_acked(Duration(seconds=ack_timeout_s)):
                report.all_acknowledged = False
        report.duration_s = time.monotonic() - started
        return report


def _wait_for_status(node: Node, topics: Sequence[str], deadline: float) -> list[str]:
    """Spin until each status topic has spoken once or the deadline passes; the silent
    ones are returned (the replay then goes ahead, as it would without the wait). The node
    must be in no executor while it waits: it is spun here."""
    if not topics:
        return []
    heard: set[str] = set()
    subscriptions = [
        node.create_subscription(
            String, topic, lambda _msg, topic=topic: heard.add(topic), waymark_qos.latched()
        )
        for topic in topics
    ]
    executor = SingleThreadedExecutor(context=node.context)
    executor.add_node(node)
    try:
        while len(heard) < len(topics) and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.1)
    finally:
        executor.remove_node(node)
        executor.shutdown()
        for subscription in subscriptions:
            node.destroy_subscription(subscription)
    return [topic for topic in topics if topic not in heard]


def _wait_for_subscribers(node: Node, publishers, timeout_s: float) -> None:
    """Discovery takes a moment; messages published before it completes are lost. Each
    publisher waits for a first subscriber, and for every subscriber the graph already
    knows on its topic (that it can serve): with Fast DDS a new writer matches known
    readers one by one, so `/odom` heard by navigator_node may not yet reach capture_node."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if all(p.get_subscription_count() >= _readers(node, p.topic_name) for p in publishers):
            return
        time.sleep(0.05)


def _readers(node: Node, topic: str) -> int:
    """How many subscribers of `topic` the replay's publishers should reach (at least one):
    a reliable, volatile writer serves every reader but one that asks for transient-local
    durability. (rclpy's qos_check_compatible is no help here: it reads the graph's
    "infinite" deadline and lease as set, and the publisher's defaults as unset.)"""
    infos = node.get_subscriptions_info_by_topic(topic)
    served = [
        info for info in infos if info.qos_profile.durability != DurabilityPolicy.TRANSIENT_LOCAL
    ]
    return max(1, len(served))


def preset_topics(names: Sequence[str]) -> list[str]:
    """The camera and pose topics the sensor presets name, layered as the launch does."""
    if not names:
        return []
    folder = Path(get_package_share_directory('waymark_ros')) / 'config' / 'sensors'
    parameters = read_presets([preset_path(name, folder) for name in names])
    return [str(parameters[key]) for key in ('image_topic', 'pose_topic') if key in parameters]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('bag', type=Path, help='rosbag2 directory (or .mcap/.db3 file)')
    parser.add_argument(
        '--rate', type=float, default=1.0, help='speed factor; 0 = as fast as possible'
    )
    parser.add_argument('--topics', nargs='*', default=[], help='only these topics')
    parser.add_argument(
        '--preset',
        action='append',
        default=[],
        metavar='NAME',
        help='also the camera and pose topics of this sensor preset (repeatable)',
    )
    parser.add_argument(
        '--remap', nargs='*', default=[], metavar='FROM:=TO', help='topic remappings'
    )
    parser.add_argument('--clock', action='store_true', help='publish /clock from the bag stamps')
    parser.add_argument('--wait-subscribers', type=float, default=5.0, metavar='S')
    parser.add_argument(
        '--wait-ready',
        action='append',
        default=[],
        metavar='TOPIC',
        help='latched std_msgs/String status topic to hear from before playing (repeatable)',
    )
    args, ros_args = parser.parse_known_args(argv)
    remap = dict(item.split(':=', 1) for item in args.remap)
    try:
        topics = [*args.topics, *preset_topics(args.preset)]
    except SensorError as error:
        print(f'replay: {error}', file=sys.stderr)
        return 2
    rclpy.init(args=ros_args)
    node = Node('waymark_replay')
    try:
        report = replay(
            node,
            args.bag,
            rate=args.rate,
            topics=list(dict.fromkeys(topics)),
            remap=remap,
            publish_clock=args.clock,
            wait_subscribers_s=args.wait_subscribers,
            wait_ready=args.wait_ready,
        )
    except ReplayError as error:
        print(f'replay: {error}', file=sys.stderr)
        return 2
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    for topic, count in report.published.items():
        print(f'{topic}: {count} messages')
    for topic, kind in report.skipped.items():
        print(f'{topic}: skipped, {kind} is not installed')
    for topic in report.not_ready:
        print(f'{topic}: nothing heard within --wait-subscribers; played anyway')
    print(
        f'replayed in {report.duration_s:.1f} s'
        + ('' if report.all_acknowledged else ' (not all acknowledged)')
    )
    return 0


if __name__ == '__main__':
    sys.exit(main())
