# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The bag replay tool over real DDS: lossless delivery, clear errors, missing types."""

from __future__ import annotations

import pytest
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore
from std_msgs.msg import String

from waymark_ros.tools.replay import ReplayError, replay
from waymark_testing.ros_harness import wait_until

pytestmark = pytest.mark.dds

TYPES = get_typestore(Stores.ROS2_JAZZY)
T0 = 1_768_471_200_000_000_000


@pytest.fixture
def bag(tmp_path):
    path = tmp_path / 'bag'
    with Writer(path, version=8, storage_plugin=StoragePlugin.MCAP) as writer:
        chatter = writer.add_connection('/chatter', 'std_msgs/msg/String', typestore=TYPES)
        tf = writer.add_connection('/tf_static', 'tf2_msgs/msg/TFMessage', typestore=TYPES)
        empty_tf = TYPES.types['tf2_msgs/msg/TFMessage'](transforms=[])
        writer.write(tf, T0, TYPES.serialize_cdr(empty_tf, 'tf2_msgs/msg/TFMessage'))
        for i in range(300):
            msg = TYPES.types['std_msgs/msg/String'](data=f'm{i}')
            writer.write(chatter, T0 + i * 1000, TYPES.serialize_cdr(msg, 'std_msgs/msg/String'))
    return path


def test_replays_everything_in_order_and_skips_types_not_installed(ros, bag):
    from waymark_ros.ros import qos

    received = ros.collect(String, '/chatter', qos.sensor_input(True, 10))
    report = replay(ros.node, bag, rate=0.0, wait_subscribers_s=10.0)
    assert report.published['/chatter'] == 300
    assert report.all_acknowledged
    wait_until(lambda: len(received) == 300, 10, 'not every message arrived')
    assert [m.data for m in received] == [f'm{i}' for i in range(300)]
    try:
        import tf2_msgs  # noqa: F401
    except ImportError:
        assert report.skipped == {'/tf_static': 'tf2_msgs/msg/TFMessage'}


def test_waits_for_a_status_topic_before_playing_and_plays_anyway_when_it_stays_silent(ros, bag):
    """memory_node's stats come once its memory is open; a bag played before that can end
    before anything stores it. The replay node spins itself while it waits, so it is a node
    of its own here, outside the harness's executor."""
    import threading
    import time

    import rclpy

    from waymark_ros.ros import qos

    received = ros.collect(String, '/chatter', qos.sensor_input(True, 10))
    status = ros.node.create_publisher(String, '/status', qos.latched())
    publish_at = time.monotonic() + 1.5
    threading.Timer(1.5, lambda: status.publish(String(data='{"frames": 0}'))).start()
    player = rclpy.create_node('replay_under_test', context=ros.context)
    try:
        report = replay(player, bag, rate=0.0, wait_subscribers_s=30.0, wait_ready=['/status'])
        assert report.not_ready == [] and report.published['/chatter'] == 300
        assert time.monotonic() >= publish_at  # it did wait for the status
        silent = replay(player, bag, rate=0.0, wait_subscribers_s=1.0, wait_ready=['/silent'])
        assert silent.not_ready == ['/silent'] and silent.published['/chatter'] == 300
    finally:
        player.destroy_node()
    wait_until(lambda: len(received) == 600, 10, 'not every message arrived')


def test_topics_asked_for_must_exist_and_be_installed(ros, bag):
    with pytest.raises(ReplayError, match=r'\[\'/camera\'\] are not in .*/chatter \[std_msgs'):
        replay(ros.node, bag, topics=['/camera'])
    try:
        import tf2_msgs  # noqa: F401
    except ImportError:
        with pytest.raises(ReplayError, match='tf2_msgs/msg/TFMessage is not available'):
            replay(ros.node, bag, topics=['/tf_static'])


def test_presets_name_the_topics_to_replay_layered_as_the_launch_layers_them(capsys):
    from waymark_ros.tools.replay import main, preset_topics

    realsense = ['/camera/camera/color/image_raw/compressed', '/Odometry']
    assert preset_topics(['realsense_d455']) == realsense
    zed_image = '/zed/zed_node/rgb/color/rect/image/compressed'
    assert preset_topics(['zed2i']) == [zed_image, '/zed/zed_node/pose_with_covariance']
    assert preset_topics(['zed2i', 'point_lio_mid360']) == [zed_image, '/aft_mapped_to_init']
    assert main(['some_bag', '--preset', 'zed3']) == 2
    assert "no sensor preset 'zed3'" in capsys.readouterr().err


def test_the_replay_waits_for_every_subscriber_it_can_serve(ros):
    """Every volatile subscriber the graph knows counts (two nodes on /odom must both be
    matched before the first pose goes out); a transient-local one, which a volatile
    writer never serves, does not hold the replay up."""
    import rclpy

    from waymark_ros.ros import qos
    from waymark_ros.tools.replay import _readers

    other = rclpy.create_node('second_listener', context=ros.context)
    try:
        ros.collect(String, '/heard_twice', qos.sensor_input(True, 10))
        other.create_subscription(String, '/heard_twice', lambda _m: None, 10)
        other.create_subscription(String, '/heard_twice', lambda _m: None, qos.latched())
        wait_until(lambda: ros.node.count_subscribers('/heard_twice') == 3, 10, 'graph')
        assert _readers(ros.node, '/heard_twice') == 2
        assert _readers(ros.node, '/heard_by_nobody') == 1  # still waits for a first one
    finally:
        other.destroy_node()
