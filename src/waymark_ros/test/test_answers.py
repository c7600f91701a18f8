# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Agent answers as reasoner_node's messages and replies, built without DDS."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from visualization_msgs.msg import Marker

from waymark.agent.agent import NONE, POSITION, TEXT, TIME, AgentAnswer, Goal, StepEvent
from waymark.geometry import quaternion_from_yaw
from waymark.localisation.estimate import DEPTH, VIEWPOINT, TargetEstimate
from waymark.memory.entries import FrameRecord, Hit
from waymark_interfaces.msg import Answer
from waymark_interfaces.srv import Query
from waymark_ros.client import AskResult, Target
from waymark_ros.nodes.reasoner.answer_markers import answer_markers
from waymark_ros.nodes.reasoner.answers import (
    FEEDBACK_ARGUMENT_CHARS,
    MAX_SIGMA_M,
    MAX_STAMP_NS,
    Reply,
    answer_message,
    answer_status,
    answer_to_msg,
    step_feedback,
)

T0 = 1_768_471_200_000_000_000
EXIT = FrameRecord('tour', 7, T0, 1.5, -2.0, 0.5, 0.3, 2, True, 'images/ab/c.jpg', 'EXIT')


def never() -> bool:
    raise AssertionError('memory was asked whether it is empty')


def test_a_position_answer_carries_its_goal_evidence_and_clipped_confidence():
    answer = AgentAnswer(
        kind=POSITION,
        text='by the exit',
        goal=Goal(1.5, -2.0, 0.5, 0.3, map_epoch=2, session='tour'),
        confidence=1.7,
        evidence=[Hit(EXIT, 0.8, 'text')],
        trace_id='a' * 32,
    )
    msg = answer_to_msg(answer, 'map', T0 + 5)
    assert (msg.kind, msg.text, msg.confidence, msg.trace_id) == (
        Answer.KIND_POSITION,
        'by the exit',
        1.0,
        'a' * 32,
    )
    assert msg.has_goal and msg.goal.header.frame_id == 'map'
    assert (msg.goal.header.stamp.sec, msg.goal.header.stamp.nanosec) == (T0 // 10**9, 5)
    p, q = msg.goal.pose.position, msg.goal.pose.orientation
    assert (p.x, p.y, p.z) == (1.5, -2.0, 0.5)
    assert (q.x, q.y, q.z, q.w) == pytest.approx(quaternion_from_yaw(0.3))
    [hit] = msg.evidence
    assert (hit.id, hit.pose.header.frame_id) == ('tour/7', 'map')


def test_times_beyond_a_message_stamp_are_not_sent():
    assert answer_to_msg(AgentAnswer(kind=TIME, time_ns=T0), 'map', 0).time.sec == T0 // 10**9
    late = answer_to_msg(AgentAnswer(kind=TIME, time_ns=MAX_STAMP_NS + 1), 'map', 0)
    assert (late.time.sec, late.time.nanosec) == (0, 0)
    unknown = answer_to_msg(AgentAnswer(kind='colour', confidence=-1.0), 'map', 0)
    assert (unknown.kind, unknown.confidence, unknown.has_goal) == (Answer.KIND_NONE, 0.0, False)


def test_step_feedback_cuts_long_arguments():
    event = StepEvent(step=2, tool='search', arguments='x' * 5000, hits=4, elapsed_s=1.25)
    feedback = step_feedback(event)
    assert (feedback.step, feedback.tool, feedback.hits) == (2, 'search', 4)
    assert feedback.elapsed == 1.25 and len(feedback.arguments) == FEEDBACK_ARGUMENT_CHARS


def test_each_kind_of_answer_has_its_status_and_message():
    agent = AgentAnswer(kind=TEXT, text='EXIT', steps=3, llm_calls=4)
    assert answer_status(agent) == Query.Response.STATUS_ANSWERED
    assert answer_message(agent, never) == 'answered by the agent in 3 steps (4 LLM calls)'
    fallback = AgentAnswer(
        kind=POSITION,
        goal=Goal(0.0, 0.0, 0.0, 0.0, map_epoch=5),
        used_fallback=True,
        fallback_reason='no LLM',
    )
    assert answer_message(fallback, never) == (
        'embedder-only fallback (no LLM); goal in map epoch 5'
    )
    cancelled = AgentAnswer(kind=TEXT, cancelled=True, steps=1)
    assert answer_status(cancelled) == Query.Response.STATUS_CANCELLED
    assert answer_message(cancelled, never) == 'cancelled after 1 step'
    away = AgentAnswer(fallback_reason='memory unavailable: no search_memory service')
    assert answer_status(away) == Query.Response.STATUS_UNAVAILABLE
    assert answer_message(away, never) == away.fallback_reason


def test_an_empty_memory_is_told_apart_from_an_unanswered_question():
    nothing = AgentAnswer(kind=NONE, fallback_reason='no hit passed the verifier')
    assert answer_status(nothing) == Query.Response.STATUS_NO_ANSWER
    assert answer_message(nothing, lambda: True) == (
        'memory is empty: no keyframes stored for the requested sessions'
    )
    assert answer_message(nothing, lambda: False) == 'no hit passed the verifier'
    found = AgentAnswer(kind=NONE, evidence=[Hit(EXIT, 0.1, 'text')])
    assert answer_message(found, never) == 'no answer'


def test_a_reply_fills_the_query_response_and_the_ask_result_alike():
    answer = Answer(kind=Answer.KIND_TEXT, text='EXIT')
    reply = Reply(Query.Response.STATUS_ANSWERED, 'answered', answer, queue_length=2)
    response = reply.fill(Query.Response())
    result = reply.ask_result()
    for carried in (response, result):
        assert (carried.success, carried.message, carried.status, carried.queue_length) == (
            True,
            'answered',
            Query.Response.STATUS_ANSWERED,
            2,
        )
        assert carried.answer.text == 'EXIT'
    busy = Reply(Query.Response.STATUS_BUSY, 'busy')
    assert not busy.success and busy.ask_result().answer.kind == Answer.KIND_NONE


def test_answer_markers_draw_the_goal_and_the_placed_evidence_by_rank():
    answer = answer_to_msg(
        AgentAnswer(
            kind=POSITION,
            text='by the exit ' * 10,
            goal=Goal(1.0, 2.0, 0.0, 0.0, map_epoch=0),
            evidence=[Hit(EXIT, 0.9, 'text'), Hit(EXIT, 0.5, 'caption')],
        ),
        'map',
        T0,
    )
    answer.evidence[1].pose_valid = False
    markers = answer_markers(answer, 'map', T0).markers
    assert [(m.ns, m.id) for m in markers[1:]] == [
        ('goal', 0),
        ('goal', 1),
        ('evidence', 0),
        ('evidence_labels', 0),
    ]
    label = markers[2]
    assert len(label.text) == 60 and label.text.endswith('...')
    assert label.pose.position.z == pytest.approx(0.8)
    assert markers[4].text == '[tour/7] 0.90 text'
    assert math.isclose(markers[3].scale.x, 0.5)


SIGN = TargetEstimate(3.0, -1.0, 1.2, 0.3, DEPTH, map_epoch=2, session='tour', sources=('tour/7',))


def test_a_located_target_is_sent_beside_its_goal():
    answer = AgentAnswer(
        kind=POSITION,
        goal=Goal(2.0, -1.0, 0.0, 0.0, map_epoch=2, session='tour'),
        target=SIGN,
        used_fallback=True,
        fallback_reason='no LLM',
    )
    msg = answer_to_msg(answer, 'map', T0)
    p = msg.target_position.point
    assert msg.has_target and msg.target_position.header.frame_id == 'map'
    assert (p.x, p.y, p.z) == (3.0, -1.0, 1.2)
    assert msg.target_sigma_m == pytest.approx(0.3) and msg.target_method == DEPTH
    assert answer_message(answer, never).endswith('; target by depth, +/- 0.30 m')
    assert AskResult('answered', '', msg).target == Target(
        3.0, -1.0, 1.2, msg.target_sigma_m, DEPTH
    )
    huge = replace(SIGN, sigma_m=1e300, method=VIEWPOINT)
    assert answer_to_msg(replace(answer, target=huge), 'map', T0).target_sigma_m == MAX_SIGMA_M


def test_without_a_target_the_target_fields_are_zero():
    msg = answer_to_msg(AgentAnswer(kind=POSITION, goal=Goal(1, 2, 0, 0, 0)), 'map', T0)
    assert not msg.has_target and msg.target_method == '' and msg.target_sigma_m == 0.0
    assert msg.target_position == Answer().target_position
    assert AskResult('answered', '', msg).target is None


def test_a_target_in_another_map_than_its_goal_is_not_sent():
    answer = AgentAnswer(
        kind=POSITION, goal=Goal(2.0, -1.0, 0.0, 0.0, map_epoch=3, session='tour'), target=SIGN
    )
    assert not answer_to_msg(answer, 'map', T0).has_target
    assert answer_message(answer, never).endswith(
        "target dropped: in map epoch 2 of 'tour', the goal in map epoch 3 of 'tour'"
    )


def test_answer_markers_draw_the_target_by_method_with_a_line_from_the_goal():
    answer = AgentAnswer(
        kind=POSITION,
        goal=Goal(2.0, -1.0, 0.0, 0.0, map_epoch=2, session='tour'),
        target=SIGN,
    )
    markers = answer_markers(answer_to_msg(answer, 'map', T0), 'map', T0).markers
    target = {m.id: m for m in markers if m.ns == 'target'}
    disc, point, label, line = (target[i] for i in range(4))
    assert disc.type == Marker.CYLINDER and disc.scale.x == pytest.approx(0.6)
    assert (disc.pose.position.x, disc.pose.position.y) == (3.0, -1.0)
    assert (point.color.r, point.color.g, point.color.b) == pytest.approx((0.1, 0.9, 0.2))
    assert label.text == 'target: depth +/- 0.30 m'
    assert [(p.x, p.y) for p in line.points] == [(2.0, -1.0), (3.0, -1.0)]
    viewpoint = replace(answer, goal=None, target=replace(SIGN, method=VIEWPOINT, sigma_m=0.0))
    markers = answer_markers(answer_to_msg(viewpoint, 'map', T0), 'map', T0).markers
    target = [m for m in markers if m.ns == 'target']
    assert [m.id for m in target] == [0, 1, 2]  # no goal, no line
    assert target[0].scale.x > 0 and target[1].color.r == pytest.approx(0.6)
