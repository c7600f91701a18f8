# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The standard benchmark suite: generated worlds of each size and seed, recorded,
questioned and evaluated, with one table across them all (a row per world and answerer)
and a compact one of the embedder-only rows by memory level and view.

    python -m waymark suite --out suite_output [--sizes small medium large] [--seeds 0 1]
        [--families rooms corridor open lookalike]
        [--llm-url URL [--llm-model M] [--bt-alpha A --bt-beta B]]
        [--captioner-url URL [--captioner-model M]]

Worlds of the `rooms` family keep their old folder names (`small-0`); the other layout
families are named `corridor-small-0` and are recorded in one of the sensor shapes the
presets accept (sim.shapes), chosen from (family, size, seed), at 320x240.

With an LLM server the reasoning agent's rows (`agent`, `agent/no-bt`) join each world's;
with a VLM server (`--captioner-url`) segments are captioned and their caption rows join.
Every step is skipped when its output is already complete, so an interrupted suite
continues where it stopped (--resume; --overwrite starts over). Each stage of each world
prints a line on stderr with an estimate of the time left, measured on the worlds done.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from PIL import Image

from waymark.cli import (
    ArgumentParser,
    UsageError,
    add_output_flags,
    check_output_dir,
    check_positive,
    clear_output_dir,
    fail,
)
from waymark.evaluation.answerers import AnswererError, embedder_row, row_label
from waymark.evaluation.harness import (
    EvaluationConfig,
    add_agent_arguments,
    add_captioner_arguments,
    agent_options,
    captioner_options,
    check_captioner,
    run,
)
from waymark.evaluation.metrics import THRESHOLDS_M
from waymark.evaluation.progress import Finished, eta_s, progress_line
from waymark.evaluation.question_gen import generate_questions, render_jobs
from waymark.evaluation.questions import save_questions
from waymark.evaluation.report import write_json_atomically
from waymark.geometry import Pose
from waymark.sim.bag import GENERATED_CAMERA_RATE_HZ, load_world, write_bag
from waymark.sim.generate import FAMILIES, SIZES
from waymark.sim.render import render
from waymark.sim.shapes import sensor_shape
from waymark.sim.trajectory import plan_tour

STANDARD_SIZES = ('small', 'medium', 'large')
STANDARD_SEEDS = (0, 1)
# Large tours are long: smaller frames keep the bag and the OCR time in bounds. The new
# families record at their drivers' rates (up to 30 Hz), so they get small frames too.
RESOLUTION = {'large': (320, 240)}
SMALL_FRAMES = (320, 240)


def case_name(family: str, size: str, seed: int) -> str:
    """A world's folder: `small-0` for the rooms family (as before families), else
    `corridor-small-0`."""
    return f'{size}-{seed}' if family == 'rooms' else f'{family}-{size}-{seed}'


def recording_options(family: str, size: str, seed: int) -> dict:
    """write_bag's options for a world: the rooms family as before families existed, the
    others in their sensor shape."""
    if family == 'rooms':
        width, height = RESOLUTION.get(size, (640, 480))
        return {'camera_rate_hz': GENERATED_CAMERA_RATE_HZ, 'width': width, 'height': height}
    width, height = SMALL_FRAMES
    shape = sensor_shape(FAMILIES.index(family) - 1, size, seed)
    return shape.bag_options() | {'width': width, 'height': height}


def run_case(
    out: Path,
    size: str,
    seed: int,
    per_category: int,
    max_duration_s: float | None,
    agent: dict | None = None,
    say: Callable[[str], None] = lambda stage: None,
    family: str = 'rooms',
) -> tuple[dict, bool]:
    """One world: bag, questions (with photos for image questions), evaluation; `agent`
    holds EvaluationConfig's agent and captioner fields (harness.agent_options,
    harness.captioner_options), `say` hears each
    stage as it starts. Returns the report and whether the bag was recorded anew."""
    bag = out / 'bag'
    recorded = not (bag / 'ground_truth.json').is_file()
    if recorded:
        say('recording')
        shutil.rmtree(bag, ignore_errors=True)  # a half-written bag: record it again
        write_bag(
            load_world(size, seed, family),
            bag,
            seed=seed,
            max_duration_s=max_duration_s,
            **recording_options(family, size, seed),
        )
    questions = out / 'questions.json'
    if not questions.is_file():
        say('questions')
        truth = json.loads((bag / 'ground_truth.json').read_text())
        question_set = generate_questions(truth, seed=seed, per_category=per_category)
        _render_photos(out, question_set, truth, load_world(size, seed, family))
        save_questions(question_set, questions)
    say('evaluating')
    config = EvaluationConfig(bag, questions, out / 'eval', progress=False, **(agent or {}))
    return run(config), recorded


def tour_seconds(
    size: str, seed: int, max_duration_s: float | None, family: str = 'rooms'
) -> float:
    """Length of the tour a world's bag records: what its work grows with."""
    tour = plan_tour(load_world(size, seed, family), seed=seed)
    length = (tour.end_ns - tour.start_ns) / 1e9
    return length if max_duration_s is None else min(length, max_duration_s)


def is_suite(folder: Path) -> bool:
    """Whether `folder` holds a suite's output (a report, or a world's bag or evaluation)."""
    return (folder / 'suite_report.json').exists() or any(
        (case / 'bag').exists() or (case / 'eval').exists() for case in folder.iterdir()
    )


def _render_photos(out: Path, question_set, truth: dict, world) -> None:
    camera = truth['camera']
    height = truth['images'][0]['z'] if truth['images'] else 0.45
    for question_id, (x, y, yaw) in render_jobs(question_set, truth):
        question = next(q for q in question_set.questions if q.id == question_id)
        pixels = render(
            world,
            Pose.from_xyz_yaw(x, y, height, yaw),
            camera['width'],
            camera['height'],
            camera['hfov_deg'],
        )
        path = out / question.image
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(pixels).save(path)


def table(results: dict[str, dict]) -> str:
    """One row per world and answerer."""
    taus = [f'{t:g}' for t in THRESHOLDS_M]
    header = (
        '| world | answerer | questions | '
        + ' | '.join(f'SR@{t} m' for t in taus)
        + ' | mean err (m) | target err (m) | yes/no acc | α | LLM calls | tokens | fallback '
        '| frames / segments | wall (s) |'
    )
    lines = [header, '|' + '---|' * (header.count('|') - 1)]
    for case, result in results.items():
        report = result['report']
        memory = report['memory']
        for name, answerer in report['answerers'].items():
            overall = answerer['overall']
            error = overall['mean_position_error_m']
            # The median; reports written before targets were located lack it.
            target = overall.get('median_target_error_m')
            label = row_label(name, overall['fallback_rate'])
            lines.append(
                f'| {case} | {label} | {overall["questions"]} | '
                + ' | '.join(_success(overall, taus))
                + f' | {"-" if error is None else f"{error:.2f}"}'
                + f' | {"-" if target is None else f"{target:.2f}"}'
                + f' | {_percent(overall["yes_no_accuracy"])} | {_alpha(overall)}'
                + f' | {overall["llm_calls_per_query"]:.1f} | {overall["tokens_per_query"]:.0f}'
                + f' | {_percent(overall["fallback_rate"])}'
                + f' | {memory["entries"]} / {memory.get("segments", 0)}'
                + f' | {result["wall_s"]:.0f} |'
            )
    return '\n'.join(lines) + '\n'


def family_table(results: dict[str, dict], families: dict[str, str]) -> str:
    """One row per layout family and answerer: success over all its worlds' questions."""
    taus = [f'{t:g}' for t in THRESHOLDS_M]
    header = (
        '| family | answerer | worlds | questions | ' + ' | '.join(f'SR@{t} m' for t in taus) + ' |'
    )
    lines = [header, '|' + '---|' * (header.count('|') - 1)]
    rows: dict[tuple[str, str], list[dict]] = {}
    for case, result in results.items():
        for name, answerer in result['report']['answerers'].items():
            rows.setdefault((families[case], name), []).append(answerer['overall'])
    for (family, name), overalls in rows.items():
        count = sum(o['questions'] for o in overalls)
        rates = [
            sum(o['success_at'].get(t, 0.0) * o['questions'] for o in overalls) / max(count, 1)
            for t in taus
        ]
        fell_back = sum(o.get('fallback_rate', 0.0) * o['questions'] for o in overalls)
        label = row_label(name, fell_back / max(count, 1))
        lines.append(
            f'| {family} | {label} | {len(overalls)} | {count} | '
            + ' | '.join(f'{100 * r:.0f}%' for r in rates)
            + ' |'
        )
    return '\n'.join(lines) + '\n'


def view_table(results: dict[str, dict]) -> str:
    """The embedder-only rows by memory level and view: success at each threshold."""
    taus = [f'{t:g}' for t in THRESHOLDS_M]
    header = (
        '| world | level | views | ' + ' | '.join(f'SR@{t} m' for t in taus) + ' | yes/no acc | α |'
    )
    lines = [header, '|' + '---|' * (header.count('|') - 1)]
    for case, result in results.items():
        for name, answerer in result['report']['answerers'].items():
            row = embedder_row(name)
            if row is None:
                continue
            level, views = row
            overall = answerer['overall']
            lines.append(
                f'| {case} | {level} | {"+".join(views) or "all"} | '
                + ' | '.join(_success(overall, taus))
                + f' | {_percent(overall["yes_no_accuracy"])} | {_alpha(overall)} |'
            )
    return '\n'.join(lines) + '\n'


def _success(overall: dict, taus: list[str]) -> list[str]:
    return [f'{100 * overall["success_at"].get(t, 0.0):.0f}%' for t in taus]


def _percent(value: float | None) -> str:
    return '-' if value is None else f'{100 * value:.0f}%'


def _alpha(overall: dict) -> str:
    alpha = overall['retrieval_efficiency']
    return '-' if alpha is None else f'{alpha:.4f}'


def main(argv: Sequence[str] | None = None) -> int:
    parser = ArgumentParser(prog='waymark suite', description=__doc__.splitlines()[0])
    parser.add_argument('--out', type=Path, default=Path('suite_output'))
    add_output_flags(parser)
    parser.add_argument('--sizes', nargs='+', default=list(STANDARD_SIZES), choices=list(SIZES))
    parser.add_argument('--seeds', nargs='+', type=int, default=list(STANDARD_SEEDS))
    parser.add_argument('--families', nargs='+', default=list(FAMILIES), choices=list(FAMILIES))
    parser.add_argument('--per-category', type=int, default=5)
    parser.add_argument('--max-duration', type=float, default=None, help='cut tours (smoke runs)')
    parser.add_argument('--quiet', action='store_true', help='no progress lines on stderr')
    add_agent_arguments(parser)
    add_captioner_arguments(parser)
    args = parser.parse_args(argv)
    try:
        check_positive('--per-category', args.per_category)
        check_positive('--max-duration', args.max_duration)
        check_captioner(**captioner_options(args))
        if min(args.seeds) < 0:
            raise UsageError(f'--seeds must be at least 0, not {min(args.seeds)}')
        check_output_dir(args.out, is_suite, 'suite', args.resume, args.overwrite)
    except UsageError as error:
        return fail(parser.prog, error)
    if args.overwrite:
        clear_output_dir(args.out)
    cases = {
        case_name(family, size, seed): (
            family,
            size,
            seed,
            tour_seconds(size, seed, args.max_duration, family),
        )
        for family in dict.fromkeys(args.families)
        for size in dict.fromkeys(args.sizes)
        for seed in dict.fromkeys(args.seeds)
    }
    results, finished = {}, []
    for index, (case, (family, size, seed, tour_s)) in enumerate(cases.items(), start=1):
        started = time.monotonic()
        todo_s = sum(t for *_, t in list(cases.values())[index:])

        def say(stage: str, index=index, case=case, tour_s=tour_s, started=started, todo_s=todo_s):
            if not args.quiet:
                eta = eta_s(finished, tour_s, time.monotonic() - started, todo_s)
                line = progress_line(index, len(cases), case, stage, eta)
                print(line, file=sys.stderr, flush=True)

        try:
            report, recorded = run_case(
                args.out / case,
                size,
                seed,
                args.per_category,
                args.max_duration,
                agent_options(args) | captioner_options(args),
                say,
                family,
            )
        except (UsageError, AnswererError) as error:
            return fail(parser.prog, error)
        wall_s = time.monotonic() - started
        if recorded:  # a world resumed from its bag took less than its work: not a measure
            finished.append(Finished(tour_s, wall_s))
        results[case] = {'report': report, 'wall_s': wall_s}
    families = {case: family for case, (family, *_) in cases.items()}
    summary = (
        table(results)
        + '\n## Per layout family\n\n'
        + family_table(results, families)
        + '\n## Per view and level (embedder-only)\n\n'
        + view_table(results)
    )
    (args.out / 'suite_report.md').write_text('# waymark standard suite\n\n' + summary)
    write_json_atomically(
        args.out / 'suite_report.json',
        {
            case: {
                'wall_s': r['wall_s'],
                'memory': {
                    k: r['report']['memory'].get(k) for k in ('frames', 'segments', 'views')
                },
                'answerers': {n: a['overall'] for n, a in r['report']['answerers'].items()},
            }
            for case, r in results.items()
        },
    )
    print(summary)
    return 0


if __name__ == '__main__':
    sys.exit(main())
