# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Run drills one after the other, each on a fresh stack with its own domain and data."""

from __future__ import annotations

import shutil
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from waymark_ros.tools.drill import (
    clocks,
    drills,
    driving,
    lessons,
    maps,
    reflection,
    shutdown,
    tasks,
)
from waymark_ros.tools.drill.report import DrillResult
from waymark_ros.tools.drill.stack import Stack

Drill = Callable[[Stack, drills.Settings, Path], DrillResult]


def _kill(victim: str) -> Drill:
    def run(stack: Stack, settings: drills.Settings, root: Path) -> DrillResult:
        bag = root / 'bag'
        if not bag.exists():
            drills.write_drill_bag(root, settings)
        camera = drills.camera_of(bag)
        return drills.kill_drill(stack, victim, settings, bag, camera)

    return run


DRILLS: dict[str, Drill] = {
    **{f'kill-{name.removesuffix("_node")}': _kill(name) for name in drills.NODES},
    **{
        f'llm-{mode}': (lambda s, st, _r, m=mode: drills.llm_drill(s, m, st))
        for mode in ('hang', 'fail', 'garbage')
    },
    'queries-20': lambda s, st, _r: drills.concurrency_drill(s, 20, st),
    'queries-100': lambda s, st, _r: drills.concurrency_drill(s, 100, st),
    'refused-goals': lambda s, st, _r: drills.refused_goals_drill(s, st),
    'bad-inputs': lambda s, st, _r: drills.bad_inputs_drill(s, st),
    'kill-navigator-driving': lambda s, st, _r: driving.kill_navigator_driving(s, st),
    'kill-safety-driving': lambda s, st, _r: driving.kill_safety_driving(s, st),
    'kill-all-driving': lambda s, st, _r: driving.kill_all_driving(s, st),
    'e-stop-driving': lambda s, st, _r: driving.e_stop_driving(s, st),
    'ctrl-c-driving': lambda s, st, _r: shutdown.ctrl_c_driving(s, st),
    'kill-task-node-mid-task': lambda s, st, _r: tasks.kill_task_node_mid_task(s, st),
    'kill-navigator-mid-task': lambda s, st, _r: tasks.kill_navigator_mid_task(s, st),
    'kill-memory-mid-lessons': lambda s, st, _r: lessons.kill_memory_mid_lessons(s, st),
    'clock-offset': lambda s, st, _r: clocks.clock_offset_drill(s, st),
    'huge-map': lambda s, st, _r: maps.huge_map_drill(s, st),
    'kill-reasoner-mid-reflections': (
        lambda s, st, _r: reflection.kill_reasoner_mid_reflections(s, st)
    ),
}


def run_drill(name: str, settings: drills.Settings, root: Path, domain: int) -> DrillResult:
    """One drill on a fresh stack; a drill that cannot be carried out is an ERROR row."""
    directory = root / name
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    started = time.monotonic()
    stack = Stack(directory, domain)
    try:
        result = DRILLS[name](stack, settings, root)
    except Exception as error:
        where = traceback.extract_tb(error.__traceback__)[-1]
        result = DrillResult(name, error=f'{type(error).__name__}: {error}')
        result.note(f'raised at {Path(where.filename).name}:{where.lineno} ({where.name})')
        result.dead = sorted(n for n, up in stack.alive().items() if not up)
    finally:
        stack.close()
    result.seconds = time.monotonic() - started
    return result
