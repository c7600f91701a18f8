# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The safety drills: a fault while the robot drives, and how soon its base stands still.

sim_base_node is the robot, on an open hall map, driven by navigator_node through
safety_node (demo.yaml). It plays the Go1's driver (its `driver_model`): as released, with
its zeroing window missed (it walks on at the last command for as long as no other comes),
where waymark's own chain must stop it; patched (docker/patches: zero after 0.4 s of
silence), where nothing of waymark is left to stop it.
"""

from __future__ import annotations

import threading
import time

import numpy as np
from nav_msgs.msg import OccupancyGrid, Odometry
from std_msgs.msg import Bool

from waymark.parameters.safety import SafetyParameters
from waymark_ros.ros import qos
from waymark_ros.ros.conversions import stamp_to_ns
from waymark_ros.ros.navigation_msgs import occupancy_grid_msg
from waymark_ros.tools.drill.drills import MAP_RESOLUTION_M, Settings, finish, goal
from waymark_ros.tools.drill.report import DrillResult
from waymark_ros.tools.drill.stack import MATCH_SETTLE_S, Stack, wait_until
from waymark_ros.tools.drill.stops import Sample, moved_m, stop_after

HALL_M = (26.0, 6.0)  # an open hall: a long straight drive, and room for a short one after
START = (1.5, 3.0)
FAR = (24.0, 3.0)  # the long goal, well beyond where any fault is injected
SHORT_M = 1.5  # the goal that shows the chain drives again after a fault
SIM_BASE_HZ = 50.0  # sim_base's odometry rate (the Go1 driver's odometry timer: 20 ms)
STILL = 0.01  # m/s and rad/s: a base at or below both stands still
SAFETY_TIMEOUT_S = SafetyParameters().command_timeout_s  # its watchdog, as the drills run it
GOAL_TIMEOUT_S = 120.0
ARRIVED_M = 0.5  # a reached goal is at least this close (the navigator's tolerance is less)


def hall() -> tuple[tuple[float, float], np.ndarray]:
    """(origin, int8 cells): free floor walled in on all four sides."""
    rows, cols = (round(side / MAP_RESOLUTION_M) for side in HALL_M[::-1])
    cells = np.zeros((rows, cols), dtype=np.int8)
    cells[[0, -1], :] = 100
    cells[:, [0, -1]] = 100
    return (0.0, 0.0), cells


class Odometer:
    """sim_base's odometry as Samples, in the drill's node."""

    def __init__(self, stack: Stack) -> None:
        self._lock = threading.Lock()
        self._samples: list[Sample] = []
        stack.node.create_subscription(
            Odometry, '/odom', self._on_odometry, qos.state_input(True, 100)
        )

    def _on_odometry(self, msg: Odometry) -> None:
        p, v = msg.pose.pose.position, msg.twist.twist
        sample = Sample(stamp_to_ns(msg.header.stamp), p.x, p.y, v.linear.x, v.angular.z)
        with self._lock:
            self._samples.append(sample)

    def samples(self) -> list[Sample]:
        with self._lock:
            return sorted(self._samples, key=lambda s: s.stamp_ns)

    def latest(self) -> Sample | None:
        with self._lock:
            return self._samples[-1] if self._samples else None

    def speed(self) -> float:
        latest = self.latest()
        return 0.0 if latest is None else abs(latest.linear)


class Goal:
    """A GoTo goal sent in the background: the drill injects its fault while it runs."""

    def __init__(self, stack: Stack, x: float, y: float, timeout_s: float) -> None:
        self.answer: tuple[str, str] = ('unanswered', 'no answer yet')
        self._thread = stack.in_background(
            lambda: setattr(self, 'answer', stack.go_to(goal(x, y), timeout_s))
        )

    def wait(self, timeout_s: float) -> tuple[str, str]:
        self._thread.join(timeout_s)
        return self.answer


def released_driver(settings: Settings) -> dict:
    """The Go1 driver as released, its 2 ms zeroing window missed: nothing of its own stops
    it."""
    return {
        'driver_model': 'unitree_ros',
        'miss_reset_window': True,
        'command_timeout_s': settings.driver_timeout_s,
    }


def patched_driver(settings: Settings) -> dict:
    """The Go1 driver with the project's patch: zero after driver_timeout_s of silence."""
    return {'driver_model': 'unitree_ros_patched', 'command_timeout_s': settings.driver_timeout_s}


def start_driving(stack: Stack, driver: dict) -> Odometer:
    """The hall on /map, sim_base as `driver` at its start, safety_node and navigator_node,
    ready."""
    origin, cells = hall()
    grid: OccupancyGrid = occupancy_grid_msg(
        cells, MAP_RESOLUTION_M, origin, 'map', stack.node.get_clock().now().to_msg()
    )
    publisher = stack.node.create_publisher(OccupancyGrid, '/map', qos.latched())
    publisher.publish(grid)
    odometer = Odometer(stack)
    stack.start('sim_base_node', initial_pose=[*START, 0.0], rate_hz=SIM_BASE_HZ, **driver)
    stack.start('safety_node', command_timeout_s=SAFETY_TIMEOUT_S)
    stack.start('navigator_node')
    wait_until(odometer.latest, 60.0, "sim_base's odometry")
    stack.wait_ready('navigator_node')
    return odometer


def drive_far(stack: Stack, odometer: Odometer, settings: Settings, timeout_s: float) -> Goal:
    """The long goal, once the base moves at `drive_speed_mps`."""
    running = Goal(stack, *FAR, timeout_s)
    wait_until(
        lambda: odometer.speed() >= settings.drive_speed_mps,
        60.0,
        f'the base to drive at {settings.drive_speed_mps:g} m/s',
    )
    return running


def measure_stop(
    result: DrillResult, odometer: Odometer, fault_ns: int, bound_s: float, settings: Settings
) -> None:
    """Watch the base for `stop_watch_s` after the fault; a stop later than `bound_s` (or
    none) is a wrong outcome: the robot drove on."""
    speed = odometer.speed()
    time.sleep(max(0.0, fault_ns / 1e9 + settings.stop_watch_s - time.time()))
    stop = stop_after(odometer.samples(), fault_ns, STILL)
    if stop is None:
        result.wrong += 1
        result.note(
            f'still moving at {odometer.speed():.2f} m/s {settings.stop_watch_s:g} s after '
            f'the fault (bound {bound_s:.2f} s)'
        )
        return
    if stop.seconds > bound_s:
        result.wrong += 1
    result.note(
        f'stopped {stop.seconds:.2f} s after the fault at {speed:.2f} m/s '
        f'(bound {bound_s:.2f} s), '
        f'{stop.distance_m:.2f} m driven after it'
    )


def probe_short_goal(result: DrillResult, stack: Stack, odometer: Odometer, what: str) -> None:
    """One short goal ahead, which must be REACHED: the chain drives again."""
    here = odometer.latest()
    x = min(here.x + SHORT_M, HALL_M[0] - 1.0)
    result.requests += 1
    outcome, message = stack.go_to(goal(x, here.y), GOAL_TIMEOUT_S)
    result.answered += outcome != 'unanswered'
    if outcome != 'reached':
        result.wrong += 1
    result.note(f'{what}: a goal {x - here.x:.1f} m ahead came back {outcome} ({message})')


def ended_for_safety(outcome: str, message: str, here: Sample | None) -> bool:
    """Canceled because safety_node went silent, short of the goal: the only true end of a
    drive whose safety layer died under it. `here` is the base's last odometry."""
    at_goal = here is not None and np.hypot(here.x - FAR[0], here.y - FAR[1]) <= ARRIVED_M
    return outcome == 'canceled' and 'no state from safety_node' in message and not at_goal


def bound(timeout_s: float, settings: Settings) -> float:
    """The latest an e-stop's stop may come: the timeout that should stop the base, one
    odometry period to show it, and the margin."""
    return timeout_s + 1.0 / SIM_BASE_HZ + settings.stop_margin_s


# The drills -------------------------------------------------------------------------------
def kill_navigator_driving(stack: Stack, settings: Settings) -> DrillResult:
    """safety_node's watchdog must stop the base when the navigator dies mid-drive: the
    driver as released walks on at the last command."""
    result = DrillResult('kill -9 navigator_node while driving')
    odometer = start_driving(stack, released_driver(settings))
    running = drive_far(stack, odometer, settings, timeout_s=30.0)
    fault_ns = time.time_ns()
    stack.kill('navigator_node')
    result.injected += 1
    measure_stop(result, odometer, fault_ns, settings.stop_bound_s, settings)
    stack.start('navigator_node')
    stack.wait_ready('navigator_node')
    probe_short_goal(result, stack, odometer, 'after the restart')
    outcome, message = running.wait(30.0)
    result.note(f'the goal driven at the kill: {outcome} ({message}); its server died')
    finish(stack, result)
    return result


def kill_safety_driving(stack: Stack, settings: Settings) -> DrillResult:
    """Nothing of waymark is left between the navigator and the base: the patched driver's
    own timeout must stop it, and the navigator must stop driving."""
    result = DrillResult('kill -9 safety_node while driving')
    odometer = start_driving(stack, patched_driver(settings))
    running = drive_far(stack, odometer, settings, timeout_s=GOAL_TIMEOUT_S)
    fault_ns = time.time_ns()
    stack.kill('safety_node')
    result.injected += 1
    measure_stop(result, odometer, fault_ns, settings.stop_bound_s, settings)
    result.note(f"the patched driver's command timeout: {settings.driver_timeout_s:g} s")
    result.requests += 1
    outcome, message = running.wait(GOAL_TIMEOUT_S + 30.0)
    result.answered += outcome != 'unanswered'
    if not ended_for_safety(outcome, message, odometer.latest()):
        result.wrong += 1
    result.note(f'the goal driven at the kill: {outcome} ({message})')
    stack.start('safety_node')
    stack.wait_ready('safety_node')
    probe_short_goal(result, stack, odometer, 'after the restart')
    finish(stack, result)
    return result


def kill_all_driving(stack: Stack, settings: Settings) -> DrillResult:
    """Every waymark process killed at once: only the patched driver is left to stop."""
    result = DrillResult('kill -9 every waymark node while driving')
    odometer = start_driving(stack, patched_driver(settings))
    drive_far(stack, odometer, settings, timeout_s=GOAL_TIMEOUT_S)
    waymark = [name for name in stack.nodes if name != 'sim_base_node']
    fault_ns = time.time_ns()
    for name in waymark:
        stack.kill(name)
    result.injected += len(waymark)
    measure_stop(result, odometer, fault_ns, settings.stop_bound_s, settings)
    result.note(f'killed {", ".join(sorted(waymark))}; the driver stopped the base')
    for name in waymark:
        stack.start(name)
    stack.wait_ready('safety_node')
    stack.wait_ready('navigator_node')
    probe_short_goal(result, stack, odometer, 'after the restart')
    finish(stack, result)
    return result


def e_stop_driving(stack: Stack, settings: Settings) -> DrillResult:
    """The e-stop halts the drive at once, aborts its goal, refuses goals, and releases."""
    result = DrillResult('e-stop while driving')
    e_stop = stack.node.create_publisher(Bool, 'e_stop', qos.latched())
    odometer = start_driving(stack, released_driver(settings))
    wait_until(lambda: e_stop.get_subscription_count() >= 2, 60.0, 'safety and navigator on e_stop')
    e_stop.publish(Bool(data=False))
    time.sleep(MATCH_SETTLE_S)
    running = drive_far(stack, odometer, settings, timeout_s=GOAL_TIMEOUT_S)
    fault_ns = time.time_ns()
    e_stop.publish(Bool(data=True))
    result.injected += 1
    measure_stop(result, odometer, fault_ns, bound(0.0, settings), settings)

    result.requests += 1
    outcome, message = running.wait(GOAL_TIMEOUT_S + 30.0)
    result.answered += outcome != 'unanswered'
    if outcome != 'canceled' or 'e-stop' not in message:
        result.wrong += 1
    result.note(f'the goal driven at the e-stop: {outcome} ({message})')

    engaged_ns = time.time_ns()
    here = odometer.latest()
    refusals = set()
    for _ in range(settings.e_stop_goals):
        result.injected += 1
        result.requests += 1
        outcome, message = stack.go_to(goal(here.x + SHORT_M, here.y), 60.0)
        result.answered += outcome != 'unanswered'
        if outcome != 'refused' or 'e-stop' not in message:
            result.wrong += 1
        refusals.add(f'{outcome} ({message})')
    result.note(f'{settings.e_stop_goals} goals while engaged: {"; ".join(sorted(refusals))}')
    moved = moved_m(odometer.samples(), engaged_ns)
    if moved > STILL:
        result.wrong += 1
        result.note(f'the base moved {moved:.2f} m while the e-stop was engaged')

    e_stop.publish(Bool(data=False))
    time.sleep(MATCH_SETTLE_S)  # both listeners have the release before the next goal
    probe_short_goal(result, stack, odometer, 'after the release')
    finish(stack, result)
    return result
