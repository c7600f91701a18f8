# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Acknowledged delivery from capture_node to memory_node over real DDS: a killed
memory_node or capture_node loses no keyframe and splits no session, and what the
journal holds at start is all ingested, in order."""

from __future__ import annotations

import signal

import cv2
import numpy as np
import pytest
from nav_msgs.msg import Odometry
from sensor_msgs.msg import CompressedImage

from waymark.memory.ingest.admission import KeyframeRules
from waymark.memory.ingest.journal import KeyframeJournal
from waymark_interfaces.msg import Keyframe as KeyframeMsg
from waymark_interfaces.msg import KeyframeAck
from waymark_interfaces.srv import ListSessions
from waymark_ros.ros import qos
from waymark_ros.ros.conversions import ns_to_stamp
from waymark_ros.ros.memory_msgs import keyframe_from_msg
from waymark_testing.ros_harness import wait_for_subscriber, wait_until
from waymark_testing.signs import SIGNS, T0, S, keyframe, search

pytestmark = pytest.mark.dds

MS = 1_000_000
STEP_NS = 500 * MS  # one image, and so one keyframe, per 0.5 s of recording


def start_memory(ros, launch, data_dir, **params):
    # No views: what is tested is delivery, and the embedder would only slow the starts.
    node = launch('memory_node', data_dir=str(data_dir), ocr=False, text_model='', **params)
    stats = ros.latest_json('memory/stats')
    wait_until(lambda: 'frames' in stats, 90, 'memory_node did not start')
    return node, stats


def start_capture(ros, launch, state_dir, **params):
    node = launch(
        'capture_node',
        state_dir=str(state_dir),
        reliable_input=True,
        **{
            'keyframe.min_interval_s': 0.0,
            'keyframe.max_interval_s': 0.0,
            'keyframe.min_distance_m': 0.3,
            'outbox.resend_initial_s': 1.0,
            'outbox.resend_max_s': 2.0,
        },
        **params,
    )
    stats = ros.latest_json('capture/stats')
    wait_until(lambda: 'outbox_pending' in stats, 60, 'capture_node did not start')
    return node, stats


class Camera:
    """Images and odometry of a robot driving along x at 1 m/s: every image a keyframe."""

    def __init__(self, ros) -> None:
        profile = qos.sensor_input(True, 100)
        self.odom = ros.node.create_publisher(Odometry, '/odom', profile)
        topic = '/camera/image/compressed'
        self.images = ros.node.create_publisher(CompressedImage, topic, profile)

    def drive(self, first: int, count: int) -> None:
        wait_for_subscriber(self.odom, 'odometry subscriber')
        wait_for_subscriber(self.images, 'image subscriber')
        for i in range(first, first + count):
            stamp = T0 + i * STEP_NS
            self.odom.publish(odometry(stamp - 50 * MS))
            image = CompressedImage(format='jpeg')
            image.header.stamp = ns_to_stamp(stamp)
            picture = np.full((48, 64, 3), (i * 37) % 255, np.uint8)
            image.data = cv2.imencode('.jpg', picture)[1].tobytes()
            self.images.publish(image)
            self.odom.publish(odometry(stamp + 50 * MS))
        wait_until(
            lambda: self.odom.wait_for_all_acked() and self.images.wait_for_all_acked(),
            30,
            'camera input not acknowledged',
        )


def odometry(stamp_ns: int) -> Odometry:
    msg = Odometry()
    msg.header.stamp = ns_to_stamp(stamp_ns)
    msg.header.frame_id = 'map'
    msg.pose.pose.position.x = (stamp_ns - T0) / S  # 1 m/s
    msg.pose.pose.orientation.w = 1.0
    return msg


def stored_stamps(ros, count: int) -> list[int]:
    hits = search(ros, 'time', stamp=ns_to_stamp(T0 - S), top_k=count + 10)
    assert hits.success, hits.message
    return [h.start_stamp.sec * S + h.start_stamp.nanosec for h in hits.hits]


def expected_stamps(count: int) -> list[int]:
    return [T0 + i * STEP_NS for i in range(count)]


def test_a_killed_memory_node_loses_nothing_capture_sent(ros, launch, tmp_path):
    camera = Camera(ros)
    memory, memory_stats = start_memory(ros, launch, tmp_path / 'm')
    _, capture_stats = start_capture(ros, launch, tmp_path / 'c')
    camera.drive(0, 8)
    wait_until(lambda: memory_stats.get('frames', 0) >= 1, 60, 'ingestion did not start')
    memory.process.send_signal(signal.SIGKILL)
    memory.process.wait(timeout=10)
    camera.drive(8, 8)  # nobody listens: only the outbox keeps them
    wait_until(lambda: capture_stats.get('keyframes_published') == 16, 30, 'keyframes not made')
    assert capture_stats['outbox_pending'] >= 8

    memory, memory_stats = start_memory(ros, launch, tmp_path / 'm')
    camera.drive(16, 8)
    wait_until(lambda: memory_stats.get('frames') == 24, 90, 'keyframes lost')
    wait_until(lambda: capture_stats.get('outbox_pending') == 0, 30, 'outbox not drained')
    assert capture_stats['outbox_resent'] >= 8
    assert stored_stamps(ros, 24) == expected_stamps(24)  # each once
    sessions = ros.call(ListSessions, 'list_sessions', ListSessions.Request()).sessions
    assert [(info.frames, info.name) for info in sessions] == [(24, capture_stats['session'])]


def test_a_killed_capture_node_continues_its_session_and_drains_its_outbox(ros, launch, tmp_path):
    camera = Camera(ros)
    sent = ros.collect(KeyframeMsg, 'keyframes', qos.keyframes(100))
    capture, capture_stats = start_capture(ros, launch, tmp_path / 'c')
    camera.drive(0, 6)  # no memory_node yet: everything stays in the outbox
    wait_until(lambda: capture_stats.get('outbox_pending') == 6, 30, 'outbox not filled')
    session = capture_stats['session']
    capture.process.send_signal(signal.SIGKILL)
    capture.process.wait(timeout=10)

    _, capture_stats = start_capture(ros, launch, tmp_path / 'c')
    wait_until(lambda: capture_stats.get('outbox_recovered') == 6, 30, 'outbox not recovered')
    _, memory_stats = start_memory(ros, launch, tmp_path / 'm')
    camera.drive(6, 6)
    wait_until(lambda: memory_stats.get('frames') == 12, 90, 'keyframes lost')
    wait_until(lambda: capture_stats.get('outbox_pending') == 0, 30, 'outbox not drained')
    assert capture_stats['session'] == session
    assert stored_stamps(ros, 12) == expected_stamps(12)
    sessions = ros.call(ListSessions, 'list_sessions', ListSessions.Request()).sessions
    assert [(info.name, info.frames) for info in sessions] == [(session, 12)]
    # The restart numbered on, in a new map epoch (its pose buffer started empty).
    by_index = {msg.index: msg for msg in sent if msg.session == session}
    assert sorted(by_index) == list(range(12))
    assert {by_index[i].map_epoch for i in range(6)} == {0}
    assert {by_index[i].map_epoch for i in range(6, 12)} == {1}


def test_every_journaled_keyframe_is_ingested_at_start_in_order_behind_live_ones(
    ros, launch, tmp_path
):
    # What a run with a full ingest queue leaves: 25 keyframes journaled, none stored.
    journal = KeyframeJournal(tmp_path / 'm' / 'journal', max_bytes=1 << 30)
    for i in range(25):
        journal.write(keyframe_from_msg(keyframe(i, SIGNS[i % len(SIGNS)]), KeyframeRules()))
    acks = ros.collect(KeyframeAck, 'keyframes/ack', qos.keyframes(100))
    _, stats = start_memory(ros, launch, tmp_path / 'm', ingest_queue_size=1)
    assert stats['keyframes_recovered_from_journal'] == 25

    publisher = ros.node.create_publisher(KeyframeMsg, 'keyframes', qos.keyframes(100))
    wait_for_subscriber(publisher, 'keyframes subscriber')
    live = [keyframe(i, SIGNS[i % len(SIGNS)]) for i in range(25, 30)]
    nameless = keyframe(40, 'X')
    nameless.session = ''
    for msg in [*live, *live[:2], nameless]:  # two sent again: acknowledged again, stored once
        publisher.publish(msg)
    wait_until(lambda: stats.get('frames') == 30, 90, 'journaled keyframes not all ingested')
    wait_until(lambda: len(acks) == 8, 30, 'live keyframes not acknowledged')
    assert sorted(i for ack in acks for i in ack.durable) == [25, 25, 26, 26, 27, 28, 29]
    assert [list(ack.refused) for ack in acks if ack.refused] == [[40]]  # never stored
    assert stored_stamps(ros, 30) == [T0 + i * S for i in range(30)]
    hits = search(ros, 'time', stamp=ns_to_stamp(T0), top_k=40).hits
    assert [h.index for h in hits] == list(range(30))  # ingested in stamp order
    wait_until(lambda: stats.get('journal_bytes') == 0, 10, 'journal not emptied')
