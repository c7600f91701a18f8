# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""memory_node over real DDS with real Milvus Lite: ingest, every search mode, restart,
bad keyframes, a locked database, and the image view with a tiny SigLIP."""

from __future__ import annotations

import math

import cv2
import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import Point

from waymark_interfaces.srv import DeleteSession, ListSessions, SearchMemory, ThinMemory
from waymark_ros.ros.conversions import ns_to_stamp
from waymark_testing.database import assert_database_unlocked
from waymark_testing.parameters import assert_refused, set_parameters
from waymark_testing.ros_harness import wait_until
from waymark_testing.signs import SIGNS, T0, S, keyframe, publish_and_wait, search, sign_jpeg

pytestmark = pytest.mark.dds


@pytest.fixture
def memory(ros, launch, tmp_path):
    def start():
        node = launch('memory_node', data_dir=str(tmp_path / 'memory'))
        stats = ros.latest_json('memory/stats')
        wait_until(lambda: 'frames' in stats, 60, 'memory_node did not start')
        return node, stats

    return start


def test_ingests_keyframes_and_serves_every_search_mode(ros, memory):
    node, stats = memory()
    publish_and_wait(ros, [keyframe(i, t) for i, t in enumerate(SIGNS)], stats, len(SIGNS))

    text = search(ros, 'text', text='where is the pharmacy?', top_k=3)
    assert text.success, text.message
    assert text.total_entries == 4
    assert text.hits[0].text.upper() == 'PHARMACY'
    assert text.hits[0].view == 'text'
    assert text.hits[0].pose.pose.position.x == pytest.approx(0.0)
    assert text.hits[0].pose.header.frame_id == 'map'
    library = search(ros, 'text', text='books to borrow, a library', top_k=1)
    assert library.hits[0].index == 2

    later = search(ros, 'time', stamp=ns_to_stamp(T0 + 1 * S + 1), top_k=5)
    assert [h.index for h in later.hits] == [2, 3]  # from that time on, in order
    assert later.hits[0].score == pytest.approx(1.0, abs=1e-3)

    near = search(ros, 'position', position=Point(x=4.2, y=1.0, z=0.5), top_k=2)
    assert [h.index for h in near.hits] == [2, 3]
    assert near.hits[0].score == pytest.approx(0.2, abs=1e-3)

    ring = search(ros, 'range', position=Point(x=3.0, y=1.0), radius=1.5, top_k=10)
    assert sorted(h.index for h in ring.hits) == [1, 2]

    span = search(ros, 'interval', stamp=ns_to_stamp(T0), end_stamp=ns_to_stamp(T0 + S), top_k=10)
    assert [h.index for h in span.hits] == [0, 1]

    unknown = search(ros, 'text', text='pharmacy', sessions=['no-such-session'])
    assert unknown.success and list(unknown.hits) == [] and unknown.total_entries == 0

    for bad in (
        search(ros, 'teleport'),
        search(ros, 'text', text='   '),
        search(ros, 'range', position=Point(x=0.0, y=0.0), radius=-1.0),
        search(ros, 'position', position=Point(x=math.nan, y=0.0)),
        search(ros, 'image'),
    ):
        assert not bad.success and bad.message
    assert node.running()


def test_bad_keyframes_are_counted_and_skipped(ros, memory):
    node, stats = memory()
    nan_pose = keyframe(0, 'PHARMACY')
    nan_pose.pose.pose.position.x = math.nan
    corrupt = keyframe(1, 'BAKERY')
    corrupt.image.data = b'\xff\xd8\xff garbage'
    empty_session = keyframe(2, 'LIBRARY', session='')
    publish_and_wait(ros, [nan_pose, corrupt, empty_session, keyframe(3, 'LIBRARY')], stats, 1)
    wait_until(lambda: stats.get('keyframes_rejected') == 3, 10, 'refusals not counted')
    assert stats['keyframes_refused_position'] == 1
    assert stats['keyframes_refused_image'] == 1  # refused from its header, never journaled
    assert stats['keyframes_refused_session'] == 1
    assert node.running()


def test_lost_poses_are_kept_but_never_used_as_positions(ros, memory):
    _, stats = memory()
    publish_and_wait(ros, [keyframe(0, 'PHARMACY', pose_valid=False), keyframe(1, '')], stats, 2)
    near = search(ros, 'position', position=Point(x=0.0, y=1.0, z=0.5), top_k=5)
    assert [h.index for h in near.hits] == [1]
    text = search(ros, 'text', text='pharmacy', top_k=1)
    assert text.hits[0].index == 0 and not text.hits[0].pose_valid


def test_memory_survives_a_restart_and_a_replay_is_idempotent(ros, launch, memory):
    node, stats = memory()
    publish_and_wait(ros, [keyframe(i, t) for i, t in enumerate(SIGNS)], stats, len(SIGNS))
    from waymark_ros.tools.processes import stop_node

    assert stop_node(node) == 0
    node, stats = memory()
    assert stats['frames'] == len(SIGNS)
    assert search(ros, 'text', text='bakery', top_k=1).hits[0].index == 1
    # The same keyframes again (a bag replayed twice) keep their entries: each is compared
    # with its stored entry on arrival and nothing is rewritten...
    publish_and_wait(ros, [keyframe(i, t) for i, t in enumerate(SIGNS)], stats, len(SIGNS))
    wait_until(lambda: stats.get('keyframes_duplicate') == len(SIGNS), 30, 'replay not compared')
    assert stats['frames'] == len(SIGNS)
    assert stats.get('keyframes_ingested', 0) == 0
    # ...while a new keyframe of the session is numbered after the last one.
    fresh = keyframe(0, 'FIRE EXIT')
    fresh.header.stamp = ns_to_stamp(T0 + 100 * S)
    publish_and_wait(ros, [fresh], stats, len(SIGNS) + 1)
    assert search(ros, 'text', text='fire exit', top_k=1).hits[0].index == len(SIGNS)


def test_robots_sharing_a_memory_keep_to_their_own_sessions(ros, launch, tmp_path):
    from waymark_ros.tools.processes import stop_node

    def start(robot):
        node = launch('memory_node', data_dir=str(tmp_path / 'memory'), robot_id=robot)
        stats = ros.latest_json('memory/stats')
        wait_until(lambda: 'frames' in stats and stats.get('robot_id') == robot, 60, 'no start')
        return node, stats

    node, stats = start('go1-a')
    publish_and_wait(ros, [keyframe(i, t) for i, t in enumerate(SIGNS[:2])], stats, 2)
    assert stop_node(node) == 0
    node, stats = start('go1-b')
    publish_and_wait(ros, [keyframe(0, 'FIRE EXIT', session='mine')], stats, 3)
    late = keyframe(5, 'FIRE EXIT')  # into go1-a's session 'tour': never written
    late.header.stamp = ns_to_stamp(T0 + 100 * S)
    publish_and_wait(ros, [late], stats, 3)
    wait_until(lambda: stats.get('keyframes_refused_session_owned') == 1, 30, 'not refused')
    assert stats['frames'] == 3

    listed = ros.call(ListSessions, 'list_sessions', ListSessions.Request())
    assert {(s.name, s.robot, s.frames) for s in listed.sessions} == {
        ('tour', 'go1-a', 2),
        ('mine', 'go1-b', 1),
    }
    theirs = search(ros, 'text', text='fire exit', top_k=5, robots=['go1-a'])
    assert theirs.success and theirs.total_entries == 2
    assert {hit.session for hit in theirs.hits} == {'tour'}
    mine = search(ros, 'time', stamp=ns_to_stamp(T0), top_k=5, robots=['go1-b'])
    assert [hit.session for hit in mine.hits] == ['mine'] and mine.total_entries == 1
    both = search(ros, 'time', stamp=ns_to_stamp(T0), top_k=5, robots=['go1-b'], sessions=['tour'])
    assert both.success and list(both.hits) == [] and both.total_entries == 0
    bad = search(ros, 'time', stamp=ns_to_stamp(T0), robots=['go1/a'])
    assert not bad.success and 'invalid robot id' in bad.message
    refused = ros.call(
        DeleteSession, 'delete_session', DeleteSession.Request(session='tour', confirm='tour')
    )
    assert not refused.success and "belongs to robot 'go1-a'" in refused.message
    assert stats['frames'] == 3 and node.running()


def test_old_frames_are_thinned_only_once_the_plan_is_confirmed(ros, launch, tmp_path):
    retention = {
        'retention.thin_after_days': 30.0,  # the signs were seen in January
        'retention.keep_every': 2,
        'retention.budget_gb': 1e-6,  # 1 kB: over at once
    }
    launch('memory_node', data_dir=str(tmp_path / 'memory'), **retention)
    stats = ros.latest_json('memory/stats')
    diagnostics = ros.collect(DiagnosticArray, '/diagnostics', 100)
    wait_until(lambda: 'frames' in stats, 60, 'memory_node did not start')
    publish_and_wait(ros, [keyframe(i, t) for i, t in enumerate(SIGNS)], stats, len(SIGNS))
    assert stats['storage_database_bytes'] > 0 and stats['storage_bytes_per_entry'] > 0
    assert stats['storage_budget_bytes'] == 1000

    def over_budget() -> bool:
        return any(
            s.name == 'memory_node: memory' and 'over the storage budget' in s.message
            for array in list(diagnostics)
            for s in array.status
        )

    wait_until(over_budget, 10, 'no warning over the storage budget')

    def thin(apply: bool, confirm: str = '') -> ThinMemory.Response:
        request = ThinMemory.Request(apply=apply, confirm=confirm)
        return ros.call(ThinMemory, 'thin_memory', request)

    plan = thin(False)
    # Frames 1 and 3 are thinned; the blank wall (3) has no text, so no vector to lose.
    assert plan.success and (plan.frames, plan.sessions) == (1, 1) and len(plan.token) == 16
    stale = thin(True, 'not-the-token')
    assert not stale.success and plan.token in stale.message and stale.view_rows_removed == 0
    assert 1 in [hit.index for hit in search(ros, 'text', text='bakery', top_k=4).hits]
    done = thin(True, plan.token)
    assert done.success and (done.frames, done.view_rows_removed) == (1, 1), done.message
    assert 1 not in [hit.index for hit in search(ros, 'text', text='bakery', top_k=4).hits]
    everything = search(ros, 'time', stamp=ns_to_stamp(T0), top_k=10)
    assert [hit.index for hit in everything.hits] == [0, 1, 2, 3]  # records stay
    again = thin(False)
    assert again.success and again.frames == 0 and again.token != plan.token


def test_a_locked_database_is_a_clear_error_naming_the_file(ros, memory, launch, tmp_path):
    memory()
    second = launch('memory_node', data_dir=str(tmp_path / 'memory'))
    assert second.process.wait(timeout=60) != 0
    log = second.log_tail()
    assert str(tmp_path / 'memory') in log
    assert 'lock' in log.lower()


def test_image_view_with_an_image_text_model(ros, launch, tmp_path):
    from waymark_testing.tiny_models import build_tiny_siglip

    model = build_tiny_siglip(tmp_path / 'siglip')
    launch(
        'memory_node',
        data_dir=str(tmp_path / 'memory'),
        image_model=model,
        text_model='',
        ocr=False,
    )
    stats = ros.latest_json('memory/stats')
    wait_until(lambda: 'frames' in stats, 60, 'memory_node did not start')
    publish_and_wait(ros, [keyframe(i, t) for i, t in enumerate(SIGNS)], stats, len(SIGNS))
    hits = search(ros, 'text', text='a photo of a coffee shop', top_k=4)
    assert hits.success and len(hits.hits) == 4
    assert {h.view for h in hits.hits} == {'image'}
    query = cv2.imencode('.jpg', cv2.imdecode(np.frombuffer(sign_jpeg('BAKERY'), np.uint8), 1))[1]
    by_image = search(ros, 'image', top_k=1)
    by_image_request = SearchMemory.Request(mode='image', top_k=1)
    by_image_request.image.format = 'jpeg'
    by_image_request.image.data = query.tobytes()
    by_image = ros.call(SearchMemory, 'search_memory', by_image_request)
    assert by_image.success
    assert by_image.hits[0].index == 1  # the same picture is its own nearest neighbour
    assert by_image.hits[0].score == pytest.approx(1.0, abs=1e-2)


def test_database_lock_is_released_on_clean_shutdown(ros, memory, tmp_path):
    from waymark_ros.tools.processes import stop_node

    node, _ = memory()
    assert stop_node(node) == 0
    assert_database_unlocked(tmp_path / 'memory' / 'memory.db')


def test_odd_requests_and_keyframes_get_clear_answers(ros, memory):
    node, stats = memory()
    zero_size = keyframe(9, 'BAKERY')
    zero_size.image.data = b''
    # Out of order: memory keeps both, numbered in arrival order, searchable by time.
    late, early = keyframe(1, 'LIBRARY'), keyframe(0, 'PHARMACY')
    publish_and_wait(ros, [zero_size, late, early], stats, 2)
    assert stats['keyframes_rejected'] == 1

    by_time = search(ros, 'time', stamp=ns_to_stamp(T0), top_k=0)  # 0: the default
    assert [h.text for h in by_time.hits] == ['PHARMACY', 'LIBRARY']
    assert [h.index for h in by_time.hits] == [1, 0]
    huge = search(ros, 'time', stamp=ns_to_stamp(T0), top_k=10**6)  # capped, not refused
    assert huge.success and len(huge.hits) == 2
    for bad in (
        search(ros, 'time', stamp=ns_to_stamp(T0), level='room'),
        search(ros, 'text', text='library', views=['smell']),
        search(ros, 'interval', stamp=ns_to_stamp(T0 + S), end_stamp=ns_to_stamp(T0)),
    ):
        assert not bad.success and bad.message
    assert node.running()


def test_hit_counts_and_search_limits_change_while_running(ros, memory):
    node, stats = memory()
    publish_and_wait(ros, [keyframe(i, t) for i, t in enumerate(SIGNS)], stats, len(SIGNS))
    assert len(search(ros, 'time', stamp=ns_to_stamp(T0)).hits) == 4  # default_top_k 5

    changes = {'default_top_k': 2, 'max_query_chars': 10}
    results = set_parameters(ros, 'memory_node', changes)
    assert all(result.successful for result in results.values()), results
    assert len(search(ros, 'time', stamp=ns_to_stamp(T0)).hits) == 2
    long = search(ros, 'text', text='where is the pharmacy?')
    assert not long.success and 'max_query_chars' in long.message

    refused = set_parameters(ros, 'memory_node', {'max_top_k': 0, 'data_dir': '/tmp'})
    assert_refused(refused['max_top_k'], 'Parameter max_top_k out of range')
    assert_refused(refused['data_dir'], 'read-only')
    assert node.running()
