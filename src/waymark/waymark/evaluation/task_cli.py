# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""`python -m waymark task-eval`: chained tasks in generated worlds, task layer against
single-shot Ask then GoTo on the same sequences, one table per run and two over the suite.

    python -m waymark task-eval --out task_eval [--size small] [--worlds 0 1]
        [--sequences 2] [--rate-hz 0.5]

Each world's tour is rendered into memory (text view with OCR; the photo view, with no
model, unless --no-photo-view; an image view with --image-model; with no view a photo
can be searched by, a photo goal is searched by the writing read in it), its sequences
drawn from the tour's ground truth, and both flows driven closed loop in simulated time,
recalling as deep and scored on the same stop views. The photo and OCR judges check and certify. The
suite's flow table leaves named places out (they succeed by construction in both flows);
its kind table gives each goal kind apart, places included.
"""

from __future__ import annotations

import io
import shutil
import sys
import time
from argparse import BooleanOptionalAction
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from PIL import Image

from waymark.cli import ArgumentParser, UsageError, check_positive, fail
from waymark.evaluation.task_geometry import FreeSpace
from waymark.evaluation.task_loop import (
    KidnapOutcome,
    Setting,
    SimParams,
    build_tour_memory,
    run_single_shot,
    run_task_layer,
    tour_positions,
)
from waymark.evaluation.task_scoring import (
    CPU_JUDGED_KINDS,
    SEARCHED_KINDS,
    GoalKind,
    RunScore,
    Summary,
    TaskScore,
    TaskScorer,
    comparison_table,
    kind_table,
    summarise,
    task_table,
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
from waymark.tasks.judge import OcrJudge
from waymark.tasks.outcomes import LedgerStatus
from waymark.tasks.photo_judge import PhotoFirstJudge, PhotoJudge

PROG = 'python -m waymark task-eval'
TASK_LAYER = 'task-layer'
SINGLE_SHOT = 'single-shot'
KIDNAPPED = 'kidnapped'
FLOWS = (TASK_LAYER, SINGLE_SHOT, KIDNAPPED)


@dataclass
class SuiteScores:
    """Scored runs per flow, in the order they ran."""

    runs: dict[str, list[RunScore]] = field(default_factory=lambda: {flow: [] for flow in FLOWS})
    kidnaps: list[tuple[KidnapOutcome, TaskScore]] = field(default_factory=list)

    def add(self, flow: str, run: RunScore) -> None:
        self.runs[flow].append(run)

    def kidnap_lines(self) -> list[str]:
        """The kidnap case's figures: relocalised, succeeded, and goals sent at an old
        epoch's pose (0 wanted)."""
        if not self.kidnaps:
            return []
        n = len(self.kidnaps)
        relocalised = sum(k.relocalised for k, _ in self.kidnaps)
        succeeded = sum(score.success for _, score in self.kidnaps)
        both = sum(k.relocalised and score.success for k, score in self.kidnaps)
        certified = [score for _, score in self.kidnaps if score.status is LedgerStatus.CERTIFIED]
        true = sum(score.success for score in certified)
        stale = sum(k.old_epoch_goals for k, _ in self.kidnaps)
        return [
            f'kidnapped tasks: {n}; relocalised {relocalised} ({_percent(relocalised, n)}); '
            f'succeeded {succeeded} ({_percent(succeeded, n)}), '
            f'{both} of them after relocalising',
            f'kidnapped and CERTIFIED: {len(certified)}, truly successful {true}',
            f"goals sent at an old epoch's pose after a kidnap: {stale} (wanted 0)",
        ]

    def summaries(self, kinds: Sequence[GoalKind] = SEARCHED_KINDS) -> dict[str, Summary]:
        """Per flow, over the tasks of `kinds` (by default every kind but named places)."""
        return {flow: summarise(runs, kinds) for flow, runs in self.runs.items() if runs}


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
    setting: Setting,
    sequence: TaskSequence,
    scorer: TaskScorer,
    folder: Path,
    suite: SuiteScores,
    kidnap: bool = False,
) -> dict[str, RunScore]:
    """Both flows over one sequence, and with `kidnap` the task layer kidnapped, scored
    into `suite`; `folder` keeps the ledgers."""
    layer = run_task_layer(setting, sequence, folder / TASK_LAYER)
    single = run_single_shot(setting, sequence, folder / SINGLE_SHOT)
    scores = {
        TASK_LAYER: scorer.score_run(sequence, layer.outcomes),
        SINGLE_SHOT: scorer.score_run(sequence, single.outcomes),
    }
    if kidnap:
        taken = run_task_layer(setting, sequence, folder / KIDNAPPED, kidnap=True)
        scores[KIDNAPPED] = scorer.score_run(sequence, taken.outcomes)
        suite.kidnaps.extend(
            (outcome, score)
            for outcome, score in zip(taken.kidnaps, scores[KIDNAPPED].tasks, strict=True)
            if outcome is not None
        )
    for flow, run in scores.items():
        suite.add(flow, run)
    return scores


def done_when(suite: SuiteScores) -> list[str]:
    """The issue's three acceptance figures: success and certificates over every kind but
    named places, conversions over the kinds a judge without a model decides."""
    searched = suite.summaries()
    layer, single = searched.get(TASK_LAYER), searched.get(SINGLE_SHOT)
    lines = []
    if layer is not None and single is not None and layer.success.total and single.success.total:
        points = 100.0 * (layer.success.value - single.success.value)
        lines.append(
            f'task layer minus single-shot success (places apart): {points:+.1f} points '
            f'({layer.success} against {single.success}; wanted >= +15)'
        )
    if layer is not None:
        lines.append(f'P(true success | CERTIFIED): {layer.judge_precision} (wanted >= 95 %)')
        judged = suite.summaries(CPU_JUDGED_KINDS).get(TASK_LAYER)
        if judged is not None:
            kinds = ', '.join(kind.value for kind in CPU_JUDGED_KINDS)
            lines.append(
                f'failed first attempts converted ({kinds}): {judged.conversion} (wanted >= 30 %)'
            )
    return lines


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(prog=PROG, description=__doc__.split('\n\n')[0])
    parser.add_argument('--out', type=Path, required=True, help='folder for memory and ledgers')
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
        '--photo-view',
        action=BooleanOptionalAction,
        default=True,
        help='keep the photo view (no model) so photo goals are searched by their picture',
    )
    parser.add_argument(
        '--standoff-m',
        type=float,
        default=LocalisationParams().standoff_m,
        help='how far from a located target the goal pose stands',
    )
    parser.add_argument(
        '--kidnap',
        action='store_true',
        help='also run the task layer with the robot carried to another room mid-task',
    )
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
    settings = ViewSettings(
        text_model=args.text_model, image_model=args.image_model, photo_view=args.photo_view
    )
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
                    setting, sequence, scorer, folder / sequence.id, suite, args.kidnap
                )
                print(f'\n## {sequence.id} ({len(sequence.tasks)} tasks)\n')
                per_flow = {flow: summarise([run], SEARCHED_KINDS) for flow, run in scores.items()}
                print(comparison_table(per_flow))
                print(task_table(sequence, scores))
                _say(f'{sequence.id} done at {time.monotonic() - started:.0f} s')
        finally:
            memory.store.close()
    print(f'\n## suite: {len(args.worlds)} worlds, every kind but named places\n')
    print(comparison_table(suite.summaries()))
    print('\n## suite by goal kind\n')
    print(kind_table(suite.runs))
    for line in done_when(suite) + suite.kidnap_lines():
        print(f'- {line}')
    return 0


def _percent(part: int, whole: int) -> str:
    return f'{100.0 * part / whole:.0f} %' if whole else 'n/a'


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


if __name__ == '__main__':
    sys.exit(main())
