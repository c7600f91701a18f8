# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""`python -m waymark task-eval`: chained tasks in generated worlds, task layer against
single-shot Ask then GoTo on the same sequences, one table per run and one over the suite.

    python -m waymark task-eval --out task_eval [--size small] [--worlds 0 1]
        [--sequences 2] [--rate-hz 0.5]

Each world's tour is rendered into memory (text view with OCR; an image view only with
--image-model, without which photo goals find nothing), its sequences drawn from the
tour's ground truth, and every flow driven closed loop in simulated time. The OCR judge
checks and certifies; house notes are consolidated mechanically from each task-layer run
and read by a second task-layer run of the same sequence.
"""

from __future__ import annotations

import io
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from PIL import Image

from waymark.cli import ArgumentParser, UsageError, check_positive, fail
from waymark.evaluation.task_geometry import FreeSpace
from waymark.evaluation.task_loop import (
    Setting,
    SimParams,
    build_tour_memory,
    run_single_shot,
    run_task_layer,
    tour_positions,
)
from waymark.evaluation.task_scoring import (
    RunScore,
    Summary,
    TaskScorer,
    comparison_table,
    summarise,
)
from waymark.evaluation.task_sequences import (
    StepKind,
    TaskSequence,
    generate_suite,
    tour_ground_truth,
)
from waymark.geometry import Pose
from waymark.localisation.params import LocalisationParams
from waymark.memory.views.ocr import TextReader
from waymark.memory.views.registry import ViewSettings
from waymark.sim.generate import SIZES, generate_world
from waymark.sim.render import render
from waymark.sim.trajectory import plan_tour
from waymark.sim.world import World
from waymark.tasks.consolidation import consolidate
from waymark.tasks.house_notes import HouseNotesStore
from waymark.tasks.judge import OcrJudge
from waymark.tasks.ledger import LedgerReader
from waymark.tasks.photo_judge import PhotoFirstJudge, PhotoJudge

PROG = 'python -m waymark task-eval'
TASK_LAYER = 'task-layer'
SINGLE_SHOT = 'single-shot'
WITH_NOTES = 'task-layer+notes'
FLOWS = (TASK_LAYER, SINGLE_SHOT, WITH_NOTES)


@dataclass
class SuiteScores:
    """Scored runs per flow, in the order they ran."""

    runs: dict[str, list[RunScore]] = field(default_factory=lambda: {flow: [] for flow in FLOWS})

    def add(self, flow: str, run: RunScore) -> None:
        self.runs[flow].append(run)

    def summaries(self) -> dict[str, Summary]:
        return {flow: summarise(runs) for flow, runs in self.runs.items() if runs}


def photo_bytes(sequence: TaskSequence, world: World, sim: SimParams) -> dict[str, bytes]:
    """Each photo step's picture as PNG bytes, rendered from the step's camera pose."""
    photos = {}
    for step in sequence.steps:
        if step.kind is StepKind.PHOTO and step.image not in photos:
            x, y, yaw = step.pose
            eye = Pose.from_xyz_yaw(x, y, 0.45, yaw)
            pixels = render(world, eye, sim.width, sim.height, sim.hfov_deg)
            buffer = io.BytesIO()
            Image.fromarray(np.asarray(pixels)).save(buffer, format='PNG')
            photos[step.image] = buffer.getvalue()
    return photos


def evaluate_sequence(
    setting: Setting, sequence: TaskSequence, scorer: TaskScorer, folder: Path, notes_run: bool
) -> dict[str, RunScore]:
    """Every flow over one sequence, scored; `folder` keeps each flow's ledger and notes."""
    scores = {}
    first = run_task_layer(setting, sequence, folder / TASK_LAYER)
    scores[TASK_LAYER] = scorer.score_run(sequence, first.outcomes)
    single = run_single_shot(setting, sequence, folder / SINGLE_SHOT)
    scores[SINGLE_SHOT] = scorer.score_run(sequence, single.outcomes)
    if notes_run:
        store = HouseNotesStore(folder / 'notes')
        result = consolidate(LedgerReader(folder / TASK_LAYER / 'ledger'), store.read())
        store.write(result.notes, result.origin)
        again = run_task_layer(setting, sequence, folder / WITH_NOTES, notes=store.reader())
        scores[WITH_NOTES] = scorer.score_run(sequence, again.outcomes)
    return scores


def done_when(summaries: dict[str, Summary]) -> list[str]:
    """The issue's three acceptance figures, from the suite's summaries."""
    layer, single = summaries.get(TASK_LAYER), summaries.get(SINGLE_SHOT)
    lines = []
    if layer is not None:
        lines.append(f'P(true success | CERTIFIED): {layer.judge_precision} (wanted >= 95 %)')
        lines.append(
            f'failed first stops converted by a later attempt: {layer.conversion} (wanted >= 30 %)'
        )
    if layer is not None and single is not None and layer.success.total and single.success.total:
        points = 100.0 * (layer.success.value - single.success.value)
        lines.append(f'task layer minus single-shot success: {points:+.1f} points (wanted >= +15)')
    return lines


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(prog=PROG, description=__doc__.split('\n\n')[0])
    parser.add_argument(
        '--out', type=Path, required=True, help='folder for memory, ledgers and notes'
    )
    parser.add_argument('--size', default='small', choices=SIZES)
    parser.add_argument('--family', default='rooms')
    parser.add_argument('--worlds', type=int, nargs='+', default=[0], help='world seeds')
    parser.add_argument('--sequences', type=int, default=2, help='sequences per world')
    parser.add_argument('--min-tasks', type=int, default=5)
    parser.add_argument('--max-tasks', type=int, default=10)
    parser.add_argument('--rate-hz', type=float, default=0.5, help='tour frames kept a second')
    parser.add_argument('--width', type=int, default=320)
    parser.add_argument('--height', type=int, default=240)
    parser.add_argument('--text-model', default='default')
    parser.add_argument('--image-model', default='', help='image view model (photo goals)')
    parser.add_argument(
        '--standoff-m',
        type=float,
        default=LocalisationParams().standoff_m,
        help='how far from a located target the goal pose stands',
    )
    parser.add_argument('--no-notes-run', action='store_true', help='skip the house-notes rerun')
    parser.add_argument('--overwrite', action='store_true', help='replace an existing --out')
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        check_positive('--sequences', args.sequences)
        check_positive('--rate-hz', args.rate_hz)
        if args.out.exists() and any(args.out.iterdir()):
            if not args.overwrite:
                raise UsageError(f'{args.out} is not empty: use --overwrite to replace it')
            shutil.rmtree(args.out)
        return _run(args)
    except (UsageError, ValueError) as error:
        return fail(PROG, error)


def _run(args) -> int:
    sim = SimParams(width=args.width, height=args.height)
    settings = ViewSettings(text_model=args.text_model, image_model=args.image_model)
    reader = TextReader()
    reader.load()
    judge = PhotoFirstJudge(PhotoJudge(), OcrJudge(reader))
    suite = SuiteScores()
    for world_seed in args.worlds:
        started = time.monotonic()
        world = generate_world(world_seed, args.size, args.family)
        folder = args.out / world.name
        truth = tour_ground_truth(world, tour_seed=world_seed)
        sequences = generate_suite(
            world, truth, range(args.sequences), min_tasks=args.min_tasks, max_tasks=args.max_tasks
        )
        memory = build_tour_memory(
            world, folder / 'memory', settings, args.rate_hz, world_seed, sim
        )
        took = time.monotonic() - started
        _say(f'{world.name}: memory of {memory.store.count()} tour frames in {took:.0f} s')
        space = FreeSpace(world)
        scorer = TaskScorer(world, space=space)
        try:
            for sequence in sequences:
                setting = Setting(
                    world=world,
                    space=space,
                    memory=memory,
                    judge=judge,
                    photo_reader=reader,
                    photos=photo_bytes(sequence, world, sim),
                    explored=tour_positions(world, world_seed),
                    sim=sim,
                    localisation=LocalisationParams(standoff_m=args.standoff_m),
                    origin_ns=plan_tour(world, seed=world_seed).end_ns,
                )
                scores = evaluate_sequence(
                    setting, sequence, scorer, folder / sequence.id, not args.no_notes_run
                )
                for flow, run in scores.items():
                    suite.add(flow, run)
                print(f'\n## {sequence.id} ({len(sequence.tasks)} tasks)\n')
                print(comparison_table({flow: summarise([run]) for flow, run in scores.items()}))
                _say(f'{sequence.id} done at {time.monotonic() - started:.0f} s')
        finally:
            memory.store.close()
    summaries = suite.summaries()
    print(f'\n## suite: {len(args.worlds)} worlds\n')
    print(comparison_table(summaries))
    for line in done_when(summaries):
        print(f'- {line}')
    return 0


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


if __name__ == '__main__':
    sys.exit(main())
