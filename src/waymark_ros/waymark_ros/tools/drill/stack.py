# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""A fresh stack for one drill: nodes started as processes on the drill's own DDS domain
and data directory, and a client node in this process to talk to them."""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import rclpy
from action_msgs.msg import GoalStatus
from ament_index_python.packages import get_package_share_directory
from rclpy.action import ActionClient
from rclpy.exceptions import InvalidHandle
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor, ShutdownException
from std_msgs.msg import String

from waymark_interfaces.action import GoTo, RunTask
from waymark_ros.ros import qos
from waymark_ros.tools.processes import NodeProcess, start_node, stop_node

# Discovery is asymmetric: a server can be seen a moment before it has matched the client
# back, and a request sent in that moment gets no response. Wait this long after discovery.
MATCH_SETTLE_S = 1.0
SPIN_POLL_S = 0.1  # the spin thread looks at the context at least this often
# A go_to goal still unanswered after this long is sent again, at most this many times: a
# restarted server can miss the first while it matches the client back, and a navigator
# takes a new goal in place of the old one, so a duplicate does no harm.
GOAL_RESEND_S = 5.0
MAX_GOAL_SENDS = 3
OUTCOMES = {
    GoTo.Result.OUTCOME_REACHED: 'reached',
    GoTo.Result.OUTCOME_REFUSED: 'refused',
    GoTo.Result.OUTCOME_FAILED: 'failed',
    GoTo.Result.OUTCOME_CANCELED: 'canceled',
}
STATUSES = {
    GoalStatus.STATUS_SUCCEEDED: 'succeeded',
    GoalStatus.STATUS_ABORTED: 'aborted',
    GoalStatus.STATUS_CANCELED: 'canceled',
}
# Latched JSON each node publishes once it works; a start is ready when it came. safety_node's
# state is also what navigator_node waits for before it drives.
STATS = {
    'capture_node': 'capture/stats',
    'memory_node': 'memory/stats',
    'safety_node': 'safety/state',
}
# The DDS topic that carries each node's requests (service or action goal). A killed
# server's endpoints stay in the graph until its lease runs out (about 20 s), so a node is
# back only when a reader appears on it that was not there before the restart.
REQUESTS = {
    'memory_node': 'rq/search_memoryRequest',
    'reasoner_node': 'rq/queryRequest',
    'navigator_node': 'rq/go_to/_action/send_goalRequest',
    'task_node': 'rq/run_task/_action/send_goalRequest',
}


def params_file() -> Path:
    """The demo parameters: the topics of waymark's synthetic bags, replayed reliably."""
    return Path(get_package_share_directory('waymark_ros')) / 'config' / 'demo.yaml'


def wait_until(predicate: Callable[[], object], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f'timed out after {timeout_s:.0f} s waiting for {what}')
        time.sleep(0.05)


def memory_kb(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of a process in kB, from /proc; (0, 0) once it is gone."""
    values = {}
    try:
        for line in Path(f'/proc/{pid}/status').read_text().splitlines():
            key, _, rest = line.partition(':')
            if key in ('VmRSS', 'VmHWM'):
                values[key] = int(rest.split()[0])
    except OSError:
        return 0, 0
    return values.get('VmRSS', 0), values.get('VmHWM', 0)


class Stack:
    """Nodes of one drill and the drill's client node, on `domain`, under `root`."""

    def __init__(self, root: Path, domain: int, start_timeout_s: float = 180.0) -> None:
        self.root = root
        self.domain = domain
        self.start_timeout_s = start_timeout_s
        self.nodes: dict[str, NodeProcess] = {}
        self.parameters: dict[str, dict] = {}
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=domain)
        self.node = rclpy.create_node('waymark_drill', context=self.context)
        # Made before the executor spins: an action client added while it iterates the
        # node's waitables can be seen half-built, which kills the spinning thread.
        self._go_to = ActionClient(self.node, GoTo, 'go_to')
        self._run_task = ActionClient(self.node, RunTask, 'run_task')
        self.executor = MultiThreadedExecutor(num_threads=4, context=self.context)
        self.executor.add_node(self.node)
        self._stopping = threading.Event()
        self._closing = threading.Event()  # ends the waits of requests still in flight
        self._background: list[threading.Thread] = []
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()
        self.stats: dict[str, dict] = {}
        self._clients: dict = {}
        self._known_readers: dict[str, set[bytes]] = {}
        self._incarnation: dict[str, int] = {}
        for name, topic in STATS.items():
            self.stats[name] = {}
            self.node.create_subscription(
                String, topic, lambda msg, n=name: self._on_stats(n, msg), qos.latched()
            )

    def _on_stats(self, name: str, msg: String) -> None:
        self.stats[name] = json.loads(msg.data)

    # Nodes -----------------------------------------------------------------------------
    def start(self, name: str, **parameters) -> NodeProcess:
        """Start `name` (again, with the same parameters when none are given)."""
        self.parameters[name] = parameters or self.parameters.get(name, {})
        env = {'ROS_DOMAIN_ID': str(self.domain), 'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST'}
        self._incarnation[name] = self._incarnation.get(name, 0) + 1
        self._known_readers[name] = self._readers(name)
        logs = self.root / 'logs' / f'{name}.{self._incarnation[name]}'
        self.stats.pop(name, None)
        for client in self._clients.values():
            self.node.destroy_client(client)
        self._clients.clear()
        if name in STATS:
            self.stats[name] = {}
        node = start_node(name, logs, self.parameters[name], env=env, params_file=params_file())
        self.nodes[name] = node
        return node

    def kill(self, name: str) -> None:
        """kill -9, no chance to clean up."""
        process = self.nodes[name].process
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30.0)

    def alive(self) -> dict[str, bool]:
        return {name: node.running() for name, node in self.nodes.items()}

    def memory_kb(self, name: str) -> tuple[int, int]:
        return memory_kb(self.nodes[name].process.pid)

    def wait_ready(self, name: str) -> None:
        """Until this start of `name` publishes its stats and takes requests."""
        what = f'{name} to start (log: {self.nodes[name].log_path})'

        def up() -> bool:
            if not self.nodes[name].running():
                raise RuntimeError(f'{name} exited with {self.nodes[name].process.returncode}')
            if name in STATS and not self.stats.get(name):
                return False
            return name not in REQUESTS or bool(self._readers(name) - self._known_readers[name])

        wait_until(up, self.start_timeout_s, what)
        time.sleep(MATCH_SETTLE_S)

    def _readers(self, name: str) -> set[bytes]:
        if name not in REQUESTS:
            return set()
        infos = self.node.get_subscriptions_info_by_topic(REQUESTS[name], no_mangle=True)
        return {bytes(info.endpoint_gid) for info in infos}

    # Requests --------------------------------------------------------------------------
    def call(self, srv_type, service: str, request, timeout_s: float):
        """The response, or None when none came within `timeout_s`."""
        return self.call_many(srv_type, service, [request], timeout_s)[0][0]

    def call_many(self, srv_type, service: str, requests: list, timeout_s: float):
        """Send all `requests` at once; [(response or None, seconds)] in request order.
        Clients are kept until a node restarts, so each match settles only once."""
        client = self._clients.get(service)
        if client is None:
            # Deep enough for every answer of a burst, or a lost one would count as missing.
            client = self.node.create_client(
                srv_type, service, qos_profile=qos.requests(max(len(requests), 10))
            )
            if not client.wait_for_service(timeout_sec=timeout_s):
                self.node.destroy_client(client)
                return [(None, timeout_s)] * len(requests)
            time.sleep(MATCH_SETTLE_S)
            self._clients[service] = client
        sent = time.monotonic()
        futures = [client.call_async(request) for request in requests]
        took: dict[int, float] = {}
        for i, future in enumerate(futures):
            future.add_done_callback(lambda _f, i=i: took.setdefault(i, time.monotonic()))
        deadline = sent + timeout_s
        while not all(f.done() for f in futures) and time.monotonic() < deadline:
            time.sleep(0.05)
        results = []
        for i, future in enumerate(futures):
            if future.done():
                results.append((future.result(), took.get(i, time.monotonic()) - sent))
            else:
                client.remove_pending_request(future)
                results.append((None, timeout_s))
        return results

    def go_to(self, goal: GoTo.Goal, timeout_s: float) -> tuple[str, str]:
        """('reached' | 'refused' | 'failed' | 'canceled' | 'rejected' | 'unanswered', message)."""
        client = self._go_to
        if not client.wait_for_server(timeout_sec=timeout_s):
            return 'unanswered', 'no go_to action server'
        time.sleep(MATCH_SETTLE_S)
        deadline = time.monotonic() + timeout_s
        for _ in range(MAX_GOAL_SENDS):
            sent = client.send_goal_async(goal)
            resend_at = min(deadline, time.monotonic() + GOAL_RESEND_S)
            done = self._wait(sent, resend_at)
            if done or self._closing.is_set() or time.monotonic() >= deadline:
                break
        if not sent.done():
            return 'unanswered', f'the goal, sent {MAX_GOAL_SENDS} times, was not answered'
        handle = sent.result()
        if not handle.accepted:
            return 'rejected', 'goal rejected without a result'
        result = handle.get_result_async()
        if not self._wait(result, deadline):
            if self._closing.is_set():
                return 'unanswered', 'the drill ended before a result came'
            handle.cancel_goal_async()
            return 'unanswered', f'no result within {timeout_s:.0f} s'
        answer = result.result()
        outcome = OUTCOMES.get(answer.result.outcome, f'outcome {answer.result.outcome}')
        status = STATUSES.get(answer.status, str(answer.status))
        # The status tells a real result from a default one left by an aborted goal.
        return outcome, f'{status}: {answer.result.message!r}'

    def run_task(
        self, goal: RunTask.Goal, timeout_s: float, on_feedback: Callable[[RunTask.Feedback], None]
    ) -> tuple[str, RunTask.Result | None]:
        """('ended', result) | ('rejected' | 'unanswered', None); feedback as it comes."""
        client = self._run_task
        if not client.wait_for_server(timeout_sec=timeout_s):
            return 'unanswered', None
        time.sleep(MATCH_SETTLE_S)
        deadline = time.monotonic() + timeout_s
        sent = client.send_goal_async(goal, lambda msg: on_feedback(msg.feedback))
        if not self._wait(sent, deadline):
            return 'unanswered', None
        handle = sent.result()
        if not handle.accepted:
            return 'rejected', None
        result = handle.get_result_async()
        if not self._wait(result, deadline):
            return 'unanswered', None
        return 'ended', result.result().result

    def _wait(self, future, deadline: float) -> bool:
        """Whether `future` is done by the monotonic `deadline`; False at once on close."""
        while not future.done() and time.monotonic() < deadline and not self._closing.is_set():
            time.sleep(0.05)
        return future.done()

    def in_background(self, target: Callable[[], None]) -> threading.Thread:
        """Run `target` (a request the drill does not wait on) in a thread that close()
        ends before it destroys the clients the request uses."""
        thread = threading.Thread(target=target, daemon=True)
        self._background.append(thread)
        thread.start()
        return thread

    def _spin(self) -> None:
        """Spin until shutdown, riding out an entity the drill destroyed (a publisher it is
        done with, a client of a restarted node) while the executor was adding it to a wait
        set: rclpy raises InvalidHandle there, which would end the thread and leave the
        drill deaf. It ends before the context shuts down (close), so it never waits on a
        context that is gone."""
        while self.context.ok() and not self._stopping.is_set():
            try:
                self.executor.spin_once(timeout_sec=SPIN_POLL_S)
            except InvalidHandle:
                continue
            except (ExternalShutdownException, ShutdownException):
                return

    def close(self) -> None:
        self._closing.set()
        for thread in self._background:
            thread.join()  # each returns within one poll of _wait
        for node in reversed(list(self.nodes.values())):
            stop_node(node, timeout_s=20.0)
        self._stopping.set()
        self._thread.join(timeout=5.0)
        self.executor.shutdown()
        self._go_to.destroy()
        self._run_task.destroy()
        self.node.destroy_node()
        self.context.try_shutdown()

    def __enter__(self) -> Stack:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
