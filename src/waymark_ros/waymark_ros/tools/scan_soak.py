# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""navigator_node fed a LIO SLAM's output for a long run, over DDS: its memory over time.

    python -m waymark_ros.tools.scan_soak --sim-minutes 30 --out /tmp/soak

The LIO stand-in of `python -m waymark bench scans` (waymark.benchmarks.scans: 20,000
points a scan at 10 Hz over a MID-360's field of view, in a 40 m x 30 m building, the
robot walking a loop at 0.5 m/s) publishes registered scans on /cloud_registered and
odometry on /Odometry in camera_init, stamped on a simulated clock 0.1 s apart, to
navigator_node (`map_source: scans`, its defaults otherwise) at `--rate-hz` of wall time
(10: the real rate; more plays the run faster). navigator_node's RSS is read from /proc
every `--rss-every` simulated minutes, and its /diagnostics say how many scans it took
(a node that falls behind drops scans: its subscription keeps the newest only). The
per-scan costs in process are the bench's; this adds what the node pays for receiving and
converting the clouds, and whether its memory stays flat.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from nav_msgs.msg import Odometry
from rclpy.executors import SingleThreadedExecutor
from sensor_msgs.msg import PointCloud2

from waymark.benchmarks.scans import SCAN_RATE_HZ, SENSOR_HEIGHT_M, LioStandIn
from waymark_ros.ros import qos
from waymark_ros.ros.conversions import ns_to_stamp
from waymark_ros.ros.navigation_msgs import cloud_msg
from waymark_ros.tools.drill.stack import memory_kb
from waymark_ros.tools.processes import start_node, stop_node

FRAME = 'camera_init'
STATUS = 'navigator_node: map'
START_NS = 1_700_000_000 * 10**9
WAIT_S = 120.0  # for the node to start
DIAGNOSTICS_PERIOD_S = 1.0  # navigator_node's


def navigator_parameters() -> dict[str, object]:
    return {
        'map_source': 'scans',
        'cloud_topic': '/cloud_registered',
        'map_frame': FRAME,
        'odom_topic': '/Odometry',
        'reliable_input': True,
        'safety_state_timeout_s': 0.0,  # no goals are driven: only the map is measured
    }


class Feeder:
    """The LIO stand-in's publishers and the navigator's scan count."""

    def __init__(self, node) -> None:
        self.integrated = 0
        self._scans = node.create_publisher(PointCloud2, '/cloud_registered', 10)
        self._odometry = node.create_publisher(Odometry, '/Odometry', qos.state_input(True, 10))
        node.create_subscription(DiagnosticArray, '/diagnostics', self._on_diagnostics, 50)

    def _on_diagnostics(self, msg: DiagnosticArray) -> None:
        for status in msg.status:
            if status.name == STATUS:
                values = {kv.key: kv.value for kv in status.values}
                self.integrated = int(values.get('scans_integrated', self.integrated))

    def ready(self) -> bool:
        return self._scans.get_subscription_count() > 0

    def publish(self, lio: LioStandIn, index: int) -> None:
        t_s = index / SCAN_RATE_HZ
        x, y = lio.pose(t_s)
        stamp = ns_to_stamp(START_NS + round(t_s * 1e9))
        odometry = Odometry()
        odometry.header.frame_id, odometry.header.stamp = FRAME, stamp
        odometry.child_frame_id = 'body'
        position = odometry.pose.pose.position
        position.x, position.y, position.z = x, y, SENSOR_HEIGHT_M
        odometry.pose.pose.orientation.w = 1.0
        self._odometry.publish(odometry)
        self._scans.publish(cloud_msg(lio.scan(x, y), FRAME, stamp))


def spin_until(executor, predicate, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f'timed out after {timeout_s:g} s waiting for {what}')
        executor.spin_once(timeout_sec=0.05)


def soak(sim_minutes: float, rss_every_min: float, rate_hz: float, out: Path) -> dict:
    scans = round(sim_minutes * 60 * SCAN_RATE_HZ)
    navigator = start_node('navigator_node', out / 'logs', navigator_parameters())
    rclpy.init()
    node = rclpy.create_node('waymark_scan_soak')
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    feeder = Feeder(node)
    lio = LioStandIn(np.random.default_rng(0))
    rss: list[tuple[float, float, float]] = []
    started = time.monotonic()
    try:
        spin_until(executor, feeder.ready, WAIT_S, 'navigator_node on /cloud_registered')
        every = round(rss_every_min * 60 * SCAN_RATE_HZ)
        period_s = 1.0 / rate_hz
        next_s = time.monotonic()
        for index in range(scans):
            if index % every == 0:
                now_kb, peak_kb = memory_kb(navigator.process.pid)
                rss.append((index / SCAN_RATE_HZ / 60.0, now_kb / 1024, peak_kb / 1024))
            feeder.publish(lio, index)
            next_s += period_s
            while (left_s := next_s - time.monotonic()) > 0:
                executor.spin_once(timeout_sec=left_s)
        settled = time.monotonic() + 2 * DIAGNOSTICS_PERIOD_S  # its last count comes
        while time.monotonic() < settled:
            executor.spin_once(timeout_sec=0.1)
        now_kb, peak_kb = memory_kb(navigator.process.pid)
        rss.append((sim_minutes, now_kb / 1024, peak_kb / 1024))
        wall_s = time.monotonic() - started
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()
        code = stop_node(navigator, timeout_s=30.0)
    return {
        'scans': scans,
        'rate_hz': rate_hz,
        'integrated': feeder.integrated,
        'wall_s': wall_s,
        'rss': rss,
        'exit_code': code,
    }


def render(result: dict) -> str:
    lines = [
        f'navigator_node, map_source scans: {result["scans"]} scans published, '
        f'at {result["rate_hz"]:g} Hz, {result["integrated"]} integrated, in '
        f'{result["wall_s"]:.0f} s; exit code {result["exit_code"]}',
        '',
        '| simulated min | navigator RSS MiB | peak MiB |',
        '|---|---|---|',
    ]
    lines += [f'| {minute:.1f} | {now:.0f} | {peak:.0f} |' for minute, now, peak in result['rss']]
    return '\n'.join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog='python -m waymark_ros.tools.scan_soak')
    parser.add_argument('--sim-minutes', type=float, default=30.0, help='simulated run length')
    parser.add_argument('--rss-every', type=float, default=5.0, help='simulated minutes')
    parser.add_argument('--rate-hz', type=float, default=10.0, help='scans a second, wall time')
    parser.add_argument('--out', type=Path, default=None, help='logs (default: a temp folder)')
    args = parser.parse_args(argv)
    if args.sim_minutes <= 0 or args.rss_every <= 0 or args.rate_hz <= 0:
        parser.error('need --sim-minutes > 0, --rss-every > 0 and --rate-hz > 0')
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    out = args.out or Path(tempfile.mkdtemp(prefix='scan_soak_'))
    print(render(soak(args.sim_minutes, args.rss_every, args.rate_hz, out)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
