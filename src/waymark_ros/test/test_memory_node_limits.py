# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""memory_node refuses what it must not store or search, over real DDS: an image bomb,
poses in the wrong frame or far away, a forged keyframe at a stored stamp, deletion
without confirmation or when disabled. Each refusal is counted and the node lives on."""

from __future__ import annotations

from pathlib import Path

import pytest
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import Point

from waymark_interfaces.srv import DeleteSession, ListSessions
from waymark_ros.ros.conversions import ns_to_stamp
from waymark_testing.images import png_bomb
from waymark_testing.ros_harness import wait_until
from waymark_testing.signs import T0, S, keyframe, publish_and_wait, search

pytestmark = pytest.mark.dds

MB = 1 << 20


def started(ros, launch, tmp_path, **params):
    # No models: the node's memory then moves only with what the test sends it.
    params = {'data_dir': str(tmp_path / 'memory'), 'ocr': False, 'text_model': '', **params}
    node = launch('memory_node', **params)
    stats = ros.latest_json('memory/stats')
    wait_until(lambda: 'frames' in stats, 90, 'memory_node did not start')
    return node, stats


def memory_kb(pid: int) -> dict[str, int]:
    """Resident and peak resident memory of a process, in kB (/proc/PID/status)."""
    fields = {}
    for line in Path(f'/proc/{pid}/status').read_text().splitlines():
        key, _, value = line.partition(':')
        if key in ('VmRSS', 'VmHWM'):
            fields[key] = int(value.split()[0])
    return fields


def test_an_image_bomb_is_refused_before_it_is_decoded(ros, launch, tmp_path):
    bomb = png_bomb(18_000)  # 324 Mpx: about 970 MB once decoded to RGB
    assert len(bomb) < 500_000
    node, stats = started(ros, launch, tmp_path)
    before = memory_kb(node.process.pid)
    message = keyframe(0, 'PHARMACY')
    message.image.format = 'png'
    message.image.data = bomb
    publish_and_wait(ros, [message, keyframe(1, 'BAKERY')], stats, 1)
    wait_until(lambda: stats.get('keyframes_refused_image_too_large') == 1, 10, 'not counted')
    request_bomb = search(ros, 'image', image=message.image)
    assert not request_bomb.success and 'over' in request_bomb.message
    wait_until(lambda: stats.get('searches_refused_image_too_large') == 1, 10, 'not counted')
    after = memory_kb(node.process.pid)
    print(f'memory_node RSS {before} -> {after} kB')
    assert after['VmRSS'] - before['VmRSS'] < 100 * MB // 1024
    assert after['VmHWM'] - before['VmHWM'] < 100 * MB // 1024
    assert stats['frames'] == 1 and node.running()


def test_keyframes_outside_the_map_frame_or_far_away_are_refused(ros, launch, tmp_path):
    node, stats = started(ros, launch, tmp_path)
    odom = keyframe(0, 'PHARMACY')
    odom.header.frame_id = 'odom'
    no_frame = keyframe(1, 'BAKERY')
    no_frame.header.frame_id = ''
    far = keyframe(2, 'LIBRARY')
    far.pose.pose.position.x = 1e300
    no_rotation = keyframe(3, 'MUSEUM')
    no_rotation.pose.pose.orientation.w = 0.0
    no_rotation.pose.pose.orientation.z = 0.0
    good = keyframe(4, 'EXIT')
    publish_and_wait(ros, [odom, no_frame, far, no_rotation, good], stats, 1)
    wait_until(lambda: stats.get('keyframes_rejected') == 4, 10, 'refusals not counted')
    assert stats['keyframes_refused_frame'] == 2
    assert stats['keyframes_refused_position'] == 1
    assert stats['keyframes_refused_orientation'] == 1
    stored = search(ros, 'time', stamp=ns_to_stamp(T0), top_k=10)
    assert [(h.index, h.pose.pose.position.x) for h in stored.hits] == [(0, 8.0)]
    assert node.running()


def test_a_memory_in_another_map_frame_takes_its_own_frame_only(ros, launch, tmp_path):
    _, stats = started(ros, launch, tmp_path, map_frame='camera_init')
    lio = keyframe(0, 'PHARMACY')
    lio.header.frame_id = 'camera_init'
    publish_and_wait(ros, [keyframe(1, 'BAKERY'), lio], stats, 1)
    wait_until(lambda: stats.get('keyframes_refused_frame') == 1, 10, 'map keyframe not refused')
    hit = search(ros, 'time', stamp=ns_to_stamp(T0), top_k=10).hits[0]
    assert hit.pose.header.frame_id == 'camera_init' and hit.start_stamp.sec == T0 // S


def test_a_forged_keyframe_at_a_stored_stamp_never_replaces_the_entry(ros, launch, tmp_path):
    diagnostics = ros.collect(DiagnosticArray, '/diagnostics', 10)
    _, stats = started(ros, launch, tmp_path, ocr=True, text_model='default')
    publish_and_wait(ros, [keyframe(0, 'PHARMACY')], stats, 1)
    hacked = keyframe(0, 'HACKED')  # the same session and stamp, another sign
    hacked.pose.pose.position.x = 5.0
    resent = keyframe(0, 'PHARMACY')  # a resend of the stored keyframe
    publish_and_wait(ros, [hacked, resent], stats, 1)
    wait_until(lambda: stats.get('keyframes_conflicting') == 1, 60, 'conflict not counted')
    wait_until(lambda: stats.get('keyframes_duplicate') == 1, 60, 'resend not counted')
    assert stats['frames'] == 1
    found = search(ros, 'text', text='hacked', top_k=5)
    assert [(h.text, h.pose.pose.position.x) for h in found.hits] == [('PHARMACY', 0.0)]

    def diagnosed() -> bool:
        values = [
            {item.key: item.value for item in status.values}
            for array in list(diagnostics)
            for status in array.status
        ]
        return any(v.get('keyframes_conflicting') == '1' for v in values)

    wait_until(diagnosed, 10, 'the conflict is not in /diagnostics')


def test_searches_out_of_bounds_are_refused_with_the_reason(ros, launch, tmp_path):
    node, stats = started(ros, launch, tmp_path, max_radius_m=10.0, max_query_chars=20)
    publish_and_wait(ros, [keyframe(0, 'PHARMACY')], stats, 1)
    bad_nanosec = ns_to_stamp(T0)
    bad_nanosec.nanosec = 2 * S
    refused = {
        'sessions': search(ros, 'time', stamp=ns_to_stamp(T0), sessions=['../tour']),
        'text': search(ros, 'text', text='x' * 21),
        'stamp': search(ros, 'time', stamp=bad_nanosec),
        'interval': search(ros, 'interval', stamp=ns_to_stamp(T0 + S), end_stamp=ns_to_stamp(T0)),
        'position': search(ros, 'position', position=Point(x=1e300)),
        'radius': search(ros, 'range', position=Point(), radius=10.5),
        'index_range': search(ros, 'index_range', sessions=['tour'], last_index=2**64 - 1),
    }
    for reason, response in refused.items():
        assert not response.success and response.message, reason
        wait_until(lambda r=reason: stats.get(f'searches_refused_{r}') == 1, 10, reason)
    assert search(ros, 'range', position=Point(), radius=10.0).success
    capped = search(ros, 'time', stamp=ns_to_stamp(T0), top_k=10**6)
    assert capped.success and 'capped' in capped.message
    assert node.running()


def delete(ros, session: str, confirm: str) -> DeleteSession.Response:
    request = DeleteSession.Request(session=session, confirm=confirm)
    return ros.call(DeleteSession, 'delete_session', request)


def sessions(ros) -> list[str]:
    listed = ros.call(ListSessions, 'list_sessions', ListSessions.Request())
    return [info.name for info in listed.sessions]


def test_deletion_needs_the_name_twice(ros, launch, tmp_path):
    _, stats = started(ros, launch, tmp_path)
    publish_and_wait(ros, [keyframe(0, 'PHARMACY', session='first')], stats, 1)
    for confirm in ('', 'First', 'second'):
        refused = delete(ros, 'first', confirm)
        assert not refused.success and 'confirm' in refused.message
    assert sessions(ros) == ['first']
    wait_until(lambda: stats.get('deletions_refused') == 3, 10, 'refusals not counted')
    done = delete(ros, 'first', 'first')
    assert done.success and done.frames_deleted == 1
    assert sessions(ros) == []


def test_deletion_can_be_disabled(ros, launch, tmp_path):
    _, stats = started(ros, launch, tmp_path, allow_delete=False)
    publish_and_wait(ros, [keyframe(0, 'PHARMACY', session='first')], stats, 1)
    refused = delete(ros, 'first', 'first')
    assert not refused.success and 'allow_delete' in refused.message
    assert refused.frames_deleted == 0 and sessions(ros) == ['first']
