# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""memory_node driven through its lifecycle by a manager, over real DDS: it serves only
while active, says so when it does not, loses no keyframe across a deactivation, and
closes and reopens its database on cleanup and configure."""

from __future__ import annotations

import time

import pytest
from lifecycle_msgs.msg import State, Transition
from lifecycle_msgs.srv import ChangeState, GetState
from rclpy.duration import Duration

from waymark_interfaces.msg import Keyframe as KeyframeMsg
from waymark_interfaces.msg import KeyframeAck
from waymark_interfaces.srv import DeleteSession, ListSessions
from waymark_ros.ros import qos
from waymark_ros.ros.conversions import ns_to_stamp
from waymark_testing.database import assert_database_unlocked
from waymark_testing.ros_harness import wait_for_subscriber, wait_until
from waymark_testing.signs import SIGNS, T0, keyframe, search

pytestmark = pytest.mark.dds

NOT_ACTIVE = 'memory_node is not active'


def state(ros) -> int:
    return ros.call(GetState, 'memory_node/get_state', GetState.Request()).current_state.id


def change(ros, transition: int) -> None:
    request = ChangeState.Request(transition=Transition(id=transition))
    response = ros.call(ChangeState, 'memory_node/change_state', request, timeout_s=120.0)
    assert response.success, f'transition {transition} failed'


def refused_while_inactive(ros) -> None:
    found = search(ros, 'time', stamp=ns_to_stamp(T0))
    assert (found.success, found.message, list(found.hits)) == (False, NOT_ACTIVE, [])
    listed = ros.call(ListSessions, 'list_sessions', ListSessions.Request())
    assert (listed.success, listed.message) == (False, NOT_ACTIVE)
    request = DeleteSession.Request(session='tour', confirm='tour')
    deleted = ros.call(DeleteSession, 'delete_session', request)
    assert (deleted.success, deleted.message, deleted.frames_deleted) == (False, NOT_ACTIVE, 0)


def test_a_managed_memory_node_serves_only_while_active_and_loses_nothing(ros, launch, tmp_path):
    node = launch('memory_node', autostart=False, data_dir=str(tmp_path / 'memory'))
    stats = ros.latest_json('memory/stats')
    acks = ros.collect(KeyframeAck, 'keyframes/ack', qos.keyframes(100))
    publisher = ros.node.create_publisher(KeyframeMsg, 'keyframes', qos.keyframes(100))
    first = [keyframe(i, text) for i, text in enumerate(SIGNS[:2])]
    later = [keyframe(i + 2, text) for i, text in enumerate(SIGNS[2:])]

    assert state(ros) == State.PRIMARY_STATE_UNCONFIGURED
    refused_while_inactive(ros)
    assert not (tmp_path / 'memory').exists()  # nothing opened before configure
    change(ros, Transition.TRANSITION_CONFIGURE)
    assert state(ros) == State.PRIMARY_STATE_INACTIVE
    refused_while_inactive(ros)
    assert 'frames' not in stats  # status is silent while inactive

    change(ros, Transition.TRANSITION_ACTIVATE)
    wait_for_subscriber(publisher, 'keyframes subscriber')
    for msg in first:
        publisher.publish(msg)
    wait_until(lambda: stats.get('frames') == 2, 60, 'keyframes not ingested once active')
    assert search(ros, 'text', text='bakery', top_k=1).hits[0].index == 1

    change(ros, Transition.TRANSITION_DEACTIVATE)
    refused_while_inactive(ros)
    acknowledged = len(acks)
    for msg in later:  # neither acknowledged nor kept: the sender keeps them
        publisher.publish(msg)
    assert publisher.wait_for_all_acked(Duration(seconds=30)), 'keyframes not delivered'
    # Delivered to its reader; its stats are silent while inactive, so nothing says when
    # its callback has dropped them: hold a moment (keyframes_ignored_inactive, read once
    # it is active again, proves they were dropped while inactive).
    time.sleep(1.0)
    assert len(acks) == acknowledged

    change(ros, Transition.TRANSITION_ACTIVATE)
    for msg in later:  # sent again, as capture_node's outbox sends unacknowledged keyframes
        publisher.publish(msg)
    wait_until(lambda: stats.get('frames') == len(SIGNS), 60, 'resent keyframes not ingested')
    assert stats['keyframes_ignored_inactive'] == len(later)
    found = search(ros, 'time', stamp=ns_to_stamp(T0), top_k=10)
    assert [hit.index for hit in found.hits] == list(range(len(SIGNS)))

    change(ros, Transition.TRANSITION_DEACTIVATE)
    change(ros, Transition.TRANSITION_CLEANUP)
    assert state(ros) == State.PRIMARY_STATE_UNCONFIGURED
    refused_while_inactive(ros)
    # Closed: another process can open the database now (Milvus Lite locks its file).
    assert_database_unlocked(tmp_path / 'memory' / 'memory.db')

    stats.clear()
    change(ros, Transition.TRANSITION_CONFIGURE)
    change(ros, Transition.TRANSITION_ACTIVATE)
    wait_until(lambda: stats.get('frames') == len(SIGNS), 60, 'reopened memory not reported')
    assert search(ros, 'text', text='bakery', top_k=1).hits[0].index == 1
    assert node.running()


def test_a_failed_configure_is_reported_and_leaves_the_node_unconfigured(ros, launch, tmp_path):
    blocker = tmp_path / 'not-a-directory'
    blocker.write_text('')
    node = launch('memory_node', autostart=False, data_dir=str(blocker / 'memory'))
    request = ChangeState.Request(transition=Transition(id=Transition.TRANSITION_CONFIGURE))
    response = ros.call(ChangeState, 'memory_node/change_state', request, timeout_s=120.0)
    assert not response.success
    assert state(ros) == State.PRIMARY_STATE_UNCONFIGURED
    assert node.running()
    wait_until(lambda: 'configure failed' in node.log_tail(), 10, 'no reason logged')
