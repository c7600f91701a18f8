# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The clock drill: the pose stream's clock steps 30 s behind the image stream's, as a
lidar without PTP stamps, while capture_node and memory_node run; then it comes back.

It passes when capture_node names the fault in /diagnostics within `clock_alarm_s` of
the step (and once on the console), clears it when the clocks agree again, and memory
holds no keyframe with a position from the wrong clock: every located keyframe is where
the robot was when its image was taken.
"""

from __future__ import annotations

import threading
import time

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from nav_msgs.msg import Odometry
from sensor_msgs.msg import CompressedImage

from waymark_interfaces.msg import Keyframe
from waymark_interfaces.srv import SearchMemory
from waymark_ros.ros import qos
from waymark_ros.ros.conversions import ns_to_stamp, stamp_to_ns
from waymark_ros.tools.drill.drills import (
    IMAGE_TOPIC,
    ODOM_TOPIC,
    PAGE,
    Settings,
    jpeg,
    memory_params,
    memory_settled,
)
from waymark_ros.tools.drill.report import DrillResult
from waymark_ros.tools.drill.stack import Stack, wait_until

OFFSET_S = 30.0
CLOCK_ALARM_S = 5.0  # the fault must be named in /diagnostics this soon after the step
SPEED_MPS = 0.5  # the robot's speed along x
IMAGE_HZ, POSE_HZ = 15.0, 50.0
FAULT_S = 8.0  # how long the clocks disagree
PLACE_TOLERANCE_M = 0.05  # a located keyframe this far from the truth is misplaced
STATUS = 'capture_node: clocks'
PHASE_TIMEOUT_S = 60.0
# Images stamped this soon after the step may still be placed by the poses before it (a
# keyframe in flight when the step came): only later ones must go unlocated.
STEP_GRACE_NS = 1_000_000_000
OK, ERROR = DiagnosticStatus.OK, DiagnosticStatus.ERROR


class _Streams:
    """Images and odometry published as they are stamped, from a thread of their own; the
    odometry stamped `pose_offset_ns` off the image clock."""

    def __init__(self, stack: Stack) -> None:
        profile = qos.sensor_input(True, 50)  # the drills' capture_node subscribes reliably
        self._images = stack.node.create_publisher(CompressedImage, IMAGE_TOPIC, profile)
        self._odom = stack.node.create_publisher(Odometry, ODOM_TOPIC, profile)
        self.pose_offset_ns = 0
        self.start_ns = time.time_ns()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def matched(self) -> bool:
        return bool(self._images.get_subscription_count() and self._odom.get_subscription_count())

    def x_at(self, stamp_ns: int) -> float:
        return SPEED_MPS * (stamp_ns - self.start_ns) / 1e9

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5.0)

    def _run(self) -> None:
        next_image = next_pose = time.monotonic()
        count = 0
        while not self._stop.is_set():
            now = time.monotonic()
            if now >= next_pose:
                stamp = time.time_ns()
                msg = Odometry()
                msg.header.stamp = ns_to_stamp(stamp + self.pose_offset_ns)
                msg.header.frame_id, msg.child_frame_id = 'map', 'base_link'
                msg.pose.pose.position.x = self.x_at(stamp)
                msg.pose.pose.orientation.w = 1.0
                self._odom.publish(msg)
                next_pose += 1 / POSE_HZ
            if now >= next_image:
                msg = CompressedImage(format='jpeg', data=jpeg(count))
                msg.header.stamp, msg.header.frame_id = ns_to_stamp(time.time_ns()), 'camera'
                self._images.publish(msg)
                count += 1
                next_image += 1 / IMAGE_HZ
            self._stop.wait(max(0.0, min(next_pose, next_image) - time.monotonic()))


def _located_frames(stack: Stack) -> list[tuple[int, float]]:
    """(stamp, x) of every stored frame with a position, paged by time."""
    located, since = [], 0
    while True:
        request = SearchMemory.Request(mode='time', top_k=PAGE, stamp=ns_to_stamp(since))
        response = stack.call(SearchMemory, 'search_memory', request, 30.0)
        if response is None or not response.success:
            why = 'no response' if response is None else response.message
            raise RuntimeError(f'could not list the stored frames: {why}')
        for hit in response.hits:
            stamp = stamp_to_ns(hit.start_stamp)
            if hit.pose_valid:
                located.append((stamp, hit.pose.pose.position.x))
            since = max(since, stamp + 1)
        if len(response.hits) < PAGE:
            return located


def clock_offset_drill(stack: Stack, _settings: Settings) -> DrillResult:
    result = DrillResult(f'clock offset {OFFSET_S:g} s (poses behind images)')
    statuses: list[tuple[float, DiagnosticStatus]] = []  # (arrival, the clock status)
    located_after: list[float] = []  # arrival of each located keyframe published
    located_stamps: list[int] = []  # and its image's stamp

    def on_diagnostics(array: DiagnosticArray) -> None:
        statuses.extend((time.monotonic(), s) for s in array.status if s.name == STATUS)

    def on_keyframe(msg: Keyframe) -> None:
        if msg.pose_valid:
            located_after.append(time.monotonic())
            located_stamps.append(stamp_to_ns(msg.header.stamp))

    stack.node.create_subscription(DiagnosticArray, '/diagnostics', on_diagnostics, 100)
    stack.node.create_subscription(Keyframe, 'keyframes', on_keyframe, qos.keyframes(1000))
    stack.start('memory_node', **memory_params(stack))
    stack.start(
        'capture_node',
        state_dir=str(stack.root / 'capture'),
        session='clocks',
        **{'keyframe.min_interval_s': 0.0, 'keyframe.max_interval_s': 0.5},
    )
    for name in ('memory_node', 'capture_node'):
        stack.wait_ready(name)
    streams = _Streams(stack)
    wait_until(streams.matched, PHASE_TIMEOUT_S, 'capture_node to subscribe to the streams')

    def seen(level: int, since: float, text: str = '') -> tuple[float, DiagnosticStatus] | None:
        return next(
            ((t, s) for t, s in statuses if t >= since and s.level == level and text in s.message),
            None,
        )

    streams.start()
    try:
        began = time.monotonic()
        wait_until(lambda: seen(OK, began, 'agree'), PHASE_TIMEOUT_S, 'the clocks to agree')
        streams.pose_offset_ns = -round(OFFSET_S * 1e9)
        stepped, stepped_ns = time.monotonic(), time.time_ns()
        result.injected += 1
        result.requests += 2  # the alarm, and its clearing
        alarm = _wait_for(lambda: seen(ERROR, stepped))
        if alarm is None:
            result.note(f'no ERROR "{STATUS}" within {PHASE_TIMEOUT_S:g} s of the step')
        else:
            took = alarm[0] - stepped
            result.answered += took <= CLOCK_ALARM_S
            result.note(
                f'ERROR "{STATUS}" {took:.1f} s after the step (at most {CLOCK_ALARM_S:g} s): '
                f'{alarm[1].message}'
            )
        # The fault lasts FAULT_S: the injection's length, not a wait for a result.
        time.sleep(max(0.0, stepped + FAULT_S - time.monotonic()))
        streams.pose_offset_ns = 0
        back, back_ns = time.monotonic(), time.time_ns()
        cleared = _wait_for(lambda: seen(OK, back, 'agree'))
        if cleared is None:
            result.note(f'"{STATUS}" not OK {PHASE_TIMEOUT_S:g} s after the clocks agreed')
        else:
            result.answered += 1
            result.note(f'OK again {cleared[0] - back:.1f} s after the clocks agreed')
        located = _wait_for(lambda: sum(back <= t for t in located_after) >= 3)
        # Counted by the image's own stamp, not by arrival: a keyframe taken before the step
        # may arrive after it on a loaded machine, rightly placed.
        during = range(stepped_ns + STEP_GRACE_NS, back_ns)
        located_during = sum(stamp in during for stamp in located_stamps)
        result.note(
            f'located keyframes published: {located_during} while the clocks disagreed, '
            + ('3 or more' if located else 'fewer than 3')
            + ' after'
        )
        result.wrong += located_during > 0
    finally:
        streams.stop()
    memory_settled(stack, quiet_s=2.0, timeout_s=PHASE_TIMEOUT_S)
    stored = _located_frames(stack)
    misplaced = [
        (stamp, x) for stamp, x in stored if abs(x - streams.x_at(stamp)) > PLACE_TOLERANCE_M
    ]
    result.wrong += len(misplaced)
    result.note(
        f'{len(stored)} located keyframes stored, {len(misplaced)} misplaced (more than '
        f'{PLACE_TOLERANCE_M:g} m from where the robot was at their stamp)'
    )
    log = stack.nodes['capture_node'].log_path.read_text().splitlines()
    warnings = [line for line in log if line.startswith('[WARN]') and 'the clocks of' in line]
    result.note(f'console warnings about the clocks: {len(warnings)} (expected 1)')
    result.wrong += len(warnings) != 1
    result.dead = sorted(name for name, up in stack.alive().items() if not up)
    return result


def _wait_for(condition):
    """The condition's value once true, None after PHASE_TIMEOUT_S."""
    try:
        wait_until(condition, PHASE_TIMEOUT_S, 'condition')
    except TimeoutError:
        return None
    return condition()
