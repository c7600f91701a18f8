# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""reasoner_node over real DDS: the agent on a scripted OpenAI-compatible server, the Ask
action (feedback, cancel), concurrent questions, the fallbacks and the failure messages.

One memory_node holding four sign keyframes serves the DDS tests of the module; each
starts its own reasoner_node (and scripted LLM server) with the parameters it needs. The
conversions, image loading and markers behind them are tested without DDS at the end.
"""

from __future__ import annotations

import io
import json
import math
import socket
import threading
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import rclpy
from action_msgs.msg import GoalStatus
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import OccupancyGrid, Odometry
from PIL import Image as PILImage
from rclpy.action import ActionClient, ActionServer
from rclpy.executors import MultiThreadedExecutor
from rclpy.parameter import Parameter
from std_msgs.msg import Header, String
from visualization_msgs.msg import Marker, MarkerArray

from waymark.geometry import quaternion_from_yaw
from waymark.localisation.estimate import TRIANGULATED, TargetEstimate
from waymark.memory.entries import SEGMENT, FrameRecord, Hit
from waymark_interfaces.action import Ask, GoTo
from waymark_interfaces.msg import Answer
from waymark_interfaces.srv import Query
from waymark_ros.nodes.reasoner.answer_markers import answer_markers
from waymark_ros.nodes.reasoner.reasoner_node import ReasonerNode
from waymark_ros.ros import qos
from waymark_ros.ros.memory_msgs import hit_from_msg, hit_to_msg
from waymark_ros.tools.processes import start_node, stop_node
from waymark_testing.actions import connect
from waymark_testing.parameters import assert_refused, get_parameter, set_parameters
from waymark_testing.ros_harness import MATCH_SETTLE_S, RosHarness, wait_until
from waymark_testing.scripted_llm import ScriptedLLMServer, delay, text, tool_call
from waymark_testing.signs import SIGNS, T0, S, keyframe, publish_and_wait

CONFIG = Path(__file__).resolve().parents[3] / 'config' / 'robot.yaml'
BAKERY = SIGNS.index('BAKERY')  # keyframe index; the sign's frame is 'tour/<index>'
BAKERY_POSE = (2.0 * BAKERY, 1.0, 0.5, 0.1 * BAKERY)  # x, y, z, yaw as support.signs stores it


@pytest.fixture(scope='module')
def memory(tmp_path_factory):
    """memory_node with the sign keyframes stored; yields its data directory."""
    root = tmp_path_factory.mktemp('memory')
    node = start_node('memory_node', root / 'logs', {'data_dir': str(root / 'data')})
    harness = RosHarness()
    try:
        stats = harness.latest_json('memory/stats')
        wait_until(lambda: 'frames' in stats, 60, 'memory_node did not start')
        publish_and_wait(harness, [keyframe(i, t) for i, t in enumerate(SIGNS)], stats, len(SIGNS))
    except BaseException:
        print(f'----- memory_node -----\n{node.log_tail(60)}')
        stop_node(node)
        raise
    finally:
        harness.close()
    yield root / 'data'
    stop_node(node)


@pytest.fixture
def llm_server():
    """Starts ScriptedLLMServers; closes them at teardown."""
    servers: list[ScriptedLLMServer] = []

    def _start(script) -> ScriptedLLMServer:
        servers.append(ScriptedLLMServer(script))
        return servers[-1]

    yield _start
    for server in servers:
        server.close()


def start_reasoner(launch, tmp_path, memory_dir, server=None, **parameters):
    parameters = {
        'traces.dir': str(tmp_path / 'traces'),
        'memory.data_dir': str(memory_dir),
        **({'llm.base_url': server.base_url, 'llm.model': server.model} if server else {}),
        **parameters,
    }
    return launch('reasoner_node', **parameters)


def query(ros, question: str, navigate=False, sessions=(), image=b'') -> Query.Response:
    request = Query.Request(question=question, navigate=navigate)
    request.sessions = list(sessions)
    request.image.data = image
    return ros.call(Query, 'query', request, timeout_s=60)


def final_answer(**arguments):
    return tool_call('final_answer', arguments)


def position(msg: PoseStamped) -> tuple[float, float, float]:
    p = msg.pose.position
    return p.x, p.y, p.z


def position_of(point) -> tuple[float, float, float]:
    return point.x, point.y, point.z


def assert_bakery_goal(goal: PoseStamped) -> None:
    x, y, z, yaw = BAKERY_POSE
    assert goal.header.frame_id == 'map'
    assert position(goal) == pytest.approx((x, y, z))
    q = goal.pose.orientation
    assert (q.x, q.y, q.z, q.w) == pytest.approx(quaternion_from_yaw(yaw))


class StubNavigator:
    """A GoTo server standing in for navigator_node: records targets, answers `outcome`."""

    def __init__(self, ros, outcome=GoTo.Result.OUTCOME_REACHED, message='reached') -> None:
        self.targets: list[PoseStamped] = []
        self.evidence: list[tuple[str, int]] = []  # the memory each target comes from
        self.outcome, self.message = outcome, message
        self.server = ActionServer(ros.node, GoTo, 'go_to', execute_callback=self._execute)

    def _execute(self, handle) -> GoTo.Result:
        self.targets.append(handle.request.target)
        self.evidence.append((handle.request.evidence_session, handle.request.evidence_map_epoch))
        if self.outcome == GoTo.Result.OUTCOME_REACHED:
            handle.succeed()
        else:
            handle.abort()
        return GoTo.Result(
            outcome=self.outcome, message=self.message, final_pose=handle.request.target
        )


def read_trace(tmp_path, trace_id: str) -> dict:
    path = tmp_path / 'traces' / f'{trace_id}.json'
    assert path.is_file(), f'no trace {path.name}'
    return json.loads(path.read_text())


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


@pytest.mark.dds
def test_query_searches_then_answers_with_the_cited_keyframe(
    ros, launch, tmp_path, memory, llm_server
):
    server = llm_server(
        [
            tool_call('retrieve_from_text', {'query': 'bakery sign'}),
            final_answer(
                kind='position',
                text='The bakery sign was seen from the second stop.',
                evidence_ids=[f'tour/{BAKERY}'],
                goal={'x': BAKERY_POSE[0], 'y': BAKERY_POSE[1]},
                confidence=0.9,
            ),
            # The same model verifies the answer: candidate 1 is the model's own pick.
            text('{"matches": [1], "best": 1}'),
        ]
    )
    node = start_reasoner(launch, tmp_path, memory, server, **{'robot.odom_topic': 'odom'})
    navigator = StubNavigator(ros)
    outcomes = ros.collect(String, 'navigation/outcome', qos.latched(10))
    markers = ros.collect(MarkerArray, 'answer/markers', qos.latched())
    answers = ros.collect(Answer, 'answer', qos.latched())
    odometry = ros.node.create_publisher(Odometry, 'odom', 10)
    diagnostics = ros.collect(DiagnosticArray, '/diagnostics', 10)
    robot = Odometry()
    robot.header.frame_id = 'map'
    robot.pose.pose.position.x, robot.pose.pose.position.y = 1.5, -2.0
    robot.pose.pose.orientation.w = 1.0
    ros.node.create_timer(0.05, lambda: odometry.publish(robot))
    wait_until(lambda: odometry.get_subscription_count() > 0, 30, 'reasoner not on odom')
    # Its pose input says OK once a pose came, and the pose is kept in the same callback.
    wait_until(
        lambda: any(
            status.name.endswith(': pose input') and status.level == DiagnosticStatus.OK
            for array in diagnostics
            for status in array.status
        ),
        30,
        'the reasoner has no pose',
    )

    response = query(ros, 'Where did I see the bakery?', navigate=True)

    assert response.success, response.message
    assert 'answered by the agent in 2 steps' in response.message
    assert 'map epoch 0' in response.message
    answer = response.answer
    assert answer.kind == Answer.KIND_POSITION and answer.has_goal
    assert not answer.used_fallback
    assert_bakery_goal(answer.goal)  # the stored keyframe pose, yaw included
    assert answer.text == 'The bakery sign was seen from the second stop.'
    assert answer.confidence == pytest.approx(0.9)
    assert [hit.id for hit in answer.evidence] == [f'tour/{BAKERY}']
    assert answer.evidence[0].text.upper() == 'BAKERY'
    assert (answer.time.sec, answer.time.nanosec) == divmod(T0 + BAKERY * S, S)

    trace = read_trace(tmp_path, answer.trace_id)
    assert trace['trace_id'] == answer.trace_id
    assert trace['question'] == 'Where did I see the bakery?'
    assert [step['tool'] for step in trace['steps']] == ['retrieve_from_text', 'final_answer']
    assert trace['used_fallback'] is False and trace['llm_calls'] == 2
    assert trace['answer']['goal']['map_epoch'] == 0

    first, second, check = server.requests
    assert 'looking for this: "bakery sign"' in check['messages'][0]['content'][0]['text']
    assert trace['verifier_calls'] == 1
    assert 'The robot is at x=1.50 y=-2.00' in first['messages'][1]['content']
    offered = {tool['function']['name'] for tool in first['tools']}
    assert {'retrieve_from_text', 'final_answer', 'search_between'} <= offered
    shown = next(m for m in second['messages'] if m['role'] == 'tool')['content']
    assert f'[tour/{BAKERY}]' in shown and 'BAKERY' in shown.upper()
    pictures = [  # keyframes read from memory's data_dir, shown to the model
        part
        for m in second['messages']
        if isinstance(m.get('content'), list)
        for part in m['content']
        if part.get('type') == 'image_url'
    ]
    assert pictures and pictures[0]['image_url']['url'].startswith('data:image/jpeg;base64,')

    assert response.message.endswith('; goal sent to the navigator')
    wait_until(lambda: len(navigator.targets) == 1, 10, 'goal not sent to the navigator')
    assert_bakery_goal(navigator.targets[0])
    assert navigator.evidence == [('tour', 0)]  # the navigator can check its map epoch
    wait_until(lambda: outcomes, 10, 'no navigation outcome')
    outcome = json.loads(outcomes[-1].data)
    assert (outcome['outcome'], outcome['message']) == ('reached', 'reached')
    assert (outcome['session'], outcome['map_epoch']) == ('tour', 0)
    assert outcome['trace_id'] == answer.trace_id
    assert outcome['question'] == 'Where did I see the bakery?'
    x, y, _, yaw = BAKERY_POSE
    assert outcome['final'] == pytest.approx([x, y, yaw], abs=1e-3)
    wait_until(lambda: answers and markers, 10, 'answer and markers not published')
    assert answers[-1].trace_id == answer.trace_id
    drawn = markers[-1].markers
    assert drawn[0].action == Marker.DELETEALL
    assert any(m.ns == 'goal' and m.type == Marker.ARROW for m in drawn)
    assert any(m.ns == 'evidence' and m.type == Marker.SPHERE for m in drawn)
    assert any(f'[tour/{BAKERY}]' in m.text for m in drawn if m.ns == 'evidence_labels')

    empty = query(ros, '   ')
    assert not empty.success and empty.message == 'empty question'
    assert empty.status == Query.Response.STATUS_REFUSED
    assert response.status == Query.Response.STATUS_ANSWERED and response.queue_length == 0
    assert len(server.requests) == 3  # refused before the model
    assert f'verifier {server.model}' in node.log_tail()  # the LLM takes pictures: it verifies


@pytest.mark.dds
def test_ask_reports_each_step_and_cancel_stops_the_loop(
    ros, launch, tmp_path, memory, llm_server, request
):
    server = llm_server(
        [
            tool_call('retrieve_from_text', {'query': 'pharmacy'}),
            tool_call('retrieve_from_time', {'time': '2026-01-15T10:00:00'}),
            final_answer(kind='text', text='A pharmacy.', evidence_ids=['tour/0']),
            # The second goal: its first reply comes late, and it is cancelled meanwhile.
            delay(2.0, tool_call('retrieve_from_text', {'query': 'library'})),
            tool_call('retrieve_from_text', {'query': 'never asked'}),
        ]
    )
    start_reasoner(launch, tmp_path, memory, server)
    # rclpy's ActionClient joins its node's wait set before it is fully built, which can
    # crash an executor spinning that node meanwhile: it gets a node of its own, spun after.
    node = rclpy.create_node('ask_client', context=ros.context)
    client = ActionClient(node, Ask, 'ask')
    ros.executor.add_node(node)

    def forget() -> None:
        ros.executor.remove_node(node)
        node.destroy_node()

    request.addfinalizer(forget)
    connect(client)

    def send(question: str, feedback: list):
        sent = client.send_goal_async(
            Ask.Goal(question=question), feedback_callback=lambda m: feedback.append(m.feedback)
        )
        wait_until(sent.done, 30, 'goal not answered')
        return sent.result()

    def result_of(handle):
        future = handle.get_result_async()
        wait_until(future.done, 60, 'no result')
        return future.result()

    feedback: list[Ask.Feedback] = []
    handle = send('What was the first sign I saw?', feedback)
    assert handle.accepted
    done = result_of(handle)
    assert done.status == GoalStatus.STATUS_SUCCEEDED
    assert done.result.success, done.result.message
    assert done.result.answer.kind == Answer.KIND_TEXT and done.result.answer.text == 'A pharmacy.'
    assert not done.result.answer.used_fallback and not done.result.answer.has_goal
    wait_until(lambda: len(feedback) == 3, 10, 'feedback for each step')
    assert [f.step for f in feedback] == [1, 2, 3]
    tools = ['retrieve_from_text', 'retrieve_from_time', 'final_answer']
    assert [f.tool for f in feedback] == tools
    assert json.loads(feedback[0].arguments) == {'query': 'pharmacy'}
    assert feedback[0].hits >= 1 and feedback[1].hits == len(SIGNS) and feedback[2].hits == 0
    assert 0.0 < feedback[0].elapsed <= feedback[1].elapsed <= feedback[2].elapsed

    cancelled: list[Ask.Feedback] = []
    handle = send('Where is the library?', cancelled)
    assert handle.accepted
    wait_until(lambda: len(server.requests) == 4, 10, 'the model was not asked')
    cancel = handle.cancel_goal_async()
    wait_until(cancel.done, 10, 'cancel not answered')
    assert cancel.result().goals_canceling
    stopped = result_of(handle)
    assert stopped.status == GoalStatus.STATUS_CANCELED
    assert not stopped.result.success and 'cancelled after 1 step' in stopped.result.message
    assert stopped.result.answer.kind == Answer.KIND_NONE
    # The result is sent when the loop has returned: no step can follow it.
    assert len(server.requests) == 4 and server.remaining == 1  # no step after the cancel
    assert [f.tool for f in cancelled] == ['retrieve_from_text']
    assert read_trace(tmp_path, stopped.result.answer.trace_id)['cancelled'] is True

    empty = send('  ', [])  # refused with a reason, as a result
    assert empty.accepted
    refused = result_of(empty)
    assert refused.status == GoalStatus.STATUS_ABORTED
    assert refused.result.status == Ask.Result.STATUS_REFUSED
    assert refused.result.message == 'empty question'
    assert done.result.status == Ask.Result.STATUS_ANSWERED
    assert stopped.result.status == Ask.Result.STATUS_CANCELLED


@pytest.mark.dds
def test_two_queries_are_answered_at_the_same_time(ros, launch, tmp_path, memory, llm_server):
    reply_s = 1.0

    def search_then_answer(body):  # two slow replies per question
        searched = any(m['role'] == 'tool' for m in body['messages'])
        reply = (
            final_answer(kind='text', text='Nothing to see.')
            if searched
            else tool_call('retrieve_from_text', {'query': 'anything'})
        )
        return delay(reply_s, reply)

    server = llm_server(search_then_answer)
    start_reasoner(launch, tmp_path, memory, server)
    clients = [ros.node.create_client(Query, 'query') for _ in range(2)]
    for client in clients:
        assert client.wait_for_service(timeout_sec=30)
    futures = [
        client.call_async(Query.Request(question=f'question {n}'))
        for n, client in enumerate(clients)
    ]
    wait_until(lambda: all(f.done() for f in futures), 30, 'both answers')
    for future in futures:
        assert future.result().success, future.result().message
        assert future.result().answer.text == 'Nothing to see.'
    assert len(server.requests) == 4
    # One after the other, the second question's first step would come after the first
    # question's last; at the same time, both first steps come before either's second.
    searched = [any(m['role'] == 'tool' for m in body['messages']) for body in server.requests]
    assert searched == [False, False, True, True], searched


def peak_rss_kb(pid: int) -> int:
    """The high-water mark of a process's resident memory (VmHWM), in kB."""
    for line in Path(f'/proc/{pid}/status').read_text().splitlines():
        if line.startswith('VmHWM:'):
            return int(line.split()[1])
    raise AssertionError(f'no VmHWM for process {pid}')


def png_bomb(side: int) -> bytes:
    """A black PNG of side x side pixels: a few hundred kB that decode to side² x 3 bytes."""
    buffer = io.BytesIO()
    PILImage.new('1', (side, side)).save(buffer, format='PNG', optimize=True)
    return buffer.getvalue()


@pytest.mark.dds
@pytest.mark.parametrize('lessons', [False, True], ids=['no-lessons', 'lessons'])
def test_twenty_questions_at_once_to_a_hanging_llm_each_get_an_answer_or_busy(
    ros, launch, tmp_path, memory, llm_server, lessons
):
    # The model accepts every request and never answers.
    server = llm_server(lambda body: delay(600.0))
    slots, waiting, deadline_s = 2, 3, 6.0
    start_reasoner(
        launch,
        tmp_path,
        memory,
        server,
        **{
            'max_concurrent_questions': slots,
            'question_queue_length': waiting,
            'agent.deadline_s': deadline_s,
            'agent.fallback_reserve_s': 1.0,
            'llm.max_retries': 0,
            'lessons.enabled': lessons,  # one more service call per question
        },
    )
    # Each client's reader gets every response of the burst and keeps only its own, so it
    # must hold them all: at the services' default depth of 10 its own can be pushed out.
    clients = [
        ros.node.create_client(Query, 'query', qos_profile=qos.responses()) for _ in range(20)
    ]
    for client in clients:
        assert client.wait_for_service(timeout_sec=30)
    time.sleep(MATCH_SETTLE_S)
    futures = [
        client.call_async(Query.Request(question=f'Where is thing {n}?'))
        for n, client in enumerate(clients)
    ]
    # Bounded so that a lost request fails the test instead of hanging it.
    wait_until(lambda: all(f.done() for f in futures), 3 * deadline_s + 30, 'all 20 answers')
    responses = [future.result() for future in futures]
    statuses = Counter(response.status for response in responses)
    expected = {
        Query.Response.STATUS_ANSWERED,
        Query.Response.STATUS_BUSY,
        Query.Response.STATUS_TIMEOUT,
    }
    assert set(statuses) <= expected, [(r.status, r.message) for r in responses]
    busy = [r for r in responses if r.status == Query.Response.STATUS_BUSY]
    assert busy, 'twenty at once must overflow two loops and a queue of three'
    for response in busy:
        assert not response.success and response.queue_length == waiting
        assert response.message.startswith(f'busy: {slots} questions are being answered')
        assert not response.answer.has_goal
    for response in responses:
        if response.status == Query.Response.STATUS_ANSWERED:  # the hanging model was cut
            assert response.success and response.answer.used_fallback, response.message
            # Cut in its LLM call, or let in from the queue after its loop's deadline.
            cut = ('embedder-only fallback (LLM unreachable', 'embedder-only fallback (deadline')
            assert response.message.startswith(cut), response.message
            assert response.answer.has_goal
        elif response.status == Query.Response.STATUS_TIMEOUT:
            assert not response.success and response.message.startswith('timeout: waited')
    admitted = 20 - len(busy)
    assert admitted >= slots and len(server.requests) <= admitted


@pytest.mark.dds
def test_an_ask_goal_cancelled_in_the_queue_is_answered_cancelled_at_once(
    ros, launch, tmp_path, memory, llm_server, request
):
    server = llm_server(lambda body: delay(600.0))  # holds the only loop
    start_reasoner(
        launch,
        tmp_path,
        memory,
        server,
        **{
            'max_concurrent_questions': 1,
            'question_queue_length': 1,
            'agent.deadline_s': 30.0,
            'llm.max_retries': 0,
        },
    )
    asker = rclpy.create_node('ask_queue_client', context=ros.context)
    client = ActionClient(asker, Ask, 'ask')
    ros.executor.add_node(asker)
    request.addfinalizer(lambda: (ros.executor.remove_node(asker), asker.destroy_node()))
    connect(client)
    first = client.send_goal_async(Ask.Goal(question='Where is the bakery?'))
    wait_until(lambda: len(server.requests) == 1, 30, 'the first question did not reach the model')
    second = client.send_goal_async(Ask.Goal(question='Where is the library?'))
    wait_until(second.done, 30, 'second goal not answered')
    handle = second.result()
    assert handle.accepted
    # Executing: its callback has gone on to wait in the queue, as the only loop waits for
    # the model.
    wait_until(
        lambda: handle.status == GoalStatus.STATUS_EXECUTING, 10, 'second goal not executing'
    )
    cancel = handle.cancel_goal_async()
    wait_until(cancel.done, 10, 'cancel not answered')
    result = handle.get_result_async()
    wait_until(result.done, 10, 'a cancelled goal in the queue was not answered')
    assert result.result().status == GoalStatus.STATUS_CANCELED
    cancelled = result.result().result
    assert cancelled.status == Ask.Result.STATUS_CANCELLED and not cancelled.success
    assert cancelled.message.startswith('cancelled after ') and 'in the queue' in cancelled.message
    assert cancelled.queue_length == 1
    assert len(server.requests) == 1  # the cancelled question never reached the model
    wait_until(first.done, 10, 'first goal not answered')
    assert first.result().accepted


@pytest.mark.dds
def test_input_over_the_limits_is_refused_before_any_work(
    ros, launch, tmp_path, llm_server, request
):
    server = llm_server([])  # any request to the model would be answered with an error
    node = start_reasoner(launch, tmp_path, tmp_path / 'no-memory', server)
    wait_until(lambda: 'answering with LLM' in node.log_tail(), 30, 'reasoner not up')
    peak_before = peak_rss_kb(node.process.pid)

    long = query(ros, 'x' * 1_000_000)
    assert long.status == Query.Response.STATUS_REFUSED and not long.success
    assert long.message == 'the question is 1000000 characters, over the limit of 2000'
    assert long.answer.kind == Answer.KIND_NONE and not long.answer.has_goal

    bomb = png_bomb(12_000)  # 144 Mpx: ~430 MB once decoded
    assert len(bomb) < 200_000
    photo = query(ros, 'where was this?', image=bomb)
    assert photo.status == Query.Response.STATUS_REFUSED
    assert photo.message == (
        'the photo cannot be used: image of 12000x12000 pixels is over the limit of 25000000 pixels'
    )
    grown_kb = peak_rss_kb(node.process.pid) - peak_before
    assert grown_kb < 50_000, f'the refused photo cost {grown_kb} kB'

    many = query(ros, 'where is the bakery?', sessions=[f's{n}' for n in range(65)])
    assert many.status == Query.Response.STATUS_REFUSED
    assert many.message == '65 sessions named, over the limit of 64'
    odd = query(ros, 'where is the bakery?', sessions=['tour', '../etc\n'])
    assert odd.status == Query.Response.STATUS_REFUSED
    assert odd.message.startswith("invalid session name '../etc\\n': use 1-64 letters")

    # A node of its own for the action client (see the Ask test above).
    asker = rclpy.create_node('ask_limits_client', context=ros.context)
    client = ActionClient(asker, Ask, 'ask')
    ros.executor.add_node(asker)
    request.addfinalizer(lambda: (ros.executor.remove_node(asker), asker.destroy_node()))
    connect(client)
    sent = client.send_goal_async(Ask.Goal(question='y' * 5000))
    wait_until(sent.done, 30, 'goal not answered')
    result = sent.result().get_result_async()
    wait_until(result.done, 30, 'no result')
    assert result.result().status == GoalStatus.STATUS_ABORTED
    refused = result.result().result
    assert refused.status == Ask.Result.STATUS_REFUSED
    assert refused.message == 'the question is 5000 characters, over the limit of 2000'
    assert server.requests == []  # nothing reached the model


@pytest.mark.dds
def test_unreachable_llm_gives_the_embedder_answer_flagged(ros, launch, tmp_path, memory):
    start_reasoner(
        launch,
        tmp_path,
        memory,
        **{
            'llm.base_url': f'http://127.0.0.1:{free_port()}/v1',
            'llm.max_retries': 0,
            'llm.timeout_s': 2.0,
        },
    )
    response = query(ros, 'Where did I see the bakery?')
    assert response.success, response.message
    assert 'embedder-only fallback (LLM unreachable' in response.message
    answer = response.answer
    assert answer.used_fallback and answer.kind == Answer.KIND_POSITION
    assert_bakery_goal(answer.goal)
    assert answer.evidence[0].text.upper() == 'BAKERY'
    trace = read_trace(tmp_path, answer.trace_id)
    assert trace['used_fallback'] is True and trace['fallback_reason'].startswith('LLM unreachable')


@pytest.mark.dds
def test_without_an_llm_the_embedder_answers_and_publishes_the_goal(ros, launch, tmp_path, memory):
    # An action name nobody serves (an earlier test's stub may still be known to DDS).
    settings = {'navigation.action': 'go_to_nobody', 'navigation.server_wait_s': 0.5}
    node = start_reasoner(launch, tmp_path, memory, **settings)
    outcomes = ros.collect(String, 'navigation/outcome', qos.latched(10))

    quiet = query(ros, 'where is the library?', navigate=False)
    assert quiet.success, quiet.message
    assert quiet.answer.goal.pose.position.x == pytest.approx(2.0 * SIGNS.index('LIBRARY'))
    assert 'navigator' not in quiet.message  # navigate=false: nothing sent

    response = query(ros, 'Where did I see the bakery?', navigate=True)
    assert response.success, response.message
    assert 'embedder-only fallback (no LLM configured)' in response.message
    answer = response.answer
    assert answer.kind == Answer.KIND_POSITION and answer.has_goal and answer.used_fallback
    assert_bakery_goal(answer.goal)
    assert answer.evidence[0].text.upper() == 'BAKERY'
    assert 0.0 < answer.confidence <= 1.0
    assert read_trace(tmp_path, answer.trace_id)['fallback_reason'] == 'no LLM configured'
    # No navigator is running: the answer says so, and the outcome records it.
    assert response.message.endswith('; navigator not available on go_to_nobody: goal not sent')
    wait_until(lambda: outcomes, 10, 'no navigation outcome')
    # One writer's records come in order: the first query, had it sent a goal, would have
    # its record here, before this one.
    [record] = [json.loads(msg.data) for msg in outcomes]
    assert (record['outcome'], record['question']) == ('not_sent', 'Where did I see the bakery?')

    other = query(ros, 'where is the bakery?', sessions=['another-day'])
    assert not other.success and 'memory is empty' in other.message
    assert other.answer.kind == Answer.KIND_NONE and not other.answer.has_goal
    photo = query(ros, 'where was this?', image=b'not a picture')
    assert not photo.success and 'photo cannot be used' in photo.message
    assert 'LLM none (fallback only); verifier off' in node.log_tail()
    stop_node(node)
    # Kept to another robot's sessions (memory.robots): this memory holds none of them.
    node = start_reasoner(launch, tmp_path, memory, **settings, **{'memory.robots': 'go1-b'})
    elsewhere = query(ros, 'where is the bakery?')
    assert not elsewhere.success and 'memory is empty' in elsewhere.message


@pytest.mark.dds
def test_memory_node_down_and_bad_parameters_fail_clearly(ros, tmp_path):
    logs = tmp_path / 'logs'
    # The robot's parameters, memory looked for under a name nobody serves, as if
    # memory_node were not running.
    lonely = start_node(
        'reasoner_node',
        logs,
        {'memory_timeout_s': 1.0, 'traces.dir': str(tmp_path / 'traces')},
        remappings={'search_memory': 'absent/search_memory'},
        params_file=CONFIG,
    )
    bad = {
        'level': {'agent.level': 'room'},
        'url': {'llm.base_url': 'localhost:8000'},
        'range': {'agent.max_steps': 0},
        'combination': {'localisation.assumed_range_m': 20.0},
        'robots': {'memory.robots': 'go1-a, go1/b'},
    }
    refused = {
        name: start_node('reasoner_node', logs / name, parameters)
        for name, parameters in bad.items()
    }
    try:
        response = query(ros, 'where is the bakery?')
        assert not response.success
        assert 'memory_node is not running' in response.message
        for node in refused.values():
            node.process.wait(timeout=30)
            assert node.process.returncode == 2, node.log_tail()
        assert "parameter agent.level='room' must be one of frame, segment" in (
            refused['level'].log_tail()
        )
        assert 'must be an http:// or https:// URL' in refused['url'].log_tail()
        assert 'cannot start' in refused['range'].log_tail()
        assert 'agent.max_steps' in refused['range'].log_tail()
        assert 'localisation.assumed_range_m <= localisation.max_range_m' in (
            refused['combination'].log_tail()
        )
        assert "invalid robot id 'go1/b'" in refused['robots'].log_tail()
    finally:
        for node in [lonely, *refused.values()]:
            stop_node(node)


def test_hit_from_msg_inverts_hit_to_msg():
    frame = FrameRecord('tour', 7, T0, 1.5, -2.0, 0.5, 0.3, 2, True, 'images/ab/c.jpg', 'EXIT')
    segment = replace(frame, index=3, kind=SEGMENT, end_ns=T0 + 3 * S, pose_valid=False, x=0.0)
    for record in (frame, replace(segment, y=0.0, z=0.0, yaw=0.0)):
        hit = hit_from_msg(hit_to_msg(Hit(record, 0.75, 'text'), 'map'))
        assert hit.record == replace(record, yaw=pytest.approx(record.yaw))
        assert (hit.score, hit.view) == (0.75, 'text')
    lost = hit_to_msg(Hit(segment, 0.5, 'caption_full'), 'map')
    lost.pose.pose.position.x = math.nan  # not a position: the pose is marked invalid
    assert hit_from_msg(lost).record.x == 0.0 and not hit_from_msg(lost).record.pose_valid

    for field, value, why in (
        ('kind', 'room', 'unknown kind'),
        ('id', 'tour/8', 'does not match'),
        ('session', '../x', 'invalid session name'),
    ):
        msg = hit_to_msg(Hit(frame, 0.5, 'text'), 'map')
        setattr(msg, field, value)
        with pytest.raises(ValueError, match=why):
            hit_from_msg(msg)
    msg = hit_to_msg(Hit(frame, 0.5, 'text'), 'map')
    msg.pose.pose.position.y = math.inf
    with pytest.raises(ValueError, match='non-finite pose'):
        hit_from_msg(msg)


def test_answer_markers_without_a_goal_keep_the_map_frame():
    markers = answer_markers(Answer(kind=Answer.KIND_TEXT, text='a sign'), 'map', T0)
    assert [m.action for m in markers.markers] == [Marker.DELETEALL]
    assert markers.markers[0].header.frame_id == 'map'
    assert markers.markers[0].header.stamp.sec == T0 // S


@pytest.mark.dds
def test_step_budget_top_k_and_traces_change_while_running(ros, launch, tmp_path, memory):
    start_reasoner(launch, tmp_path, memory)
    moved = tmp_path / 'moved'
    changes = {
        'agent.top_k': 2,
        'agent.max_steps': 1,
        'traces.dir': str(moved),
        'localisation.standoff_m': 1.5,
        'relations.max_anchors': 1,
    }
    results = set_parameters(ros, 'reasoner_node', changes)
    assert all(result.successful for result in results.values()), results

    answer = query(ros, 'Where did I see the bakery?').answer
    trace = json.loads((moved / f'{answer.trace_id}.json').read_text())
    assert (trace['config']['top_k'], trace['config']['max_steps']) == (2, 1)
    assert trace['config']['localisation']['standoff_m'] == 1.5
    assert trace['config']['relations']['max_anchors'] == 1
    assert not (tmp_path / 'traces' / f'{answer.trace_id}.json').exists()

    assert set_parameters(ros, 'reasoner_node', {'traces.dir': ''})['traces.dir'].successful
    unlogged = query(ros, 'Where did I see the bakery?').answer
    assert unlogged.trace_id and not (moved / f'{unlogged.trace_id}.json').exists()

    refused = set_parameters(
        ros,
        'reasoner_node',
        {
            'agent.top_k': 500,
            'agent.level': 'room',
            'agent.fallback_reserve_s': 90.0,
            'localisation.assumed_range_m': 20.0,
            'llm.model': 'other',
        },
    )
    assert_refused(refused['agent.top_k'], 'Parameter agent.top_k out of range')
    assert_refused(refused['agent.level'], "agent.level='room' must be one of frame, segment")
    assert_refused(
        refused['agent.fallback_reserve_s'], 'fallback_reserve_s must be in [0, deadline_s)'
    )
    assert_refused(
        refused['localisation.assumed_range_m'],
        'need localisation.min_range_m < localisation.assumed_range_m',
    )
    assert_refused(refused['llm.model'], 'read-only')
    assert get_parameter(ros, 'reasoner_node', 'agent.top_k') == 2


@pytest.fixture
def reasoner_in_process(ros, tmp_path, memory):
    """reasoner_node in this process (on the harness's context), without an LLM and with
    free space from `map`, so that a test can reach its agent and its free space."""
    overrides = [
        Parameter('traces.dir', value=str(tmp_path / 'traces')),
        Parameter('memory.data_dir', value=str(memory)),
        Parameter('free_space.map_topic', value='map'),
        Parameter('free_space.robot_radius_m', value=0.3),
        Parameter('navigation.action', value='go_to_nobody'),
    ]
    node = ReasonerNode(context=ros.context, parameter_overrides=overrides)
    executor = MultiThreadedExecutor(num_threads=node.executor_threads, context=ros.context)
    executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    yield node
    executor.shutdown()
    spinner.join(timeout=10)
    node.destroy_node()


def with_targets(node, targets: list) -> None:
    """The agent's answers get the next of `targets` (a function of the answer): target
    localisation is the agent's, and this tests how the node carries what it finds."""
    ask = node._agent.ask

    def located(*args, **kwargs):
        answer = ask(*args, **kwargs)
        answer.target = targets.pop(0)(answer)
        return answer

    node._agent.ask = located


@pytest.mark.dds
def test_the_answer_carries_the_target_and_its_markers_over_dds(ros, reasoner_in_process):
    def beside_the_goal(answer):
        g = answer.goal
        return TargetEstimate(
            g.x + 1.5, g.y, 1.1, 0.4, TRIANGULATED, map_epoch=g.map_epoch, session=g.session
        )

    with_targets(reasoner_in_process, [beside_the_goal, lambda _answer: None])
    markers = ros.collect(MarkerArray, 'answer/markers', qos.latched())

    located = query(ros, 'Where did I see the bakery?')
    assert located.success, located.message
    answer = located.answer
    assert answer.has_goal and answer.has_target
    assert_bakery_goal(answer.goal)
    target = answer.target_position
    assert target.header.frame_id == 'map'
    assert position_of(target.point) == pytest.approx((BAKERY_POSE[0] + 1.5, BAKERY_POSE[1], 1.1))
    assert answer.target_sigma_m == pytest.approx(0.4) and answer.target_method == TRIANGULATED
    assert located.message.endswith('target by triangulated, +/- 0.40 m')
    wait_until(lambda: markers, 10, 'no answer markers')
    drawn = {(m.ns, m.id): m for m in markers[-1].markers}
    assert drawn[('target', 0)].scale.x == pytest.approx(0.8)  # radius = sigma
    assert position_of(drawn[('target', 1)].pose.position) == pytest.approx(
        position_of(target.point)
    )
    assert drawn[('target', 2)].text == 'target: triangulated +/- 0.40 m'
    assert len(drawn[('target', 3)].points) == 2

    unplaced = query(ros, 'Where did I see the bakery?').answer
    assert unplaced.has_goal and not unplaced.has_target
    assert (unplaced.target_sigma_m, unplaced.target_method) == (0.0, '')
    assert position_of(unplaced.target_position.point) == (0.0, 0.0, 0.0)
    wait_until(lambda: len(markers) > 1, 10, 'no markers of the second answer')
    assert not [m for m in markers[-1].markers if m.ns == 'target']


@pytest.mark.dds
def test_free_space_is_the_latched_map_inflated_by_the_robot(ros, reasoner_in_process):
    free = reasoner_in_process.free_space
    assert free is not None and not free.is_free(1.0, 1.0)  # no map yet: nothing is free
    grid = OccupancyGrid()
    grid.header.frame_id = 'map'
    grid.info.resolution, grid.info.width, grid.info.height = 0.1, 40, 40
    grid.info.origin.orientation.w = 1.0
    cells = np.zeros((40, 40), dtype=np.int8)
    cells[:, 30] = 100  # a wall at x = 3.0 .. 3.1
    cells[:5, :] = -1  # unknown below y = 0.5
    grid.data = cells.ravel().tolist()
    publisher = ros.node.create_publisher(OccupancyGrid, 'map', qos.latched())
    publisher.publish(grid)  # latched: the reasoner may subscribe later and still get it
    wait_until(lambda: free.has_map, 30, 'the reasoner did not take the map')
    assert free.is_free(1.5, 2.0)
    assert not free.is_free(2.85, 2.0)  # within the robot's radius of the wall
    assert not free.is_free(3.05, 2.0)  # the wall
    assert not free.is_free(1.5, 0.2)  # unknown
    assert not free.is_free(1.5, 0.65)  # within the robot's radius of unknown space
    assert not free.is_free(-1.0, 2.0) and not free.is_free(math.nan, 2.0)  # off the map
    elsewhere = OccupancyGrid(header=Header(frame_id='odom'), info=grid.info, data=[0] * 1600)
    publisher.publish(elsewhere)
    wait_until(lambda: free.refusals == 1, 30, 'the odom map was not looked at')
    assert free.last_refusal == "map on map in frame 'odom', not 'map': ignored"
    assert not free.is_free(1.5, 0.2)  # the odom map was refused; the map is kept
