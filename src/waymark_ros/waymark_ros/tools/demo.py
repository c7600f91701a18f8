# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""End-to-end demo: a synthetic building, recorded as a rosbag2, replayed through the
nodes over DDS, then questions asked through the client API (the Ask action), a
simulated robot driven to each answer by navigator_node, and two tasks (a sign named by
its writing, a photo of another sign) run through task_node, judged and recorded.

Everything runs offline: the world is rendered here, signs are read by OCR, and the
text view uses a sentence embedder whose weights ship with its Python package. After the
replay, the world's floor plan is published as the map and `sim_base_node` (a kinematic
base, behind safety_node as on the robot) takes over the pose topic where the tour ended.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import rclpy
import yaml
from rclpy.executors import SingleThreadedExecutor

from waymark.geometry import Pose
from waymark.sim.bag import write_bag
from waymark.sim.visibility import sees
from waymark.sim.world import World, build_demo_world, occupancy_grid
from waymark_ros.client import NO_REPLY, SERVER_MISSING, Drive, Target, Waymark
from waymark_ros.ros.conversions import pose_from_msg
from waymark_ros.ros.navigation_msgs import occupancy_grid_msg
from waymark_ros.tools.demo_tasks import TaskOutcome, print_tasks, run_tasks, start_task_node
from waymark_ros.tools.processes import NodeProcess, start_node, stop_node
from waymark_ros.tools.replay import replay
from waymark_ros.tools.stack import StackClient, spin_until, wait_for_ingest

QUESTION_TEMPLATES = ('Where is the {}?', 'Where did I see the {}?', 'Take me to the {}.')
SUCCESS_RADIUS_M = 5.0
MAP_RESOLUTION_M = 0.05
OUTCOME_MARGIN_S = 15.0  # from the navigator's goal timeout to the outcome record


@dataclass
class Outcome:
    question: str
    target: str
    success: bool
    message: str
    answer: str
    goal: tuple[float, float, float] | None  # x, y, yaw
    distance_to_target_m: float | None
    target_in_view: bool
    drive: str  # the navigator's outcome: reached, refused, failed, ...
    drive_message: str
    drive_s: float | None  # from the goal being sent to the drive's end
    arrived_at: tuple[float, float, float] | None  # x, y, yaw of the robot at the end
    target_in_view_on_arrival: bool
    located: Target | None = None  # where the answer places the sign itself
    located_error_m: float | None = None  # from there to the sign

    @property
    def arrived(self) -> bool:
        return self.drive == 'reached' and self.target_in_view_on_arrival

    @property
    def correct(self) -> bool:
        return (
            self.goal is not None
            and self.target_in_view
            and self.distance_to_target_m is not None
            and self.distance_to_target_m <= SUCCESS_RADIUS_M
        )


def questions_for(world: World) -> list[tuple[str, str]]:
    """One question per sign, cycling through phrasings, sign text in lower case."""
    return [
        (QUESTION_TEMPLATES[i % len(QUESTION_TEMPLATES)].format(sign.text.lower()), sign.text)
        for i, sign in enumerate(world.signs)
    ]


def start_stack(
    out: Path, params_file: Path, extrinsic: Sequence[float], session: str
) -> list[NodeProcess]:
    """The four nodes with the demo parameters, memory and logs under `out`."""
    logs = out / 'logs'
    overrides = {
        'memory_node': {'data_dir': str(out / 'memory')},
        'capture_node': {
            'session': session,
            'camera_extrinsic': list(extrinsic),
            'state_dir': str(out / 'capture'),
        },
        'reasoner_node': {
            'traces.dir': str(out / 'traces'),
            'memory.data_dir': str(out / 'memory'),
        },
        'navigator_node': {},
    }
    return [
        start_node(name, logs, parameters, params_file=params_file)
        for name, parameters in overrides.items()
    ]


def drive_wait_s(params_file: Path) -> float:
    """How long a drive may take to be reported: the navigator's goal timeout, plus margin."""
    sections = yaml.safe_load(params_file.read_text())
    navigator = sections['/**/navigator_node']['ros__parameters']
    return float(navigator['goal_timeout_s']) + OUTCOME_MARGIN_S


def ask(
    waymark: Waymark,
    world: World,
    camera: dict,
    question: str,
    target: str,
    drive_wait: float,
) -> Outcome:
    sign = next(s for s in world.signs if s.text == target)
    result = waymark.ask(question, go=True, timeout_s=60.0, drive_timeout_s=drive_wait)
    if result.status in (SERVER_MISSING, NO_REPLY):
        raise TimeoutError(f'no answer to {question!r}: {result.message}')
    goal = distance = arrived_at = None
    in_view = in_view_on_arrival = False
    drive = result.drive or Drive('not_sent', result.message)
    if result.ok and result.goal is not None:
        goal = result.goal
        pose: Pose = pose_from_msg(result.answer.goal.pose)
        distance = math.dist(pose.position[:2], sign.position[:2])
        in_view = sees(world, pose, sign, camera['hfov_deg'])
    located = result.target if result.ok else None
    located_error = None
    if located is not None:
        located_error = math.dist((located.x, located.y), sign.position[:2])
    if drive.final is not None:
        arrived_at = drive.final
        x, y, yaw = drive.final
        extrinsic = Pose(tuple(camera['extrinsic'][:3]), tuple(camera['extrinsic'][3:]))
        eye = Pose.from_xyz_yaw(x, y, 0.0, yaw).compose(extrinsic)
        in_view_on_arrival = sees(world, eye, sign, camera['hfov_deg'])
    return Outcome(
        question=question,
        target=target,
        success=result.ok,
        message=result.message,
        answer=result.text,
        goal=goal,
        distance_to_target_m=distance,
        target_in_view=in_view,
        drive=drive.outcome,
        drive_message=drive.message,
        drive_s=drive.seconds,
        arrived_at=arrived_at,
        target_in_view_on_arrival=in_view_on_arrival,
        located=located,
        located_error_m=located_error,
    )


def put_robot_on_the_map(
    client: StackClient, world: World, truth: dict, logs: Path, params_file: Path
) -> list[NodeProcess]:
    """The floor plan as the map, and a simulated base where the recorded tour ended,
    behind safety_node as on the robot."""
    (x0, y0), cells = occupancy_grid(world, MAP_RESOLUTION_M)
    stamp = client.get_clock().now().to_msg()
    client.map.publish(occupancy_grid_msg(cells, MAP_RESOLUTION_M, (x0, y0), 'map', stamp))
    end = truth['trajectory'][-1]
    return [
        start_node('safety_node', logs, {}, params_file=params_file),
        start_node('sim_base_node', logs, {'initial_pose': [end['x'], end['y'], end['yaw']]}),
    ]


def run(
    out: Path, params_file: Path, seed: int, rate: float, timeout_s: float, questions: int = 0
) -> tuple[list[Outcome], list[TaskOutcome]]:
    """The demo; `questions` > 0 asks about that many signs only (0: every sign)."""
    if not params_file.is_file():
        raise FileNotFoundError(f'parameter file {params_file} not found (run from the workspace)')
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    started = time.monotonic()
    world = build_demo_world(seed)
    print(
        f'[1/6] recording a tour of "{world.name}" '
        f'({len(world.rooms)} rooms, {len(world.signs)} signs)'
    )
    info = write_bag(world, out / 'bag', seed=seed)
    truth = json.loads((out / 'bag' / 'ground_truth.json').read_text())
    camera = truth['camera']
    print(f'      {info.path}: {info.message_counts} in {info.duration_s:.0f} s of robot time')

    print('[2/6] starting memory_node, capture_node, reasoner_node, navigator_node')
    rclpy.init()
    client = StackClient()
    executor = SingleThreadedExecutor()
    executor.add_node(client)
    # Out of the executor: the client API spins it while it waits for answers and drives.
    user = rclpy.create_node('waymark_demo')
    waymark = Waymark(user)
    nodes = start_stack(out, params_file, camera['extrinsic'], session=f'demo-{seed}')
    try:
        spin_until(executor, lambda: 'frames' in client.status['memory'], 120.0, 'memory_node')
        print(f'[3/6] replaying the bag (rate {rate or "max"}) and building memory')
        report = replay(client, info.path, rate=rate, topics=list(info.topics))
        images = sum(n for t, n in report.published.items() if 'image' in t)
        wait_for_ingest(executor, client, images, timeout_s)
        capture, memory = client.status['capture'], client.status['memory']
        print(
            f'      {images} images -> {capture.get("keyframes_published")} keyframes -> '
            f'{memory.get("frames")} memory entries'
        )
        print('[4/6] publishing the floor plan as the map; a simulated robot takes over /odom')
        nodes.extend(put_robot_on_the_map(client, world, truth, out / 'logs', params_file))
        print('[5/6] asking questions through the Ask action and driving to each answer')
        ready = waymark.wait_until_ready(timeout_s=30.0)
        if not ready.ready:
            raise TimeoutError(ready.message)
        drive_wait = drive_wait_s(params_file)
        asked = questions_for(world)[: questions or None]
        outcomes = [ask(waymark, world, camera, q, target, drive_wait) for q, target in asked]
        print('[6/6] running two tasks through task_node: a sign by its writing, a photo')
        nodes.append(start_task_node(out, params_file))
        tasks = run_tasks(waymark, world, camera)
    finally:
        for node in reversed(nodes):
            stop_node(node)
        waymark.close()
        user.destroy_node()
        executor.shutdown()
        client.destroy_node()
        rclpy.try_shutdown()
    print_outcomes(outcomes)
    print_tasks(tasks)
    write_report(out, world, outcomes, tasks, time.monotonic() - started)
    return outcomes, tasks


def print_outcomes(outcomes: list[Outcome]) -> None:
    for o in outcomes:
        print(f'\nQ: {o.question}')
        if o.goal is None:
            print(f'   no answer: {o.message}')
            continue
        x, y, yaw = o.goal
        verdict = 'correct' if o.correct else 'WRONG'
        print(f'   A: {o.answer}')
        print(
            f'   goal x={x:.2f} y={y:.2f} yaw={math.degrees(yaw):.0f} deg; '
            f'{o.distance_to_target_m:.2f} m from the {o.target.lower()} sign, '
            f'sign {"in" if o.target_in_view else "NOT in"} view from the goal -> {verdict}'
        )
        if o.located is not None:
            t = o.located
            print(
                f'   target x={t.x:.2f} y={t.y:.2f} +/- {t.sigma_m:.2f} m ({t.method}), '
                f'{o.located_error_m:.2f} m from the sign'
            )
        where = ''
        if o.arrived_at is not None:
            ax, ay, _ = o.arrived_at
            where = f' at x={ax:.2f} y={ay:.2f}, sign ' + (
                'in view' if o.target_in_view_on_arrival else 'NOT in view'
            )
        took = f' in {o.drive_s:.1f} s' if o.drive_s is not None else ''
        print(f'   drive: {o.drive} ({o.drive_message}){took}{where}')
    right = sum(o.correct for o in outcomes)
    arrived = sum(o.arrived for o in outcomes)
    print(
        f'\n{right}/{len(outcomes)} answers correct '
        f'(sign in view from the goal, within {SUCCESS_RADIUS_M:.0f} m); '
        f'the robot drove to {arrived}/{len(outcomes)} and saw the sign there'
    )


def write_report(
    out: Path, world: World, outcomes: list[Outcome], tasks: list[TaskOutcome], wall_s: float
) -> None:
    rows = [
        '| question | goal (x, y) | distance to sign (m) | sign in view | correct | drive '
        '| sign in view on arrival |',
        '|---|---|---|---|---|---|---|',
    ]
    for o in outcomes:
        goal = f'({o.goal[0]:.2f}, {o.goal[1]:.2f})' if o.goal else '-'
        distance = f'{o.distance_to_target_m:.2f}' if o.distance_to_target_m is not None else '-'
        rows.append(
            f'| {o.question} | {goal} | {distance} | {o.target_in_view} | {o.correct} '
            f'| {o.drive} | {o.target_in_view_on_arrival} |'
        )
    rows += ['', '| task | status | judge | evidence | task id |', '|---|---|---|---|---|']
    rows += [
        f'| {t.goal} | {t.status} ({t.termination}) | {t.verdict} | {t.evidence} | {t.task_id} |'
        for t in tasks
    ]
    right = sum(o.correct for o in outcomes)
    arrived = sum(o.arrived for o in outcomes)
    certified = sum(t.certified for t in tasks)
    (out / 'report.md').write_text(
        f'# waymark demo: {world.name} (seed {world.seed})\n\n'
        f'Embedder-only answers (OCR text view); {right}/{len(outcomes)} correct; the '
        f'simulated robot reached {arrived}/{len(outcomes)} and saw the sign there; '
        f'{certified}/{len(tasks)} tasks certified; wall time {wall_s:.0f} s.\n\n'
        + '\n'.join(rows)
        + '\n'
    )
    (out / 'report.json').write_text(
        json.dumps(
            {
                'world': world.name,
                'seed': world.seed,
                'wall_s': wall_s,
                'correct': right,
                'arrived': arrived,
                'questions': [
                    asdict(o) | {'correct': o.correct, 'arrived': o.arrived} for o in outcomes
                ],
                'tasks': [
                    asdict(t) | {'certified': t.certified, 'judged': t.judged} for t in tasks
                ],
            },
            indent=1,
        )
    )
    print(f'report: {out / "report.md"}')


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--out', type=Path, default=Path('demo_output'), help='output directory')
    parser.add_argument('--seed', type=int, default=0, help='world seed')
    parser.add_argument(
        '--params', type=Path, default=Path('config/demo.yaml'), help='node parameter file'
    )
    parser.add_argument(
        '--rate', type=float, default=0.0, help='replay speed; 0 = as fast as possible'
    )
    parser.add_argument(
        '--timeout', type=float, default=900.0, help='longest wait for ingestion, s'
    )
    parser.add_argument(
        '--questions', type=int, default=0, help='ask about the first N signs; 0 = every sign'
    )
    args = parser.parse_args(argv)
    if args.questions < 0:
        parser.error('--questions must be 0 (every sign) or more')
    outcomes, tasks = run(args.out, args.params, args.seed, args.rate, args.timeout, args.questions)
    answered = outcomes and all(o.correct and o.arrived for o in outcomes)
    tasks_ok = len(tasks) == 2 and tasks[0].certified and all(t.judged for t in tasks)
    return 0 if answered and tasks_ok else 1


if __name__ == '__main__':
    sys.exit(main())
