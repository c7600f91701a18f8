# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""memory_node under faults, over real DDS: a killed process, a Milvus server that goes
away and comes back, a full image disk; and the session services and segment searches."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess

import pytest

from waymark_interfaces.msg import Keyframe as KeyframeMsg
from waymark_interfaces.srv import DeleteSession, ListSessions
from waymark_ros.ros import qos
from waymark_ros.ros.conversions import ns_to_stamp
from waymark_testing.ros_harness import wait_for_subscriber, wait_until
from waymark_testing.signs import SIGNS, T0, S, keyframe, publish_and_wait, search

pytestmark = pytest.mark.dds


def started(ros, launch, **params):
    node = launch('memory_node', **params)
    stats = ros.latest_json('memory/stats')
    wait_until(lambda: 'frames' in stats, 90, 'memory_node did not start')
    return node, stats


def publish(ros, messages: list[KeyframeMsg]) -> None:
    publisher = ros.node.create_publisher(KeyframeMsg, 'keyframes', qos.keyframes(100))
    wait_for_subscriber(publisher, 'keyframes subscriber')
    for msg in messages:
        publisher.publish(msg)
    wait_until(lambda: publisher.wait_for_all_acked(), 30, 'keyframes not acknowledged')


def tour(count: int, session: str = 'tour') -> list[KeyframeMsg]:
    """Keyframes every 0.5 s, so 1.5 s segments hold three each."""
    messages = []
    for i in range(count):
        msg = keyframe(i, SIGNS[i % len(SIGNS)], session=session)
        msg.header.stamp = ns_to_stamp(T0 + i * S // 2)
        messages.append(msg)
    return messages


def test_sessions_are_listed_and_deleted_with_their_segments(ros, launch, tmp_path):
    _, stats = started(ros, launch, data_dir=str(tmp_path / 'm'), **{'segments.idle_close_s': 0.5})
    publish(ros, tour(6, 'first') + tour(3, 'second'))
    wait_until(lambda: stats.get('frames') == 9 and stats.get('segments') == 3, 60, 'segments')

    listed = ros.call(ListSessions, 'list_sessions', ListSessions.Request())
    assert listed.success
    by_name = {info.name: info for info in listed.sessions}
    assert sorted(by_name) == ['first', 'second']
    assert (by_name['first'].frames, by_name['first'].segments) == (6, 2)
    assert (
        by_name['first'].end_stamp.sec * S + by_name['first'].end_stamp.nanosec == T0 + 5 * S // 2
    )

    segments = search(ros, 'index_range', level='segment', sessions=['first'], last_index=10)
    assert segments.success, segments.message
    assert [(h.kind, h.index) for h in segments.hits] == [('segment', 0), ('segment', 1)]
    assert segments.hits[0].id == 'first/s0'
    ranked = search(
        ros, 'index_range', level='segment', sessions=['first'], last_index=1, text='library'
    )
    assert ranked.success and ranked.hits[0].index == 0 and ranked.hits[0].view == 'text'
    assert not search(ros, 'index_range', level='segment', last_index=3).success  # no session

    gone = ros.call(
        DeleteSession, 'delete_session', DeleteSession.Request(session='first', confirm='first')
    )
    assert gone.success and (gone.frames_deleted, gone.segments_deleted) == (6, 2)
    wait_until(lambda: stats.get('frames') == 3, 10, 'frames not updated after deletion')
    left = ros.call(ListSessions, 'list_sessions', ListSessions.Request())
    assert [info.name for info in left.sessions] == ['second']
    bad = ros.call(
        DeleteSession, 'delete_session', DeleteSession.Request(session='../x', confirm='../x')
    )
    assert not bad.success and bad.message


@pytest.mark.parametrize(
    'backend',
    [
        'lite',
        pytest.param('server', marks=pytest.mark.milvus_server),
        pytest.param('server-search', marks=pytest.mark.milvus_server),
    ],
)
def test_a_killed_process_loses_nothing_it_accepted(ros, launch, tmp_path, backend, request):
    """The kill -9 ingest drill, with memory in Milvus Lite and on a Milvus server (which,
    with '-search', answers the searches too)."""
    data = str(tmp_path / 'm')
    where = {'data_dir': data}
    if backend.startswith('server'):
        where['uri'] = request.getfixturevalue('milvus_uri')
    if backend.endswith('-search'):
        where['search_backend'] = 'milvus'

    # OCR on every keyframe keeps the queue busy, so the kill lands in the middle of it.
    # Stats come once a second: the tour must take an idle machine longer than that.
    count = 48
    node, stats = started(ros, launch, **where)
    publish(ros, tour(count))
    wait_until(lambda: stats.get('keyframes_ingested', 0) >= 1, 60, 'ingestion did not start')
    node.process.send_signal(signal.SIGKILL)
    node.process.wait(timeout=10)
    stored_before = stats.get('frames', 0)
    assert stored_before < count, 'everything was stored before the kill: nothing was tested'

    _, stats = started(ros, launch, **where)
    wait_until(lambda: stats.get('frames') == count, 120, 'journaled keyframes not recovered')
    assert stats['keyframes_recovered_from_journal'] >= 1
    hits = search(ros, 'time', stamp=ns_to_stamp(T0), top_k=count)
    assert [h.index for h in hits.hits] == list(range(count))  # each once, in order
    library = search(ros, 'text', text='library', top_k=count)
    assert library.success and library.hits[0].index % len(SIGNS) == 2


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


def _milvus_server(data_dir, port) -> subprocess.Popen:
    server = subprocess.Popen(
        [
            shutil.which('milvus-lite'),
            *('server', '--data-dir', str(data_dir)),
            *('--host', '127.0.0.1', '--port', str(port)),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, 'PYTHONUNBUFFERED': '1'},
    )

    def listening() -> bool:
        with socket.socket() as client:
            return client.connect_ex(('127.0.0.1', port)) == 0

    wait_until(listening, 60, 'milvus-lite server did not start')
    return server


def test_a_milvus_server_that_goes_away_and_comes_back_loses_nothing(ros, launch, tmp_path):
    port = _free_port()
    server = _milvus_server(tmp_path / 'milvus', port)
    try:
        _, stats = started(
            ros,
            launch,
            data_dir=str(tmp_path / 'm'),
            uri=f'http://127.0.0.1:{port}',
            ocr=False,
            store_retry_max_s=0.5,
        )
        publish(ros, tour(2))
        wait_until(lambda: stats.get('frames') == 2, 60, 'first keyframes not stored')

        server.send_signal(signal.SIGKILL)
        server.wait(timeout=10)
        publish(ros, tour(6)[2:])
        wait_until(lambda: stats.get('store_retries', 0) >= 2, 60, 'no retries while away')
        assert stats['frames'] == 2
        # Away for longer: one more retry fails before the server comes back.
        retries = stats['store_retries']
        wait_until(lambda: stats.get('store_retries', 0) > retries, 60, 'retries stopped')
        assert stats['frames'] == 2

        server = _milvus_server(tmp_path / 'milvus', port)
        wait_until(lambda: stats.get('frames') == 6, 120, 'buffered keyframes not stored')
        hits = search(ros, 'time', stamp=ns_to_stamp(T0), top_k=10)
        assert [h.index for h in hits.hits] == list(range(6))
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()


def test_a_full_image_disk_keeps_the_entries_without_their_images(ros, launch, tmp_path):
    _, stats = started(ros, launch, data_dir=str(tmp_path / 'm'), images_max_gb=0.00005)
    publish_and_wait(ros, [keyframe(i, t) for i, t in enumerate(SIGNS)], stats, len(SIGNS))
    assert stats['images_not_stored'] >= 1
    hits = search(ros, 'text', text='library', top_k=1)
    assert hits.success and hits.hits[0].index == 2
    refs = [h.image_ref for h in search(ros, 'time', stamp=ns_to_stamp(T0), top_k=10).hits]
    assert '' in refs and any(refs)
