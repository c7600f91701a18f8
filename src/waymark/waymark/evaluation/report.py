# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The evaluation report: JSON with everything, markdown tables, and plots."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import matplotlib

matplotlib.use('Agg')
import matplotlib.pyplot as plt
import numpy as np

from waymark.evaluation.answerers import is_per_view, row_label
from waymark.evaluation.bag_map import BagBackground, plot_extent
from waymark.evaluation.ingest import summary_lines
from waymark.evaluation.metrics import THRESHOLDS_M
from waymark.evaluation.questions import AnswerType, QuestionSet

TRAJECTORY_COLOR = '#1b9e77'  # not in matplotlib's default cycle, which the answers use


def write_json_atomically(path: Path, data: dict) -> None:
    """Readers never see half a report: write aside, then rename over."""
    tmp = path.with_suffix(path.suffix + '.tmp')
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
    os.replace(tmp, path)


def markdown(report: dict) -> str:
    lines = [f'# waymark evaluation: {report["title"]}', '']
    memory = report['memory']
    segments = (
        f' and {memory["segments"]} segments of {memory["segment_window_s"]:g} s'
        if memory.get('segments')
        else ''
    )
    lines.append(
        f'{report["questions"]} questions, memory of {memory["entries"]} frames{segments} '
        f'from {memory["keyframes"]} keyframes; position error against the '
        f'{report["position_metric"]} ground truth.'
    )
    if memory.get('captioner'):
        done = memory.get('captions', {}).get('segments_captioned', 0)
        lines.append(f'Segments captioned by {memory["captioner"]}: {done}.')
    if report.get('model'):  # agent rows: the weights they were answered with
        model = report['model']
        weights = (
            f' ({model["file"]}, sha256 {model["sha256"]})'
            if model.get('sha256')
            else ' (weights not named: --llm-model-file)'
        )
        lines.append(f'Agent model: {model["name"] or "the first one served"}{weights}.')
    if 'ingest' in report:  # reports from before the ingest summary lack it
        lines += ['', '## Ingest', '']
        lines += [f'- {line}' for line in summary_lines(report['ingest'], report['sensors'])]
    lines += ['', '## Overall', '']
    lines += _table(report, lambda r: r['overall'])
    for category in report['categories']:
        lines += ['', f'## {category}', '']
        lines += _table(report, lambda r, c=category: r['per_category'].get(c))
    lines += ['', '## Plots', ''] + [f'- `{p}`' for p in report['plots']]
    return '\n'.join(lines) + '\n'


def _table(report: dict, pick) -> list[str]:
    taus = [f'{t:g}' for t in THRESHOLDS_M]
    header = (
        '| answerer | n | answered | '
        + ' | '.join(f'SR@{t} m' for t in taus)
        + ' | mean err (m) | median err (m) | target err (m) | located by | time err (s) '
        '| yes/no acc | α | latency (s) | LLM calls | tokens | retrievals | verifier calls '
        '| fallback |'
    )
    rows = [header, '|' + '---|' * (header.count('|') - 1)]
    for name, result in report['answerers'].items():
        summary = pick(result)
        if summary is None:
            continue
        cells = [
            row_label(name, summary['fallback_rate']),
            str(summary['questions']),
            str(summary['answered']),
            *[_f(summary['success_at'].get(t), pct=True) for t in taus],
            _f(summary['mean_position_error_m']),
            _f(summary['median_position_error_m']),
            # Median; reports written before targets were located lack them.
            _f(summary.get('median_target_error_m')),
            _methods(summary.get('target_methods') or {}),
            _f(summary['mean_time_error_s']),
            _f(summary['yes_no_accuracy'], pct=True),
            _f(summary['retrieval_efficiency'], digits=4),
            _f(summary['mean_latency_s'], digits=3),
            f'{summary["llm_calls_per_query"]:.1f}',
            f'{summary["tokens_per_query"]:.0f}',
            # Per query; reports written before these were counted lack them.
            f'{summary.get("retrievals_per_query", 0.0):.1f}',
            f'{summary.get("verifier_calls_per_query", 0.0):.1f}',
            _f(summary['fallback_rate'], pct=True),
        ]
        rows.append('| ' + ' | '.join(cells) + ' |')
    return rows


def _methods(counts: dict[str, int]) -> str:
    """The mix of localisation methods, most used first: "triangulated 5, viewpoint 1"."""
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return ', '.join(f'{method} {n}' for method, n in ranked) or '-'


def _f(value, digits: int = 2, pct: bool = False) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return '-'
    return f'{100 * value:.0f}%' if pct else f'{value:.{digits}f}'


def plot_all(
    out: Path,
    report: dict,
    questions: QuestionSet,
    ground_truth: dict | None,
    background: BagBackground | None = None,
) -> list[str]:
    out.mkdir(parents=True, exist_ok=True)
    paths = [plot_map(out / 'map.png', report, questions, ground_truth, background)[0]]
    paths.append(_plot_cdf(out / 'error_cdf.png', report))
    paths.append(_plot_categories(out / 'categories.png', report))
    return [str(p.name) for p in paths]


def plot_map(
    path: Path,
    report: dict,
    questions: QuestionSet,
    truth: dict | None,
    background: BagBackground | None = None,
) -> tuple[Path, tuple[float, float, float, float] | None]:
    """The answers and the questions' targets over the bag's occupancy map (when it has
    one) and the robot's trajectory (the ground truth's, else the bag's poses), framed to
    cover them all; returns the path and the x, y limits drawn (None: nothing to frame)."""
    figure, axes = plt.subplots(figsize=(9, 7))
    occupancy = background.occupancy if background else None
    if occupancy is not None:
        shade = np.where(occupancy.cells < 0, 0.25, np.clip(occupancy.cells, 0, 100) / 100.0)
        axes.imshow(
            shade,
            cmap='gray_r',
            vmin=0.0,
            vmax=1.0,
            origin='lower',
            extent=occupancy.extent,
            interpolation='nearest',
            zorder=0,
        )
    if truth:
        for room in truth.get('rooms') or truth.get('world', {}).get('rooms', []):
            polygon = room.get('polygon')
            if polygon:
                xs, ys = zip(*[*polygon, polygon[0]], strict=True)
                axes.plot(xs, ys, color='0.6', linewidth=1)
    trajectory = np.asarray(
        [(p['x'], p['y']) for p in (truth or {}).get('trajectory', [])], dtype=float
    ).reshape(-1, 2)
    if not len(trajectory) and background is not None:
        trajectory = background.trajectory
    if len(trajectory):
        axes.plot(
            trajectory[:, 0],
            trajectory[:, 1],
            color=TRAJECTORY_COLOR,
            linewidth=1.0,
            label='trajectory',
            zorder=2,
        )
    targets = {q.id: q.position for q in questions.questions if q.position is not None}
    axes.scatter(
        [p[0] for p in targets.values()],
        [p[1] for p in targets.values()],
        marker='*',
        s=120,
        color='gold',
        edgecolors='k',
        label='ground truth',
        zorder=3,
    )
    for name, result in report['answerers'].items():
        if is_per_view(name):
            continue  # one series per level is enough on a map
        _plot_answers(axes, name, result['predictions'], targets)
    limits = plot_extent(occupancy, trajectory)
    if limits is not None:
        axes.set_xlim(limits[0], limits[1])
        axes.set_ylim(limits[2], limits[3])
    axes.set_aspect('equal', adjustable='datalim')
    axes.set_xlabel('x (m)')
    axes.set_ylabel('y (m)')
    axes.legend(loc='best', fontsize=8)
    backdrop = 'occupancy map' if occupancy is not None else 'trajectory'
    axes.set_title(
        f'goals (dots), located targets (x) and ground truth (stars) over the {backdrop}, '
        'map frame',
        fontsize=9,
    )
    figure.canvas.draw()  # the equal aspect settles the limits when drawn
    x0, x1 = axes.get_xlim()
    y0, y1 = axes.get_ylim()
    figure.savefig(path, dpi=110, bbox_inches='tight')
    plt.close(figure)
    return path, (x0, x1, y0, y1) if limits is not None else None


def _plot_answers(axes, name: str, predictions: list[dict], truths: dict) -> None:
    """One answerer's goals, and where it located each target: a dashed line from the
    viewpoint through the target estimate shows the bearing it was found along, a thin
    line from the estimate (or the goal, without one) to the truth shows the miss."""
    goals = [(p['question_id'], p['goal']) for p in predictions if p.get('goal')]
    dots = axes.scatter([g[0] for _, g in goals], [g[1] for _, g in goals], s=18, label=name)
    dots.set_zorder(4)
    colour = dots.get_facecolor()[0]
    located = [p for p in predictions if p.get('target')]
    axes.scatter(
        [p['target'][0] for p in located],
        [p['target'][1] for p in located],
        marker='x',
        s=22,
        color=colour,
        zorder=4,
    )
    for prediction in predictions:
        truth = truths.get(prediction['question_id'])
        end = prediction.get('target') or prediction.get('goal')
        if truth is None or end is None:
            continue
        axes.plot([end[0], truth[0]], [end[1], truth[1]], color=colour, lw=0.5, alpha=0.6)
        seen_from = prediction.get('viewpoint')
        if seen_from and prediction.get('target'):
            axes.plot(
                [seen_from[0], end[0]],
                [seen_from[1], end[1]],
                color=colour,
                lw=0.5,
                ls='--',
                alpha=0.4,
            )


def _plot_cdf(path: Path, report: dict) -> Path:
    figure, axes = plt.subplots(figsize=(6, 4))
    for name, result in report['answerers'].items():
        scores = [s for s in result['scores'] if s['answer_type'] == AnswerType.POSITION.value]
        errors = sorted(s['position_error_m'] for s in scores if s['position_error_m'] is not None)
        if scores:
            # Unanswered questions never reach 100%: the curve tops out at the answered share.
            fractions = [(i + 1) / len(scores) for i in range(len(errors))]
            axes.step(errors, fractions, where='post', label=name)
    for tau in THRESHOLDS_M:
        axes.axvline(tau, color='0.85', linewidth=0.8)
    axes.set_xscale('symlog', linthresh=1.0)
    axes.set_xlabel('position error (m)')
    axes.set_ylabel('fraction of position questions')
    axes.set_ylim(0, 1)
    axes.legend(fontsize=8)
    figure.savefig(path, dpi=110, bbox_inches='tight')
    plt.close(figure)
    return path


def _plot_categories(path: Path, report: dict) -> Path:
    figure, axes = plt.subplots(figsize=(7, 4))
    names = list(report['answerers'])
    categories = report['categories']
    width = 0.8 / max(1, len(names))
    for i, name in enumerate(names):
        per_category = report['answerers'][name]['per_category']
        values = [_category_value(per_category.get(c)) for c in categories]
        axes.bar([j + i * width for j in range(len(categories))], values, width, label=name)
    axes.set_xticks([j + 0.4 - width / 2 for j in range(len(categories))], categories)
    axes.set_ylabel('success (SR@5 m, or yes/no accuracy)')
    axes.set_ylim(0, 1)
    axes.legend(fontsize=8)
    figure.savefig(path, dpi=110, bbox_inches='tight')
    plt.close(figure)
    return path


def _category_value(summary: dict | None) -> float:
    if not summary:
        return 0.0
    if summary['success_at']:
        return summary['success_at'].get('5', 0.0)
    return summary['yes_no_accuracy'] or 0.0
