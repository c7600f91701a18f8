# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The reasoning agent on cached suite worlds, with the scripted planner or a real model.

For each world already run by `make suite` (its bag, questions and built memory are only
read), this evaluates the agent with and without Binary Tracking next to the
embedder-only rows, per category, then sweeps BinTrack's evidence weights (β = 1 - α)
and leaf size over the route questions. Memory is copied to the output directory first,
so the suite's own output is never written.

    source scripts/env.sh
    python scripts/evaluate_agent.py --worlds small-0 small-1 [--out eval_output/agent]

With `--verifier`, the agent rows verify each answer once with a scripted VLM stand-in
(waymark_testing.scripted_vlm) that sees in each stored picture what the world's ground
truth says is visible there; their rows are labelled `scripted-vlm`.

With `--real`, the model is a real one instead (see test/support/local_llm.py: the server
named by WAYMARK_LLM_URL, else SmolLM2 on llama.cpp, installed by `make test-llm`), its
rows labelled with the model's name; the sweep is left to the scripted planner.

Tables go to stdout and to <out>/agent_eval.md; everything to <out>/agent_eval.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault('HF_HUB_OFFLINE', '1')
os.environ.setdefault('TRANSFORMERS_OFFLINE', '1')
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / 'test'))

from support.local_llm import real_model  # noqa: E402

from waymark.agent.agent import AgentConfig  # noqa: E402
from waymark.agent.bintrack import BinTrackParams  # noqa: E402
from waymark.agent.llm import LLMConfig  # noqa: E402
from waymark.cli import UsageError  # noqa: E402
from waymark.evaluation.agent_answerer import AgentAnswerer  # noqa: E402
from waymark.evaluation.answerers import agent_name, model_label  # noqa: E402
from waymark.evaluation.harness import EvaluationConfig, open_memory, run, suite_world  # noqa: E402
from waymark.evaluation.metrics import THRESHOLDS_M, evaluate  # noqa: E402
from waymark.evaluation.questions import Category, load_questions  # noqa: E402
from waymark.evaluation.report import write_json_atomically  # noqa: E402
from waymark_testing.scripted_llm import ScriptedLLMServer  # noqa: E402
from waymark_testing.scripted_planner import planner_server  # noqa: E402
from waymark_testing.scripted_vlm import ground_truth_words, verifier_policy  # noqa: E402

LABEL = 'scripted'
VERIFIED_LABEL = 'scripted-vlm'
BASELINES = ('embedder-only', 'embedder-only/segment', 'random-entry')
ALPHAS = (0.0, 0.25, 0.5, 0.75, 1.0)
K_LEAVES = (16, 4)
TAUS = [f'{t:g}' for t in THRESHOLDS_M]


def prepare(suite: Path, out: Path, label: str) -> EvaluationConfig:
    """The world's evaluation settings, with memory copied from the suite's run."""
    try:
        config = suite_world(suite, out)
    except UsageError as error:
        raise SystemExit(str(error)) from error
    if label in (LABEL, VERIFIED_LABEL):  # the planner's rules may have changed; rows are cheap
        for old in out.glob('predictions-agent*'):
            old.unlink()
    return config


def evaluate_world(
    config: EvaluationConfig, base_url: str, model: str, label: str, verifier_url: str = ''
) -> dict:
    rows = (*BASELINES, agent_name(True, label), agent_name(False, label))
    settings = dataclasses.replace(
        config,
        answerers=rows,
        llm_url=base_url,
        llm_model=model,
        agent_label=label,
        verifier_url=verifier_url,
    )
    return run(settings)


def evaluate_verified(config: EvaluationConfig, base_url: str, model: str) -> dict:
    """The agent rows with the ground-truth VLM stand-in verifying."""
    truth = json.loads((config.bag / 'ground_truth.json').read_text())
    memory = open_memory(config, config.out / 'memory')
    try:
        words = ground_truth_words(memory, truth)
    finally:
        memory.store.close()
    with ScriptedLLMServer(verifier_policy(words), model='scripted/vlm') as vlm:
        return evaluate_world(config, base_url, model, VERIFIED_LABEL, vlm.base_url)


def sweep_world(config: EvaluationConfig, base_url: str, model: str) -> list[dict]:
    """Route questions under each (α, β = 1 - α, k_leaf); one row per setting."""
    questions = [
        q for q in load_questions(config.questions).questions if q.category is Category.ROUTE
    ]
    memory = open_memory(config, config.out / 'memory')
    llm = LLMConfig(base_url=base_url, model=model)
    rows = []
    try:
        for k_leaf in K_LEAVES:
            for alpha in ALPHAS:
                params = BinTrackParams(alpha=alpha, beta=1.0 - alpha, k_leaf=k_leaf)
                answerer = AgentAnswerer(memory, llm, AgentConfig(bintrack=params), LABEL)
                predictions = [answerer.answer(q) for q in questions]
                result = evaluate(questions, predictions)
                rows.append(
                    {
                        'alpha': alpha,
                        'beta': 1.0 - alpha,
                        'k_leaf': k_leaf,
                        'overall': result['overall'],
                        'errors': [s['position_error_m'] for s in result['scores']],
                    }
                )
    finally:
        memory.store.close()
    return rows


def category_table(world: str, report: dict) -> list[str]:
    header = (
        '| world | category | answerer | n | SR@2 m | SR@5 m | mean err (m) | time err (s) '
        '| yes/no acc | α | LLM calls | tokens | retrievals | fallback |'
    )
    lines = [header, '|' + '---|' * (header.count('|') - 1)]
    for category in [*report['categories'], 'overall']:
        for name, result in report['answerers'].items():
            s = result['overall'] if category == 'overall' else result['per_category'][category]
            lines.append(
                f'| {world} | {category} | {name} | {s["questions"]} | '
                f'{_pct(s["success_at"].get("2"))} | {_pct(s["success_at"].get("5"))} | '
                f'{_num(s["mean_position_error_m"])} | {_num(s["mean_time_error_s"], 1)} | '
                f'{_pct(s["yes_no_accuracy"])} | {_num(s["retrieval_efficiency"], 4)} | '
                f'{s["llm_calls_per_query"]:.2f} | {s["tokens_per_query"]:.0f} | '
                f'{s["retrievals_per_query"]:.1f} | {_pct(s["fallback_rate"])} |'
            )
    return lines


def sweep_table(sweeps: dict[str, list[dict]], reports: dict[str, dict]) -> list[str]:
    """Per setting: route success pooled over the worlds, and each world's SR@5."""
    worlds = list(sweeps)
    header = (
        '| k_leaf | α | β | n | '
        + ' | '.join(f'SR@{t} m' for t in TAUS)
        + ' | mean err (m) | retrievals | '
        + ' | '.join(f'{w} SR@5' for w in worlds)
        + ' |'
    )
    lines = [header, '|' + '---|' * (header.count('|') - 1)]
    settings = [(r['k_leaf'], r['alpha']) for r in next(iter(sweeps.values()), [])]
    for k_leaf, alpha in settings:
        chosen = {
            w: next(r for r in rows if (r['k_leaf'], r['alpha']) == (k_leaf, alpha))
            for w, rows in sweeps.items()
        }
        errors = [e for r in chosen.values() for e in r['errors']]
        answered = [e for e in errors if e is not None]
        retrievals = statistics.fmean(r['overall']['retrievals_per_query'] for r in chosen.values())
        lines.append(
            f'| {k_leaf} | {alpha:g} | {1 - alpha:g} | {len(errors)} | '
            + ' | '.join(_pct(sum(e <= float(t) for e in answered) / len(errors)) for t in TAUS)
            + f' | {_num(statistics.fmean(answered) if answered else None)} | {retrievals:.1f} | '
            + ' | '.join(_pct(chosen[w]['overall']['success_at'].get('5')) for w in worlds)
            + ' |'
        )
    for name in (agent_name(False, LABEL), 'embedder-only', 'embedder-only/segment'):
        errors = []
        for world in worlds:
            scores = reports[world]['answerers'][name]['scores']
            errors += [s['position_error_m'] for s in scores if s['category'] == 'route']
        answered = [e for e in errors if e is not None]
        lines.append(
            f'| {name} | - | - | {len(errors)} | '
            + ' | '.join(_pct(sum(e <= float(t) for e in answered) / len(errors)) for t in TAUS)
            + f' | {_num(statistics.fmean(answered) if answered else None)} | - | '
            + ' | '.join(
                _pct(reports[w]['answerers'][name]['per_category']['route']['success_at'].get('5'))
                for w in worlds
            )
            + ' |'
        )
    return lines


def _pct(value: float | None) -> str:
    return '-' if value is None else f'{100 * value:.0f}%'


def _num(value: float | None, digits: int = 2) -> str:
    return '-' if value is None else f'{value:.{digits}f}'


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--suite', type=Path, default=Path('suite_output'))
    parser.add_argument('--worlds', nargs='+', default=['small-0', 'small-1'])
    parser.add_argument('--out', type=Path, help='default eval_output/agent[-real]')
    parser.add_argument('--no-sweep', action='store_true')
    parser.add_argument('--real', action='store_true', help='a real model (see above)')
    parser.add_argument('--verifier', action='store_true', help='add rows verified by a stand-in')
    args = parser.parse_args(argv)
    out = args.out or Path('eval_output/agent-real' if args.real else 'eval_output/agent')
    reports, sweeps, walls = {}, {}, {}
    model_server = real_model(out / 'logs') if args.real else planner_server()
    with model_server as server:
        label = model_label(server.model) if args.real else LABEL
        for world in args.worlds:
            started = time.monotonic()
            config = prepare(args.suite / world, out / world, label)
            print(f'[{world}] evaluating...', flush=True)
            reports[world] = evaluate_world(config, server.base_url, server.model, label)
            if args.verifier and not args.real:
                print(f'[{world}] evaluating with the VLM stand-in verifying...', flush=True)
                verified = evaluate_verified(config, server.base_url, server.model)
                reports[world]['answerers'].update(
                    {k: v for k, v in verified['answerers'].items() if k.startswith('agent')}
                )
            if not (args.no_sweep or args.real):
                print(f'[{world}] sweeping α, β and k_leaf on the route questions...', flush=True)
                sweeps[world] = sweep_world(config, server.base_url, server.model)
            walls[world] = time.monotonic() - started
        model = server.description if args.real else 'scripted planner'
    lines = [f'# The agent ({model}) on the suite worlds', '']
    for world, report in reports.items():
        memory = report['memory']
        lines += [
            f'## {world}: {report["questions"]} questions, {memory["frames"]} frames, '
            f'{memory["segments"]} segments ({walls[world]:.0f} s)',
            '',
            *category_table(world, report),
            '',
        ]
    if sweeps:
        lines += ['## Binary Tracking weights on the route questions (β = 1 - α)', '']
        lines += [*sweep_table(sweeps, reports), '']
    text = '\n'.join(lines)
    out.mkdir(parents=True, exist_ok=True)
    (out / 'agent_eval.md').write_text(text)
    write_json_atomically(
        out / 'agent_eval.json',
        {
            'worlds': {
                w: {
                    n: {k: a[k] for k in ('overall', 'per_category')}
                    for n, a in r['answerers'].items()
                }
                for w, r in reports.items()
            },
            'sweep': sweeps,
        },
    )
    print(text)
    return 0


if __name__ == '__main__':
    sys.exit(main())
