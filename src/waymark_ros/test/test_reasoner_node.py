# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""reasoner_node over real DDS: embedder-only answers, goals, and the failure messages."""

from __future__ import annotations

import time

import pytest
from geometry_msgs.msg import PoseStamped
from support.ros_harness import wait_until
from support.signs import SIGNS, keyframe, publish_and_wait

from waymark_interfaces.msg import Answer
from waymark_interfaces.srv import Query

pytestmark = pytest.mark.dds


def ask(ros, question: str, navigate=False, sessions=()) -> Query.Response:
    request = Query.Request(question=question, navigate=navigate)
    request.sessions = list(sessions)
    return ros.call(Query, 'query', request, timeout_s=60)


def test_without_memory_node_the_answer_says_so(ros, launch):
    launch('reasoner_node', memory_timeout_s=1.0)
    response = ask(ros, 'where is the bakery?')
    assert not response.success
    assert 'memory_node is not running' in response.message


def test_empty_memory_gives_a_clear_failure(ros, launch, tmp_path):
    launch('memory_node', data_dir=str(tmp_path / 'memory'))
    launch('reasoner_node')
    stats = ros.latest_json('memory/stats')
    wait_until(lambda: 'frames' in stats, 60, 'memory_node did not start')
    response = ask(ros, 'where is the bakery?')
    assert not response.success
    assert 'memory is empty' in response.message
    assert response.answer.kind == Answer.KIND_NONE and not response.answer.has_goal


def test_answers_with_the_viewpoint_and_publishes_the_goal(ros, launch, tmp_path):
    launch('memory_node', data_dir=str(tmp_path / 'memory'))
    launch('reasoner_node')
    goals = ros.collect(PoseStamped, 'goal_pose')
    stats = ros.latest_json('memory/stats')
    wait_until(lambda: 'frames' in stats, 60, 'memory_node did not start')
    publish_and_wait(ros, [keyframe(i, t) for i, t in enumerate(SIGNS)], stats, len(SIGNS))

    quiet = ask(ros, 'where is the library?', navigate=False)
    assert quiet.success, quiet.message
    assert quiet.answer.goal.pose.position.x == pytest.approx(4.0)
    time.sleep(0.5)
    assert goals == []  # navigate=false: nothing sent

    response = ask(ros, 'Where did I see the bakery?', navigate=True)
    assert response.success, response.message
    answer = response.answer
    assert answer.kind == Answer.KIND_POSITION and answer.has_goal and answer.used_fallback
    assert answer.goal.header.frame_id == 'map'
    assert (answer.goal.pose.position.x, answer.goal.pose.position.y) == pytest.approx((2.0, 1.0))
    assert answer.evidence[0].text.upper() == 'BAKERY'
    assert 0.0 < answer.confidence <= 1.0
    assert answer.trace_id
    wait_until(lambda: len(goals) == 1, 10, 'goal not published on goal_pose')
    assert goals[0].pose.position.x == pytest.approx(2.0)

    other = ask(ros, 'where is the bakery?', sessions=['another-day'])
    assert not other.success and 'memory is empty' in other.message
    assert not ask(ros, '   ').success
