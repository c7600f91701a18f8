# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""navigator_node's Explore action over real DDS, closed loop with a map that grows.

sim_base_node is the robot. The test process plays the SLAM: it knows the true floor plan
and, from every odometry message, marks as known what a 360-degree range sensor would see
from there (rays stop at walls), publishing the map as it grows. Exploration must uncover
the reachable rooms, end by itself when no frontier is left, never drive into a wall, and
keep to its budget and to a cancel.
"""

from __future__ import annotations

import math
import threading

import numpy as np
import pytest
from nav_msgs.msg import OccupancyGrid, Odometry
from rclpy.action import ActionClient
from visualization_msgs.msg import MarkerArray

from waymark_interfaces.action import Explore
from waymark_ros.ros import qos
from waymark_ros.ros.navigation_msgs import occupancy_grid_msg
from waymark_testing.actions import connect, result_of, send
from waymark_testing.ros_harness import wait_until

pytestmark = pytest.mark.dds

RESOLUTION = 0.05
START = (1.5, 1.5)
SENSOR_RANGE_M = 2.5
RAYS = 360


def floor_plan() -> np.ndarray:
    """Occupancy (0 free, 100 wall) of a 10 m x 6 m flat: two rooms joined by a 1.2 m door,
    and a sealed closet whose inside nobody can reach (nor see)."""
    cells = np.zeros((120, 200), dtype=np.int8)
    cells[:2, :] = cells[-2:, :] = cells[:, :2] = cells[:, -2:] = 100
    cells[:, 99:101] = 100  # wall at x = 5 m ...
    cells[60:84, 99:101] = 0  # ... with a door at y 3.0..4.2 m
    cells[10:40, 150:180] = 100  # the closet: x 7.5..9 m, y 0.5..2 m
    cells[12:38, 152:178] = 0
    return cells


class Mapper:
    """The SLAM stand-in: reveals the floor plan around each odometry pose, along rays."""

    def __init__(self, node, truth: np.ndarray) -> None:
        self.truth = truth
        self.known = np.zeros(truth.shape, dtype=bool)
        self.trail: list[tuple[float, float]] = []
        self._lock = threading.Lock()
        self._changed = False
        self._publisher = node.create_publisher(OccupancyGrid, '/map', qos.latched())
        self._stamp = node.get_clock
        self.reveal(*START)
        self._publish()
        node.create_subscription(Odometry, '/odom', self._on_odometry, 10)
        self._timer = node.create_timer(0.5, self._publish)

    def reveal(self, x: float, y: float) -> None:
        angles = np.linspace(0.0, math.tau, RAYS, endpoint=False)
        steps = np.arange(0.0, SENSOR_RANGE_M, RESOLUTION / 2)
        xs = x + np.cos(angles)[:, None] * steps[None, :]
        ys = y + np.sin(angles)[:, None] * steps[None, :]
        rows = np.clip(np.floor(ys / RESOLUTION).astype(int), 0, self.truth.shape[0] - 1)
        cols = np.clip(np.floor(xs / RESOLUTION).astype(int), 0, self.truth.shape[1] - 1)
        wall = self.truth[rows, cols] > 50
        # Each ray sees up to and including the first wall cell it meets.
        first_wall = np.where(wall.any(axis=1), wall.argmax(axis=1), steps.size - 1)
        seen = np.arange(steps.size)[None, :] <= first_wall[:, None]
        with self._lock:
            before = int(self.known.sum())
            self.known[rows[seen], cols[seen]] = True
            self._changed |= int(self.known.sum()) != before

    def _on_odometry(self, msg: Odometry) -> None:
        position = msg.pose.pose.position
        self.trail.append((position.x, position.y))
        self.reveal(position.x, position.y)

    def _publish(self) -> None:
        with self._lock:
            cells = np.where(self.known, self.truth, -1).astype(np.int8)
            self._changed = False
        self._publisher.publish(
            occupancy_grid_msg(cells, RESOLUTION, (0.0, 0.0), 'map', self._stamp().now().to_msg())
        )

    def known_fraction(self, region: np.ndarray) -> float:
        with self._lock:
            return float(self.known[region].sum() / region.sum())


def reachable_free(truth: np.ndarray) -> np.ndarray:
    """Free cells connected to the start: what a complete exploration must have seen."""
    from scipy import ndimage

    labels, _ = ndimage.label(truth == 0)
    row, col = math.floor(START[1] / RESOLUTION), math.floor(START[0] / RESOLUTION)
    return labels == labels[row, col]


@pytest.fixture
def flat(ros, launch):
    truth = floor_plan()
    mapper = Mapper(ros.node, truth)
    launch(
        'sim_base_node',
        initial_pose=[START[0], START[1], 0.0],
        collision_map=True,
        max_linear=1.5,
    )
    stats = ros.latest_json('sim_base/stats')
    wait_until(lambda: stats.get('map_loaded'), 30, 'sim_base_node has no map')
    return truth, mapper, stats


def start_explorer(ros, launch, **parameters) -> ActionClient:
    settings = {
        'reliable_input': True,
        'robot_radius_m': 0.3,
        'goal_timeout_s': 60.0,
        'follower.max_linear': 1.0,
        'follower.max_linear_accel': 1.0,
        'follower.max_angular': 1.5,
        **parameters,
    }
    launch('navigator_node', **settings)
    client = ActionClient(ros.node, Explore, 'explore')
    connect(client)
    return client


def explore(client, budget_s: float = 0.0, feedback=None):
    return send(client, Explore.Goal(time_budget_s=budget_s), feedback)


@pytest.mark.parametrize(
    'seen_radius_m', [0.0, 1.0], ids=['each_leg_to_its_goal', 'legs_end_once_seen']
)
def test_exploration_uncovers_every_reachable_room_and_stops_by_itself(
    ros, launch, flat, seen_radius_m
):
    truth, mapper, stats = flat
    region = reachable_free(truth)
    before = mapper.known_fraction(region)
    markers = ros.collect(MarkerArray, 'navigation_markers', qos.latched())
    client = start_explorer(ros, launch, **{'explore.seen_radius_m': seen_radius_m})
    feedback: list = []
    result = result_of(explore(client, feedback=lambda f: feedback.append(f.feedback)), 240)
    print(  # the figures compared in docs/navigation.md (pytest -s)
        f'\nexploration, seen_radius_m {seen_radius_m}: {result.elapsed_s:.1f} s, '
        f'{stats["distance_m"]:.1f} m walked, {result.goals_reached} goals reached, '
        f'{result.goals_failed} failed, {mapper.known_fraction(region):.1%} seen'
    )

    assert result.outcome == Explore.Result.OUTCOME_COMPLETE, result.message
    assert before < 0.5
    assert mapper.known_fraction(region) > 0.97, result.message
    assert result.goals_reached >= 2 and result.goals_failed <= 1, result.message
    assert 'none reachable' in result.message or 'no frontier left' in result.message
    # The second room is only seen through the door: the robot went there.
    assert any(x > 5.5 for x, _ in mapper.trail)
    # Never into a wall: the base saw no collision, and the path kept the robot's clearance.
    assert stats['collisions'] == 0
    cells = np.floor(np.array(mapper.trail)[:, ::-1] / RESOLUTION).astype(int)
    assert (truth[cells[:, 0], cells[:, 1]] == 0).all()
    # Feedback named real frontier goals and counted up; RViz was shown the frontiers.
    assert feedback and max(f.goals_reached for f in feedback) >= 1
    assert all(f.current_goal.header.frame_id == 'map' for f in feedback)
    assert any(m.ns == 'frontiers' for array in markers for m in array.markers)


def test_exploration_ends_when_its_time_budget_is_spent(ros, launch, flat):
    _, mapper, _ = flat
    client = start_explorer(ros, launch)
    result = result_of(explore(client, budget_s=4.0), 60)
    assert result.outcome == Explore.Result.OUTCOME_BUDGET_SPENT, result.message
    assert 'time budget spent' in result.message
    assert result.frontiers_left >= 1
    assert 3.5 < result.elapsed_s < 15.0
    # The robot stands still afterwards.
    trail = len(mapper.trail)
    wait_until(lambda: len(mapper.trail) > trail + 20, 10, 'no odometry')
    last = np.array(mapper.trail[-10:])
    assert np.ptp(last, axis=0).max() < 1e-6


def test_a_cancelled_exploration_stops_the_robot(ros, launch, flat):
    _, mapper, _ = flat
    client = start_explorer(ros, launch)
    feedback: list = []
    handle = explore(client, feedback=lambda f: feedback.append(f.feedback))
    wait_until(lambda: len(feedback) > 5, 30, 'exploration never started driving')
    cancel = handle.cancel_goal_async()
    wait_until(cancel.done, 10, 'cancel not answered')
    assert result_of(handle, 30).outcome == Explore.Result.OUTCOME_CANCELED
    trail = len(mapper.trail)
    wait_until(lambda: len(mapper.trail) > trail + 20, 10, 'no odometry')
    assert np.ptp(np.array(mapper.trail[-10:]), axis=0).max() < 1e-6


def test_exploration_without_a_map_fails_with_the_reason(ros, launch):
    client = start_explorer(ros, launch, input_wait_s=1.0)
    result = result_of(explore(client), 30)
    assert result.outcome == Explore.Result.OUTCOME_FAILED
    assert 'no map received yet on /map' in result.message
