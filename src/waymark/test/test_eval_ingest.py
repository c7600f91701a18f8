# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Direct ingest of a bag: topic discovery, clear errors, and keyframes in memory."""

import numpy as np
import pytest
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore

from waymark.evaluation.ingest import (
    BagTopicError,
    find_topics,
    ingest_bag,
    ingest_problem,
    summarize,
)
from waymark.memory.ingest.capture import CaptureConfig
from waymark.memory.ingest.keyframes import KeyframePolicy
from waymark.memory.search_query import Mode, SearchQuery
from waymark.memory.service import MemoryService
from waymark.memory.storage.image_codec import UnsupportedEncodingError
from waymark.memory.storage.image_store import ImageStore
from waymark.memory.storage.store import MemoryStore

T0 = 1_768_471_200_000_000_000
TYPES = get_typestore(Stores.ROS2_JAZZY)
T = TYPES.types


def header(stamp_ns: int, frame: str):
    sec, nanosec = divmod(stamp_ns, 1_000_000_000)
    return T['std_msgs/msg/Header'](
        stamp=T['builtin_interfaces/msg/Time'](sec=sec, nanosec=nanosec), frame_id=frame
    )


def pose_stamped(stamp_ns: int, x: float):
    pose = T['geometry_msgs/msg/Pose'](
        position=T['geometry_msgs/msg/Point'](x=x, y=0.0, z=0.0),
        orientation=T['geometry_msgs/msg/Quaternion'](x=0.0, y=0.0, z=0.0, w=1.0),
    )
    return T['geometry_msgs/msg/PoseStamped'](header=header(stamp_ns, 'map'), pose=pose)


def raw_image(stamp_ns: int, encoding: str):
    data = np.full(4 * 6 * 2, 128, np.uint8)
    return T['sensor_msgs/msg/Image'](
        header=header(stamp_ns, 'camera'),
        height=4,
        width=6,
        encoding=encoding,
        is_bigendian=0,
        step=12,
        data=data,
    )


def write(path, messages):
    """messages: (topic, type, stamp, msg) in time order."""
    with Writer(path, version=8, storage_plugin=StoragePlugin.MCAP) as writer:
        connections = {}
        for topic, kind, stamp, msg in messages:
            if topic not in connections:
                connections[topic] = writer.add_connection(topic, kind, typestore=TYPES)
            writer.write(connections[topic], stamp, TYPES.serialize_cdr(msg, kind))


def memory(tmp_path):
    return MemoryService(MemoryStore(str(tmp_path / 'm.db'), {}), ImageStore(tmp_path), [])


def test_topics_are_found_or_the_error_lists_what_the_bag_has():
    available = {'/cam': 'sensor_msgs/msg/CompressedImage', '/odom': 'nav_msgs/msg/Odometry'}
    topics = find_topics(available)
    assert (topics.image, topics.image_type, topics.pose, topics.pose_type) == (
        '/cam',
        'compressed',
        '/odom',
        'odometry',
    )
    with pytest.raises(BagTopicError, match=r'camera topic /camera.*the bag has: /cam \['):
        find_topics(available, image_topic='/camera')
    two = {**available, '/cam2': 'sensor_msgs/msg/Image'}
    with pytest.raises(BagTopicError, match='several: /cam, /cam2'):
        find_topics(two)
    with pytest.raises(BagTopicError, match=r'pose topic.*none'):
        find_topics({'/cam': 'sensor_msgs/msg/CompressedImage', '/chatter': 'std_msgs/msg/String'})


def test_a_bag_without_camera_and_pose_topics_is_a_clear_error(tmp_path):
    bag = tmp_path / 'chatter'
    write(bag, [('/chatter', 'std_msgs/msg/String', T0, T['std_msgs/msg/String'](data='hi'))])
    with pytest.raises(BagTopicError, match=r'/chatter \[std_msgs/msg/String\]'):
        ingest_bag(bag, memory(tmp_path), CaptureConfig())


def test_an_unsupported_image_encoding_is_named(tmp_path):
    bag = tmp_path / 'yuv'
    write(
        bag,
        [
            ('/pose', 'geometry_msgs/msg/PoseStamped', T0, pose_stamped(T0, 0.0)),
            ('/image', 'sensor_msgs/msg/Image', T0 + 1, raw_image(T0 + 1, 'yuv422_yuy2')),
        ],
    )
    with pytest.raises(UnsupportedEncodingError, match="'yuv422_yuy2'"):
        ingest_bag(bag, memory(tmp_path), CaptureConfig())


def test_raw_images_and_pose_stamped_become_keyframes(tmp_path):
    bag = tmp_path / 'raw'
    messages = []
    for i in range(5):
        stamp = T0 + i * 1_000_000_000
        messages.append(
            ('/pose', 'geometry_msgs/msg/PoseStamped', stamp, pose_stamped(stamp, float(i)))
        )
        messages.append(
            ('/image', 'sensor_msgs/msg/Image', stamp + 10, raw_image(stamp + 10, 'mono8'))
        )
    write(bag, messages)
    service = memory(tmp_path)
    report = ingest_bag(bag, service, CaptureConfig(session='raw'))
    assert (report.keyframes, report.ingested) == (5, 5)
    assert report.counts['images_received'] == 5 and report.counts['poses_received'] == 5
    hits = service.search(SearchQuery(Mode.TIME, 10, stamp_ns=T0))
    assert [round(h.record.x, 6) for h in hits] == [0.0, 1.0, 2.0, 3.0, 4.0]
    service.store.close()


def pose_with_covariance(stamp_ns: int, x: float, variance: float):
    stamped = pose_stamped(stamp_ns, x)
    covariance = np.zeros(36)
    covariance[[0, 7, 14]] = variance
    return T['geometry_msgs/msg/PoseWithCovarianceStamped'](
        header=stamped.header,
        pose=T['geometry_msgs/msg/PoseWithCovariance'](pose=stamped.pose, covariance=covariance),
    )


def test_the_covariance_gates_tracking_as_capture_node_does_and_the_summary_says_so(tmp_path):
    bag = tmp_path / 'covariance'
    kind = 'geometry_msgs/msg/PoseWithCovarianceStamped'
    messages = []
    for i in range(6):
        stamp = T0 + i * 1_000_000_000
        variance = 50.0 if i >= 2 else 0.01  # SLAM lost track after 2 s
        messages.append(('/pose', kind, stamp, pose_with_covariance(stamp, float(i), variance)))
        messages.append(
            ('/image', 'sensor_msgs/msg/Image', stamp + 10, raw_image(stamp + 10, 'mono8'))
        )
    write(bag, messages)
    service = memory(tmp_path)
    policy = KeyframePolicy(max_interval_s=1.0)  # one keyframe a second while lost
    report = ingest_bag(bag, service, CaptureConfig(session='cov', policy=policy))
    assert report.topics.pose_type == 'pose_with_covariance'
    valid = [h.record.pose_valid for h in service.search(SearchQuery(Mode.TIME, 10, stamp_ns=T0))]
    service.store.close()
    assert valid[:2] == [True, True] and len(valid) > 3 and not any(valid[2:])
    summary = summarize(report.counts)
    assert summary['poses_rejected'] == {'tracking lost (covariance)': 4}
    assert (summary['poses'], summary['poses_accepted']) == (6, 2)
    assert summary['tracking_lost_spans'] == 1
    assert summary['keyframes_pose_valid'] == 2 < summary['keyframes']
    sensors = {
        'map_frame': 'map',
        'map_frame_from': 'preset',
        'pose_frames': {'map': 6},
        'pose_topic': '/pose',
        'image_topic': '/image',
    }
    problem = ingest_problem(summary, sensors, 0.5)
    assert problem.startswith(f'2 of {summary["keyframes"]} keyframes have a valid pose: 4 of 6')
    assert 'tracking.max_position_variance' in problem and '\n' not in problem
    assert ingest_problem(summary, sensors, 0.2) == ''


class Collector:
    """Keeps the keyframes ingest_bag hands to memory."""

    def __init__(self) -> None:
        self.keyframes = []

    def ingest(self, keyframe) -> None:
        self.keyframes.append(keyframe)


def test_a_depth_topic_in_the_bag_gives_every_keyframe_its_depth_grid(tmp_path):
    from waymark.sim.bag import DEPTH_TOPIC, IMAGE_TOPICS, write_bag
    from waymark.sim.world import build_demo_world

    info = write_bag(
        build_demo_world(0),
        tmp_path / 'bag',
        width=160,
        height=120,
        max_duration_s=4.0,
        depth_camera=True,
    )
    collector = Collector()
    report = ingest_bag(info.path, collector, CaptureConfig(), depth_topic=DEPTH_TOPIC[0])
    assert report.topics.depth == DEPTH_TOPIC[0]
    assert collector.keyframes and report.counts['depth_undecodable'] == 0
    assert report.counts['keyframes_with_depth'] == len(collector.keyframes)
    for keyframe in collector.keyframes:
        metres = np.asarray(keyframe.depth.metres)
        # Indoors: every cell sees a wall, the floor or the ceiling within the range.
        assert np.all(np.isfinite(metres)) and np.all((metres > 0.2) & (metres < 20.0))
    # A bag without the topic ingests as before, without depth.
    plain = Collector()
    report = ingest_bag(
        info.path, plain, CaptureConfig(), image_topic=IMAGE_TOPICS['jpeg'][0], depth_topic='/x'
    )
    assert report.topics.depth == ''
    assert [k.stamp_ns for k in plain.keyframes] == [k.stamp_ns for k in collector.keyframes]
    assert all(k.depth is None for k in plain.keyframes)


def clock_bag(path, pose_offset_ns: int) -> None:
    """10 s of images at 10 Hz and poses at 20 Hz, received as stamped, except that the
    poses are stamped by a clock `pose_offset_ns` off."""
    messages = []
    for i in range(200):
        t = T0 + i * 50_000_000
        stamp = t + pose_offset_ns
        messages.append(('/pose', 'geometry_msgs/msg/PoseStamped', t, pose_stamped(stamp, i / 20)))
        if i % 2:
            messages.append(('/image', 'sensor_msgs/msg/Image', t + 10, raw_image(t, 'mono8')))
    write(path, messages)


def test_the_summary_reports_the_clock_offset_and_flags_it_past_the_limit(tmp_path):
    policy = KeyframePolicy(min_interval_s=0.0, max_interval_s=1.0, min_distance_m=0.5)
    clock_bag(tmp_path / 'offset', -30_000_000_000)
    (tmp_path / 'a').mkdir()
    offset = ingest_bag(
        tmp_path / 'offset',
        memory(tmp_path / 'a'),
        CaptureConfig(session='offset', policy=policy),
    )
    summary = summarize({**offset.counts, **offset.clock})
    assert summary['clocks_disagree'] is True
    assert summary['clock_offset_s'] == pytest.approx(30.0, abs=0.01)
    assert summary['keyframes_pose_valid'] == 0 < summary['keyframes']
    sensors = {'map_frame': 'map', 'pose_frames': {'map': 200}, 'image_topic': '/image'}
    sensors |= {'pose_topic': '/pose'}
    problem = ingest_problem(summary, sensors, 0.5)
    assert 'PAST clock.max_offset_s 0.5 s' in problem and 'docs/clocks.md' in problem
    assert 'image minus pose +30.000 s' in problem

    clock_bag(tmp_path / 'agree', 0)
    (tmp_path / 'b').mkdir()
    agree = ingest_bag(
        tmp_path / 'agree',
        memory(tmp_path / 'b'),
        CaptureConfig(session='agree', policy=policy),
    )
    summary = summarize({**agree.counts, **agree.clock})
    assert summary['clocks_disagree'] is False and abs(summary['clock_offset_s']) < 0.01
    assert summary['keyframes_pose_valid'] == summary['keyframes'] > 0
    assert ingest_problem(summary, sensors, 0.5) == ''
