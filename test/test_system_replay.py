# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The whole path over real DDS: a rosbag2 written with rosbags is replayed through all
four nodes, questions are asked through the client API (waymark_ros.client), the answers'
goals must show the asked-for sign, and a simulated robot must drive there and see it: the
floor plan is the map, `sim_base_node` takes over the pose where the tour ended,
navigator_node drives it through safety_node. A goal off the map is refused."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import rclpy
from nav_msgs.msg import OccupancyGrid
from std_msgs.msg import String

from waymark.geometry import Pose
from waymark.sim.bag import write_bag
from waymark.sim.visibility import sees
from waymark.sim.world import build_demo_world, occupancy_grid
from waymark_interfaces.msg import Answer
from waymark_ros.client import Waymark
from waymark_ros.ros import qos
from waymark_ros.ros.conversions import pose_from_msg
from waymark_ros.ros.navigation_msgs import occupancy_grid_msg
from waymark_ros.tools.replay import replay
from waymark_testing.ros_harness import wait_until

pytestmark = pytest.mark.dds

CONFIG = Path(__file__).resolve().parents[1] / 'config' / 'demo.yaml'
# The tour faces COFFEE SHOP, LIBRARY and SUITE 204 in its first 90 s (seed 1).
ASKED = {'COFFEE SHOP': 'Where is the coffee shop?', 'SUITE 204': 'Take me to suite 204.'}
TOLERANCE_M = 4.0


def test_bag_replay_through_all_nodes_answers_and_the_robot_drives_there(ros, launch, tmp_path):
    world = build_demo_world(seed=1)
    info = write_bag(world, tmp_path / 'bag', camera_rate_hz=3.0, seed=1, max_duration_s=90.0)
    camera = json.loads(info.ground_truth.read_text())['camera']

    launch('memory_node', params_file=CONFIG, data_dir=str(tmp_path / 'memory'))
    launch(
        'capture_node', params_file=CONFIG, session='system', camera_extrinsic=camera['extrinsic']
    )
    launch(
        'reasoner_node',
        params_file=CONFIG,
        **{'traces.dir': str(tmp_path / 'traces'), 'memory.data_dir': str(tmp_path / 'memory')},
    )
    launch('navigator_node', params_file=CONFIG)
    outcomes = ros.collect(String, 'navigation/outcome', qos.latched(10))
    # Out of the harness's executor: the client spins it while it waits.
    user = rclpy.create_node('waymark_user', context=ros.context)
    waymark = Waymark(user)
    capture = ros.latest_json('capture/stats')
    memory = ros.latest_json('memory/stats')
    wait_until(lambda: 'frames' in memory and 'buffered_poses' in capture, 120, 'nodes up')

    report = replay(ros.node, info.path, rate=0.0, wait_subscribers_s=30.0)
    assert report.all_acknowledged
    images = info.message_counts['/camera/image/compressed']
    assert report.published['/camera/image/compressed'] == images
    wait_until(
        lambda: capture.get('images_received') == images and capture.get('images_pending') == 0,
        60,
        'capture_node did not take every image',
    )
    keyframes = capture['keyframes_published']
    wait_until(lambda: memory.get('keyframes_ingested') == keyframes, 600, 'memory ingest')
    assert memory['frames'] == keyframes
    assert capture.get('image_without_pose', 0) == 0  # every image found its pose

    (x0, y0), cells = occupancy_grid(world, 0.05)
    floor_plan = ros.node.create_publisher(OccupancyGrid, '/map', qos.latched())
    stamp = ros.node.get_clock().now().to_msg()
    floor_plan.publish(occupancy_grid_msg(cells, 0.05, (x0, y0), 'map', stamp))
    end = json.loads(info.ground_truth.read_text())['trajectory'][-1]
    launch('sim_base_node', initial_pose=[end['x'], end['y'], end['yaw']])
    launch('safety_node', params_file=CONFIG)  # between the navigator and the base
    extrinsic = Pose(tuple(camera['extrinsic'][:3]), tuple(camera['extrinsic'][3:]))

    assert waymark.wait_until_ready(timeout_s=60).ready
    for target, question in ASKED.items():
        sign = next(s for s in world.signs if s.text == target)
        result = waymark.ask(question, go=True, timeout_s=60, drive_timeout_s=180)
        assert result.ok, result.message
        answer = result.answer
        assert answer.kind == Answer.KIND_POSITION and answer.has_goal and answer.used_fallback
        assert answer.evidence[0].text.replace(' ', '') == target.replace(' ', '')
        goal = pose_from_msg(answer.goal.pose)
        distance = math.dist(goal.position[:2], sign.position[:2])
        assert distance <= TOLERANCE_M, f'{target}: goal {distance:.2f} m from the sign'
        assert sees(world, goal, sign, camera['hfov_deg']), f'{target} not in view from the goal'
        assert result.message.endswith('goal sent to the navigator')

        drive = result.drive
        assert drive is not None and drive.reached, drive

        def records(trace_id=answer.trace_id):
            return [r for r in (json.loads(m.data) for m in outcomes) if r['trace_id'] == trace_id]

        wait_until(records, 10, f'{target}: no outcome record on the harness')
        assert len(records()) == 1  # one record per drive
        x, y, yaw = drive.final
        assert math.dist((x, y), goal.position[:2]) <= 0.3
        eye = Pose.from_xyz_yaw(x, y, 0.0, yaw).compose(extrinsic)
        assert sees(world, eye, sign, camera['hfov_deg']), f'{target} not in view on arrival'

    off_the_map = waymark.go_to(x0 - 100.0, y0 - 100.0, timeout_s=60)
    assert off_the_map.outcome == 'refused', off_the_map
    waymark.close()
    user.destroy_node()
