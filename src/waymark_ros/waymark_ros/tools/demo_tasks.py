# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The demo's last step: two tasks run through task_node, judged, and their ledger records.

One task names a sign by its writing, one shows a photo of another sign taken from a
couple of metres in front of it. task_node recalls each through reasoner_node, drives
through navigator_node and safety_node to sim_base_node, turns for stop views from the
demo's rendered camera (`sim_camera`), and the judges (the photo matcher, then OCR) decide.
Whatever the outcome, the record the ledger keeps is printed: a task is never reported
by anything but its record. The sign task must be certified; the photo task must be judged
and recorded, whatever the verdict: its target is looked for where the photo matcher
verified the photo in the best memory entry's picture (Hit.region), and the matcher's
verdict on a stop view is "the same thing" only with enough verified correspondences, so
a right stop it cannot confirm is judged unknown, not wrong.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import cv2
from sensor_msgs.msg import CompressedImage

from waymark.geometry import Pose
from waymark.sim.render import render
from waymark.sim.world import World
from waymark_ros.client import Waymark
from waymark_ros.tools.processes import NodeProcess, start_node
from waymark_ros.tools.sim_camera import CameraThread, SimCamera, facing

CAMERA_TOPIC = '/demo_camera/image/compressed'  # task_node's only: capture_node keeps the bag's
PHOTO_DISTANCE_M = 2.0
PHOTO_SIZE = (640, 480)
TASK_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class TaskOutcome:
    goal: str
    target: str
    status: str
    termination: str
    verdict: str
    evidence: str
    task_id: str
    record: dict | None

    @property
    def certified(self) -> bool:
        return self.status == 'certified'

    @property
    def judged(self) -> bool:
        """Closed with a claim the judge gave a verdict on, and kept in the ledger."""
        return self.record is not None and self.record.get('certificate') is not None


def start_task_node(out: Path, params_file: Path) -> NodeProcess:
    parameters = {
        'data_dir': str(out / 'tasks'),
        'inputs.image_topic': CAMERA_TOPIC,
        'relocation.memory_data_dir': str(out / 'memory'),  # memory_node's, for relocation
    }
    return start_node('task_node', out / 'logs', parameters, params_file=params_file)


def run_tasks(waymark: Waymark, world: World, camera: dict) -> list[TaskOutcome]:
    """A sign goal and a photo goal, one after the other, with the rendered camera on."""
    extrinsic = Pose(tuple(camera['extrinsic'][:3]), tuple(camera['extrinsic'][3:]))
    live = CameraThread(SimCamera(world, extrinsic, camera['hfov_deg'], CAMERA_TOPIC))
    try:
        ready = waymark.wait_until_ready(timeout_s=60.0, servers=('reasoner', 'navigator', 'task'))
        if not ready.ready:
            raise TimeoutError(ready.message)
        by_text, by_photo = world.signs[0], world.signs[1]
        sign_goal = f'the sign that says "{by_text.text}"'
        outcomes = [_outcome(waymark, sign_goal, by_text.text, text=sign_goal)]
        photo = _photo(world, by_photo.text, camera['hfov_deg'])
        outcomes.append(
            _outcome(waymark, f'a photo of the {by_photo.text} sign', by_photo.text, photo=photo)
        )
        return outcomes
    finally:
        live.close()


def _photo(world: World, text: str, hfov_deg: float) -> CompressedImage:
    width, height = PHOTO_SIZE
    rgb = render(world, facing(world, text, PHOTO_DISTANCE_M), width, height, hfov_deg)
    jpeg = cv2.imencode('.jpg', cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))[1].tobytes()
    return CompressedImage(format='jpeg', data=jpeg)


def _outcome(waymark: Waymark, goal: str, target: str, **task) -> TaskOutcome:
    result = waymark.run_task(timeout_s=TASK_TIMEOUT_S, **task)
    record = waymark.task(result.task_id).record if result.task_id else None
    return TaskOutcome(
        goal=goal,
        target=target,
        status=result.status,
        termination=result.termination,
        verdict=result.verdict,
        evidence=result.evidence or result.message,
        task_id=result.task_id,
        record=record,
    )


def print_tasks(outcomes: list[TaskOutcome]) -> None:
    for outcome in outcomes:
        print(f'\nTask: {outcome.goal}')
        print(
            f'   {outcome.status} ({outcome.termination}); judge: {outcome.verdict}: '
            f'{outcome.evidence}'
        )
        if outcome.record is None:
            print('   no ledger record (the goal was refused or never answered)')
            continue
        print('   ledger record:')
        for line in json.dumps(outcome.record, indent=1).splitlines():
            print(f'     {line}')
    certified = sum(outcome.certified for outcome in outcomes)
    judged = sum(outcome.judged for outcome in outcomes)
    print(f'\n{certified}/{len(outcomes)} tasks certified, {judged} judged and recorded')
