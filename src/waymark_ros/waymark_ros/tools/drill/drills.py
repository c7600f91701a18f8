# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The drills: each injects one kind of fault into a fresh stack and counts what came back.

They measure, they do not judge kindly: an input the stack accepted and then dropped is
lost, an answer that contradicts the input is wrong, and a request without an explicit
response in time is unanswered. Where an interface is still to change (a confirmation on
DeleteSession, acknowledgements of keyframes), the request is built in one small function
so the drill follows the interface when it lands.
"""

from __future__ import annotations

import functools
import io
import json
import math
import struct
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import rclpy
from nav_msgs.msg import OccupancyGrid
from PIL import Image

from waymark.geometry import quaternion_from_yaw
from waymark.sim.bag import GROUND_TRUTH_FILE, write_bag
from waymark.sim.world import build_demo_world, occupancy_grid
from waymark_interfaces.action import GoTo
from waymark_interfaces.msg import Keyframe
from waymark_interfaces.srv import DeleteSession, Query, SearchMemory
from waymark_ros.ros import qos
from waymark_ros.ros.conversions import ns_to_stamp, stamp_to_ns
from waymark_ros.ros.navigation_msgs import occupancy_grid_msg
from waymark_ros.tools.drill.llm_faults import MODEL, FaultyLLM
from waymark_ros.tools.drill.report import DrillResult
from waymark_ros.tools.drill.stack import MATCH_SETTLE_S, Stack, wait_until
from waymark_ros.tools.replay import replay

NODES = ('capture_node', 'memory_node', 'reasoner_node', 'navigator_node')
CAMERA_HZ = 2.0  # with the keyframe intervals below, every image becomes a keyframe
IMAGE_TOPIC, ODOM_TOPIC = '/camera/image/compressed', '/odom'
MAP_RESOLUTION_M = 0.05
T0 = 1_767_225_600 * 10**9  # 2026-01-01 UTC, the stamp of the bad-input drill's keyframes
PAGE = 100  # memory_node's default max_top_k
QUESTION = 'Where is the coffee shop?'


@dataclass(frozen=True)
class Settings:
    keyframes: int = 200  # length of the kill drills' replay
    kills: int = 3  # kill -9 per node during that replay
    replay_rate: float = 2.0
    llm_queries: int = 5  # questions per LLM fault
    deadline_s: float = 20.0  # the reasoner's agent.deadline_s in the drills
    margin_s: float = 10.0  # plus this for DDS and the fallback: the Query deadline
    settle_timeout_s: float = 600.0  # longest wait for memory to finish ingesting
    rss_limit_mb: float = 100.0  # most a node may grow on an image bomb
    drive_speed_mps: float = 0.6  # the safety drills inject their fault at this speed
    stop_margin_s: float = 0.2  # the e-stop's stop may come this late (after one odometry)
    stop_bound_s: float = 0.7  # a process killed while driving: the base stands within this
    stop_watch_s: float = 3.0  # how long the base is watched after the fault
    driver_timeout_s: float = 0.4  # the Go1 driver's own command timeout (docs/go1.md)
    e_stop_goals: int = 3  # goals sent while the e-stop is engaged
    seed: int = 1

    @property
    def query_deadline_s(self) -> float:
        return self.deadline_s + self.margin_s


# Requests that follow interfaces still to change ----------------------------------------
def unconfirmed_delete(session: str) -> DeleteSession.Request:
    """A deletion nobody confirmed: every field but the session keeps its default."""
    return DeleteSession.Request(session=session)


def refused(response) -> bool:
    """An explicit, clear refusal: success false with a one-line reason."""
    message = response.message
    return not response.success and bool(message.strip()) and '\n' not in message


def capped(response) -> bool:
    """A request beyond a size limit served within it, the message saying so on one line."""
    message = response.message
    return response.success and 'capped' in message and '\n' not in message


# Building blocks ------------------------------------------------------------------------
def memory_params(stack: Stack) -> dict:
    return {'data_dir': str(stack.root / 'memory'), 'ocr': False}


def reasoner_params(stack: Stack, settings: Settings, llm_url: str = '') -> dict:
    params = {
        'traces.dir': str(stack.root / 'traces'),
        'memory.data_dir': str(stack.root / 'memory'),
        'agent.deadline_s': settings.deadline_s,
    }
    if llm_url:
        params |= {'llm.base_url': llm_url, 'llm.model': MODEL, 'verifier.enabled': False}
    return params


def jpeg(seed: int, size: tuple[int, int] = (64, 48)) -> bytes:
    pixels = np.random.default_rng(seed).integers(0, 255, (size[1], size[0], 3), np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format='JPEG')
    return out.getvalue()


@functools.cache
def png_bomb(side: int = 12_000) -> bytes:
    """A valid RGB PNG of side x side black pixels: 432 MB decoded at 12000 (under PIL's
    own bomb limit, so PIL alone would decode it), about 400 kB on the wire.

    The pixel stream is all zeros, so one deflate block of 100 rows, flushed to a clean
    state, is repeated; the checksum of n zero bytes is computed directly.
    """

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack('>I', len(data)) + body + struct.pack('>I', zlib.crc32(body))

    rows, row_bytes = math.gcd(side, 100), 1 + 3 * side  # a filter byte, then the pixels
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = deflate.compress(bytes(rows * row_bytes)) + deflate.flush(zlib.Z_FULL_FLUSH)
    size = row_bytes * side
    stream = (
        b'\x78\xda'
        + block * (side // rows)
        + deflate.flush()
        + struct.pack('>I', ((size % 65521) << 16) | 1)  # adler32 of `size` zero bytes
    )
    header = struct.pack('>IIBBBBB', side, side, 8, 2, 0, 0, 0)
    return (
        b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', header) + chunk(b'IDAT', stream) + chunk(b'IEND', b'')
    )


def keyframe(index: int, stamp_ns: int, image: bytes, fmt: str = 'jpeg', x: float = 0.0):
    msg = Keyframe(session='drill', index=index, pose_valid=True, map_epoch=0)
    msg.header.stamp = ns_to_stamp(stamp_ns)
    msg.header.frame_id = 'map'
    msg.image.format, msg.image.data = fmt, image
    msg.pose.pose.position.x, msg.pose.pose.position.y = x, 1.0
    msg.pose.pose.orientation.w = 1.0
    return msg


def publish_keyframes(stack: Stack, messages: list[Keyframe]) -> None:
    publisher = stack.node.create_publisher(Keyframe, 'keyframes', qos.keyframes(100))
    try:
        wait_until(lambda: publisher.get_subscription_count() > 0, 60, 'a keyframes subscriber')
        time.sleep(MATCH_SETTLE_S)
        for msg in messages:
            publisher.publish(msg)
        wait_until(lambda: publisher.wait_for_all_acked(), 60, 'keyframes to be acknowledged')
    finally:
        stack.node.destroy_publisher(publisher)


def stored_frames(stack: Stack, timeout_s: float = 30.0) -> dict[tuple[str, int], list[float]]:
    """Every frame in memory as (session, stamp_ns) -> [x of each entry], paged by time.

    A keyframe is known by its session and stamp: memory numbers entries itself, so its
    index is not the sender's."""
    stored: dict[tuple[str, int], list[float]] = {}
    since = 0
    while True:
        request = SearchMemory.Request(mode='time', top_k=PAGE, stamp=ns_to_stamp(since))
        response = stack.call(SearchMemory, 'search_memory', request, timeout_s)
        if response is None or not response.success:
            why = 'no response' if response is None else response.message
            raise RuntimeError(f'could not list the stored frames: {why}')
        for hit in response.hits:
            stamp = stamp_to_ns(hit.start_stamp)
            stored.setdefault((hit.session, stamp), []).append(hit.pose.pose.position.x)
            since = max(since, stamp + 1)
        if len(response.hits) < PAGE:
            return stored


def memory_settled(stack: Stack, quiet_s: float, timeout_s: float) -> None:
    """Until memory_node's queue is empty and its frame count has not moved for quiet_s."""
    last: list = [None, time.monotonic()]

    def settled() -> bool:
        stats = stack.stats.get('memory_node', {})
        now = (stats.get('frames'), stats.get('queued'), stats.get('keyframes_received'))
        if now != last[0]:
            last[:] = [now, time.monotonic()]
        return stats.get('queued') == 0 and time.monotonic() - last[1] > quiet_s

    wait_until(settled, timeout_s, 'memory_node to finish ingesting')


def finish(stack: Stack, result: DrillResult) -> None:
    result.dead = sorted(name for name, up in stack.alive().items() if not up)


# Kill -9 ---------------------------------------------------------------------------------
def _probe(stack: Stack, name: str, settings: Settings) -> tuple[bool, str] | None:
    """One request to `name` after a restart: (answered, what came back); None for a node
    that serves no request."""
    if name == 'memory_node':
        request = SearchMemory.Request(mode='time', top_k=1)
        response = stack.call(SearchMemory, 'search_memory', request, 30.0)
        return response is not None, 'search: ' + ('none' if response is None else 'response')
    if name == 'reasoner_node':
        request = Query.Request(question=QUESTION)
        response = stack.call(Query, 'query', request, settings.query_deadline_s)
        return response is not None, 'query: ' + ('none' if response is None else response.message)
    if name == 'navigator_node':
        outcome, message = stack.go_to(goal(0.0, 0.0), 30.0)
        return outcome != 'unanswered', f'go_to: {outcome} ({message})'
    return None


def kill_drill(stack: Stack, victim: str, settings: Settings, bag: Path, camera: dict):
    result = DrillResult(f'kill -9 {victim} x{settings.kills}')
    published: dict[tuple[str, int], int] = {}  # (session, stamp) -> the sender's index
    stack.node.create_subscription(
        Keyframe,
        'keyframes',
        lambda msg: published.setdefault((msg.session, stamp_to_ns(msg.header.stamp)), msg.index),
        qos.keyframes(1000),
    )
    stack.start('memory_node', **memory_params(stack))
    stack.start(
        'capture_node',
        camera_extrinsic=list(camera['extrinsic']),
        **{'keyframe.min_interval_s': 0.2, 'keyframe.max_interval_s': 0.4},
    )
    stack.start('reasoner_node', **reasoner_params(stack, settings))
    stack.start('navigator_node')
    for name in NODES:
        stack.wait_ready(name)

    player = rclpy.create_node('waymark_drill_replay', context=stack.context)
    duration_s = settings.keyframes / CAMERA_HZ / settings.replay_rate
    done = threading.Event()
    failure: list[BaseException] = []

    def play() -> None:
        try:
            replay(player, bag, rate=settings.replay_rate, topics=[IMAGE_TOPIC, ODOM_TOPIC])
        except BaseException as error:  # reported in the table, not swallowed
            failure.append(error)
        finally:
            done.set()

    spacing = duration_s / (settings.kills + 1)
    started = ready = time.monotonic()
    threading.Thread(target=play, daemon=True).start()
    try:
        for kill in range(settings.kills):
            # On time, but each restarted node lives a while before the next kill.
            at = max(started + spacing * (kill + 1), ready + spacing / 2)
            time.sleep(max(0.0, at - time.monotonic()))
            stack.kill(victim)
            result.injected += 1
            stack.start(victim)
            stack.wait_ready(victim)
            ready = time.monotonic()
            probe = _probe(stack, victim, settings)
            if probe is not None:
                result.requests += 1
                result.answered += probe[0]
                if not probe[0]:
                    result.note(f'after kill {kill + 1}: no answer to {probe[1]}')
        if not done.wait(duration_s + 120.0):
            raise RuntimeError(f'the replay did not end within {duration_s + 120.0:.0f} s')
        if failure:
            raise RuntimeError(f'replay failed: {failure[0]}')
        memory_settled(stack, quiet_s=5.0, timeout_s=settings.settle_timeout_s)
        stored = stored_frames(stack)
    finally:
        player.destroy_node()
    accepted = dict(published)
    lost = [k for k in accepted if k not in stored]
    repeated = {k: len(xs) - 1 for k, xs in stored.items() if len(xs) > 1}
    # The drill's own subscriber can miss the first keyframes of a restarted capture_node
    # (discovery); memory having them is not wrong, so they are only reported.
    unseen = [k for k in stored if k not in accepted]
    result.lost, result.wrong = len(lost), sum(repeated.values())
    result.note(
        f'{len(accepted)} keyframes published by capture_node, '
        f'{sum(map(len, stored.values()))} entries in memory'
    )
    if lost:
        listed = ', '.join(f'{s}/{accepted[(s, t)]} at {t}' for s, t in lost[:6])
        result.note(f'lost (session/sent index at stamp): {listed}')
    if unseen:
        result.note(f'{len(unseen)} stored keyframes were not seen by the drill (discovery)')
    if repeated:
        listed = ', '.join(f'{s} at {t}' for s, t in list(repeated)[:4])
        result.note(f'{len(repeated)} keyframes stored more than once: {listed}')
    finish(stack, result)
    return result


# LLM faults --------------------------------------------------------------------------------
def seed_memory(stack: Stack) -> None:
    """A few keyframes, so the reasoner has something to search and asks its model."""
    messages = [keyframe(i, T0 + i * 10**9, jpeg(i), x=float(i)) for i in range(5)]
    publish_keyframes(stack, messages)
    wait_until(
        lambda: stack.stats.get('memory_node', {}).get('frames', 0) >= len(messages),
        120,
        'memory to store the seed keyframes',
    )


def llm_drill(stack: Stack, mode: str, settings: Settings) -> DrillResult:
    result = DrillResult(f'LLM {mode}')
    with FaultyLLM(mode) as llm:
        stack.start('memory_node', **memory_params(stack))
        stack.start('reasoner_node', **reasoner_params(stack, settings, llm.base_url))
        stack.wait_ready('memory_node')
        stack.wait_ready('reasoner_node')
        seed_memory(stack)
        latencies = []
        for i in range(settings.llm_queries):
            result.injected += 1
            result.requests += 1
            request = Query.Request(question=f'{QUESTION} ({i})')
            [(response, seconds)] = stack.call_many(
                Query, 'query', [request], settings.query_deadline_s
            )
            latencies.append(seconds)
            if response is None:
                result.note(f'question {i}: no answer within {settings.query_deadline_s:.0f} s')
                continue
            result.answered += 1
            if response.success and not response.answer.used_fallback:
                # The model never gave a usable reply: an answer must say it fell back.
                result.wrong += 1
                result.note(f'question {i}: an answer not marked as fallback: {response.message}')
        result.note(
            f'model requests {llm.requests}; answer seconds max {max(latencies):.1f} '
            f'(deadline {settings.query_deadline_s:.0f})'
        )
        if llm.requests == 0:
            result.error = 'the reasoner never called the model: the fault was not exercised'
        finish(stack, result)
    return result


def concurrency_drill(stack: Stack, count: int, settings: Settings) -> DrillResult:
    result = DrillResult(f'{count} concurrent queries')
    with FaultyLLM('slow', delay_s=2.0) as llm:
        stack.start('memory_node', **memory_params(stack))
        stack.start('reasoner_node', **reasoner_params(stack, settings, llm.base_url))
        stack.wait_ready('memory_node')
        stack.wait_ready('reasoner_node')
        seed_memory(stack)
        requests = [Query.Request(question=f'{QUESTION} ({i})') for i in range(count)]
        answers = stack.call_many(Query, 'query', requests, settings.query_deadline_s)
        result.injected = result.requests = count
        result.answered = sum(response is not None for response, _ in answers)
        busy = sum(r is not None and r.message.startswith('busy') for r, _ in answers)
        ok = sum(r is not None and r.success for r, _ in answers)
        unclear = sum(r is not None and not r.success and not r.message for r, _ in answers)
        result.wrong = unclear
        result.note(
            f'{ok} answered, {busy} busy, {result.answered - ok - busy} refused otherwise; '
            f'slowest {max(s for _, s in answers):.1f} s '
            f'(deadline {settings.query_deadline_s:.0f} s)'
        )
        if unclear:
            result.note(f'{unclear} failures without a message')
        messages = sorted({r.message for r, _ in answers if r is not None and not r.success})
        for message in messages[:3]:
            result.note(f'refusal: {message[:160]}')
        finish(stack, result)
    return result


# Refused goals -------------------------------------------------------------------------------
def goal(x: float, y: float, q: tuple[float, float, float, float] | None = None) -> GoTo.Goal:
    msg = GoTo.Goal()
    msg.target.header.frame_id = 'map'
    msg.target.pose.position.x, msg.target.pose.position.y = x, y
    o = msg.target.pose.orientation
    o.x, o.y, o.z, o.w = q if q is not None else quaternion_from_yaw(0.0)
    return msg


def _clear(cells: np.ndarray, origin, x: float, y: float, radius_m: float) -> bool:
    """All cells within radius_m of (x, y) are known free."""
    r = math.ceil(radius_m / MAP_RESOLUTION_M)
    col = int((x - origin[0]) / MAP_RESOLUTION_M)
    row = int((y - origin[1]) / MAP_RESOLUTION_M)
    if row - r < 0 or col - r < 0 or row + r >= cells.shape[0] or col + r >= cells.shape[1]:
        return False
    return bool((cells[row - r : row + r + 1, col - r : col + r + 1] == 0).all())


def start_and_target(world, cells, origin) -> tuple[tuple[float, float], tuple[float, float]]:
    """A start in the open and a reachable target 1.5 m from it, in the same room."""
    for room in world.rooms:
        start = room.centre
        for dx, dy in ((1.5, 0.0), (-1.5, 0.0), (0.0, 1.5), (0.0, -1.5)):
            target = (start[0] + dx, start[1] + dy)
            if all(_clear(cells, origin, *p, 0.7) for p in (start, target)):
                return start, target
    raise RuntimeError('no open start and target in the demo world')


def refused_goals_drill(stack: Stack, settings: Settings) -> DrillResult:
    result = DrillResult('refused goals before/after a reached one')
    world = build_demo_world(settings.seed)
    origin, cells = occupancy_grid(world, MAP_RESOLUTION_M)
    start, target = start_and_target(world, cells, origin)
    walls = np.argwhere(cells == 100)
    centres = (walls[:, ::-1] + 0.5) * MAP_RESOLUTION_M + np.asarray(origin)
    wall = centres[np.argmin(np.hypot(*(centres - np.asarray(start)).T))]
    bad = {
        'occupied target': goal(float(wall[0]), float(wall[1])),
        'off the map': goal(origin[0] - 100.0, origin[1] - 100.0),
        'x=-1e308': goal(-1e308, start[1]),
        'NaN': goal(math.nan, math.nan),
        'zero quaternion': goal(*target, q=(0.0, 0.0, 0.0, 0.0)),
    }
    grid: OccupancyGrid = occupancy_grid_msg(
        cells, MAP_RESOLUTION_M, origin, 'map', stack.node.get_clock().now().to_msg()
    )
    map_publisher = stack.node.create_publisher(OccupancyGrid, '/map', qos.latched())
    map_publisher.publish(grid)
    stack.start('sim_base_node', initial_pose=[start[0], start[1], 0.0])
    stack.start('safety_node')  # the navigator drives the base through it (demo.yaml)
    # Snapping off: a target in a wall is otherwise moved to free space within
    # snap_radius_m and driven to, as documented; here it must be refused.
    stack.start('navigator_node', snap_radius_m=0.0)
    stack.wait_ready('navigator_node')

    def send_bad(when: str) -> None:
        for name, bad_goal in bad.items():
            result.injected += 1
            result.requests += 1
            outcome, message = stack.go_to(bad_goal, 60.0)
            result.answered += outcome != 'unanswered'
            if outcome not in ('refused', 'rejected'):
                result.wrong += 1
                result.note(f'{when}, {name}: {outcome.upper()} ({message})')
            elif outcome == 'rejected':
                result.note(f'{when}, {name}: rejected at goal time, no result message')

    send_bad('before')
    result.requests += 1
    outcome, message = stack.go_to(goal(*target), 240.0)
    result.answered += outcome != 'unanswered'
    if outcome != 'reached':
        result.wrong += 1
        result.note(f'the reachable goal {target} came back {outcome} ({message})')
    send_bad('after the reached goal')
    finish(stack, result)
    return result


# Bad inputs --------------------------------------------------------------------------------------
def bad_keyframes(good: Keyframe) -> dict[str, Keyframe]:
    """One malformed keyframe of each kind, indices after the good one's."""
    bad: dict[str, Keyframe] = {}

    def variant(name: str, change: Callable[[Keyframe], None]) -> None:
        msg = keyframe(len(bad) + 1, T0 + (len(bad) + 1) * 10**9, jpeg(100 + len(bad)))
        change(msg)
        bad[name] = msg

    variant('odom frame', lambda m: setattr(m.header, 'frame_id', 'odom'))
    variant('empty frame_id', lambda m: setattr(m.header, 'frame_id', ''))
    variant('x=1e300', lambda m: setattr(m.pose.pose.position, 'x', 1e300))
    variant('NaN position', lambda m: setattr(m.pose.pose.position, 'y', math.nan))
    variant('zero quaternion', lambda m: setattr(m.pose.pose.orientation, 'w', 0.0))

    def same_stamp(m: Keyframe) -> None:
        m.index, m.header.stamp = good.index, good.header.stamp
        m.pose.pose.position.x = good.pose.pose.position.x + 5.0

    variant('same stamp, other content', same_stamp)
    return bad


def _growth_mb(before: tuple[int, int], after: tuple[int, int]) -> float:
    """Peak growth: the new high-water mark if it rose, else the resident set's change."""
    (rss0, hwm0), (rss1, hwm1) = before, after
    peak = hwm1 if hwm1 > hwm0 else rss1
    return (peak - rss0) / 1024.0


def bad_inputs_drill(stack: Stack, settings: Settings) -> DrillResult:
    result = DrillResult('bad inputs')
    stack.start('memory_node', **memory_params(stack))
    stack.start('reasoner_node', **reasoner_params(stack, settings))
    stack.wait_ready('memory_node')
    stack.wait_ready('reasoner_node')
    bomb = png_bomb()
    result.note(f'PNG bomb: {len(bomb) // 1024} kB, 12000x12000 RGB')

    good = keyframe(0, T0, jpeg(0), x=2.0)
    publish_keyframes(stack, [good])
    wait_until(lambda: stack.stats['memory_node'].get('frames') == 1, 120, 'the good keyframe')

    # Malformed keyframes: each must be refused (counted, not stored) and the node live.
    bad = bad_keyframes(good)
    bad['PNG bomb keyframe'] = keyframe(len(bad) + 1, T0 + 50 * 10**9, bomb, fmt='png')
    stats0 = dict(stack.stats['memory_node'])
    before = stack.memory_kb('memory_node')
    publish_keyframes(stack, list(bad.values()))
    try:
        memory_settled(stack, quiet_s=3.0, timeout_s=120.0)
    except TimeoutError as error:
        result.note(str(error))
    growth = _growth_mb(before, stack.memory_kb('memory_node'))
    result.note(
        f'memory_node grew {growth:.0f} MB on the bad keyframes (limit '
        + f'{settings.rss_limit_mb:.0f} MB)'
    )
    stats1 = stack.stats['memory_node']
    counted = sum(
        stats1.get(k, 0) - stats0.get(k, 0)
        for k in ('keyframes_rejected', 'keyframes_undecodable', 'keyframes_failed')
    )
    result.injected += len(bad)
    result.requests += len(bad)
    result.answered += min(counted, len(bad))
    if counted < len(bad):
        result.note(f'memory_node counted {counted} of {len(bad)} bad keyframes as refused')
    if growth >= settings.rss_limit_mb:
        result.wrong += 1
    if stack.nodes['memory_node'].running():
        stored = stored_frames(stack)
        for name, msg in bad.items():
            entries = stored.get((msg.session, stamp_to_ns(msg.header.stamp)), [])
            if name == 'same stamp, other content':
                if entries != [good.pose.pose.position.x]:
                    result.wrong += 1
                    result.note(f'{name}: the stored entry now has x = {entries}')
            elif entries:
                result.wrong += 1
                result.note(f'{name}: stored')

    def ask(
        name: str, srv, service: str, request, timeout_s: float, node: str, accept=refused
    ) -> None:
        result.injected += 1
        result.requests += 1
        before = stack.memory_kb(node)
        response = stack.call(srv, service, request, timeout_s)
        growth = _growth_mb(before, stack.memory_kb(node))
        if response is None:
            result.note(f'{name}: no answer within {timeout_s:.0f} s')
            return
        result.answered += 1
        if not accept(response):
            result.wrong += 1
            result.note(f'{name}: success={response.success} ({response.message[:120]!r})')
        if growth >= settings.rss_limit_mb:
            result.wrong += 1
            result.note(f'{name}: {node} grew {growth:.0f} MB')

    deadline = settings.query_deadline_s
    photo = Query.Request(question='Where did I see this?')
    photo.image.format, photo.image.data = 'png', bomb
    ask('query photo bomb', Query, 'query', photo, deadline, 'reasoner_node')
    huge = Query.Request(question=('where is the door ' * 60_000)[: 1 << 20])
    ask('1 MB question', Query, 'query', huge, deadline, 'reasoner_node')

    # A page larger than max_top_k is served capped at it, and the message says so.
    huge_page = SearchMemory.Request(mode='time', top_k=2**32 - 1)
    ask(
        'search top_k 2^32-1', SearchMemory, 'search_memory', huge_page, 30.0, 'memory_node', capped
    )
    searches = {
        'radius NaN': SearchMemory.Request(mode='range', radius=math.nan),
        'radius -1': SearchMemory.Request(mode='range', radius=-1.0),
        'radius inf': SearchMemory.Request(mode='range', radius=math.inf),
        'time range reversed': SearchMemory.Request(
            mode='interval', stamp=ns_to_stamp(T0 + 10**10), end_stamp=ns_to_stamp(T0)
        ),
    }
    invalid = SearchMemory.Request(mode='time')
    invalid.stamp.nanosec = 2_000_000_000  # not a time: nanoseconds must be < 1e9
    searches['stamp nanosec 2e9'] = invalid
    for name, request in searches.items():
        ask(f'search {name}', SearchMemory, 'search_memory', request, 30.0, 'memory_node')

    frames = stack.stats['memory_node'].get('frames')
    ask(
        'delete_session unconfirmed',
        DeleteSession,
        'delete_session',
        unconfirmed_delete('drill'),
        30.0,
        'memory_node',
    )
    time.sleep(2.0)  # the next stats
    left = stack.stats['memory_node'].get('frames')
    if frames and left is not None and left < frames:
        result.lost += frames - left
        result.note(f'delete_session without confirmation removed {frames - left} frames')
    finish(stack, result)
    return result


def write_drill_bag(root: Path, settings: Settings) -> Path:
    """The synthetic tour for the kill drills: one image per keyframe, small images."""
    world = build_demo_world(settings.seed)
    info = write_bag(
        world,
        root / 'bag',
        camera_rate_hz=CAMERA_HZ,
        width=320,
        height=240,
        seed=settings.seed,
        max_duration_s=settings.keyframes / CAMERA_HZ,
    )
    return info.path


def camera_of(bag: Path) -> dict:
    """The camera (extrinsic, field of view) the bag was rendered with."""
    return json.loads((bag / GROUND_TRUTH_FILE).read_text())['camera']
