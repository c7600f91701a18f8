# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""SMA's lessons on cached suite worlds: no lessons, RAG, similarity-only and TRS rows.

For each world already run by `make suite` (memory is copied first, the suite's output
is only read), the questions are halved per category (seed 42); lessons are acquired on
one half over `--passes` passes and every row answers the other half read-only (see
waymark/evaluation/lessons_eval.py). Tasks and lessons are embedded by the memory's text
model.

    source scripts/env.sh
    python scripts/evaluate_lessons.py --real --worlds small-0 [--passes 3] [--out DIR]

`--real` uses the model of test/support/local_llm.py (WAYMARK_LLM_URL, else llama.cpp with
the installed GGUF); its name and weights are in the report. Without it the scripted
planner answers and a scripted policy reflects: the planner reads no lesson, so those
rows show the loop runs and are marked as mechanics, never as a lessons result.

Tables go to stdout and <out>/lessons_eval.md; everything to <out>/lessons_eval.json.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault('HF_HUB_OFFLINE', '1')
os.environ.setdefault('TRANSFORMERS_OFFLINE', '1')
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / 'test'))

from support.local_llm import real_model  # noqa: E402

from waymark.agent.llm import LLMConfig  # noqa: E402
from waymark.cli import UsageError  # noqa: E402
from waymark.evaluation.agent_answerer import AgentAnswerer  # noqa: E402
from waymark.evaluation.answerers import model_label  # noqa: E402
from waymark.evaluation.harness import open_memory, suite_world  # noqa: E402
from waymark.evaluation.lessons_eval import (  # noqa: E402
    ROWS,
    LessonsEvalConfig,
    WorldResult,
    evaluate_world,
)
from waymark.evaluation.questions import load_questions  # noqa: E402
from waymark.evaluation.report import write_json_atomically  # noqa: E402
from waymark.lessons.acquire import accuracy_by_trust  # noqa: E402
from waymark.lessons.retrieval import RetrievalParams  # noqa: E402
from waymark.memory.views.embedders import SentenceEmbedder  # noqa: E402
from waymark_testing.scripted_lessons import ReflectingPlanner  # noqa: E402
from waymark_testing.scripted_llm import ScriptedLLMServer  # noqa: E402


def open_world(suite: Path, out: Path):
    """The world's questions and its memory, copied from the suite's run."""
    try:
        config = suite_world(suite, out)
    except UsageError as error:
        raise SystemExit(str(error)) from error
    return load_questions(config.questions).questions, open_memory(config, out / 'memory')


def category_table(results: list[WorldResult]) -> list[str]:
    """Accuracy per category and row, pooled over the worlds."""
    categories = sorted({c for r in results for c in r.categories.values()})
    lines = ['| category | n | ' + ' | '.join(ROWS) + ' |', '|---|---|' + '---|' * len(ROWS)]
    for category in [*categories, None]:
        cells, count = [], 0
        for row in ROWS:
            rewards = [
                o.reward
                for r in results
                for o in r.rows[row].outcomes
                if category is None or r.categories[o.problem_id] == category
            ]
            count = len(rewards)
            cells.append(f'{100 * sum(rewards) / count:.0f}%' if count else '-')
        lines.append(f'| {category or "overall"} | {count} | ' + ' | '.join(cells) + ' |')
    return lines


def pass_table(results: list[WorldResult]) -> list[str]:
    lines = [
        '| world | pass | answers | accuracy | written | merged | rejected | pending | bank |',
        '|---|---|---|---|---|---|---|---|---|',
    ]
    for result in results:
        for p in result.passes:
            rejected = ', '.join(f'{k} {v}' for k, v in sorted(p.rejected.items())) or '0'
            lines.append(
                f'| {result.world} | {p.number} | {len(p.outcomes)} | {100 * p.accuracy:.0f}% | '
                f'{p.written} | {p.merged} | {rejected} | {p.pending} | {p.bank_size} |'
            )
    return lines


def trust_table(results: list[WorldResult]) -> list[str]:
    """SMA's diagnostic on the TRS row: accuracy by the mean trust of the lessons given."""
    outcomes = [o for r in results for o in r.rows['lessons-trs'].outcomes]
    lines = ['| mean TRS of the lessons given | answers | accuracy |', '|---|---|---|']
    for key, (accuracy, count) in accuracy_by_trust(outcomes).items():
        lines.append(f'| {key} | {count} | {100 * accuracy:.0f}% |')
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--suite', type=Path, default=Path('suite_output'))
    parser.add_argument('--worlds', nargs='+', default=['small-0', 'small-1'])
    parser.add_argument('--out', type=Path, help='default eval_output/lessons[-real]')
    parser.add_argument('--passes', type=int, default=3, help='acquisition passes (T)')
    parser.add_argument('--min-similarity', type=float, default=RetrievalParams.min_similarity)
    parser.add_argument('--text-model', default='default', help="memory's text embedder")
    parser.add_argument('--real', action='store_true', help='a real model (see above)')
    args = parser.parse_args(argv)
    out = args.out or Path('eval_output/lessons-real' if args.real else 'eval_output/lessons')
    config = LessonsEvalConfig(
        passes=args.passes, retrieval=RetrievalParams(min_similarity=args.min_similarity)
    )
    embedder = SentenceEmbedder(args.text_model, device='cpu')
    embedder.load()

    def embed(text: str):
        return embedder.embed_texts([text])[0]

    results, walls = [], {}
    server = real_model(out / 'logs') if args.real else ScriptedLLMServer(ReflectingPlanner())
    with server as model:
        description = model.description if args.real else 'scripted planner (mechanics only)'
        for world in args.worlds:
            started = time.monotonic()
            print(f'[{world}] acquiring and deploying...', flush=True)
            questions, memory = open_world(args.suite / world, out / world)
            try:
                llm = LLMConfig(base_url=model.base_url, model=model.model)
                answerer = AgentAnswerer(memory, llm, label=model_label(model.model))
                results.append(
                    evaluate_world(
                        world,
                        questions,
                        answerer,
                        embed,
                        args.text_model,
                        config,
                        mechanics_only=not args.real,
                        photo_dir=args.suite / world,
                    )
                )
            finally:
                memory.store.close()
            walls[world] = time.monotonic() - started
    lines = [
        f'# Lessons (SMA) with {description}',
        '',
        f'T = {args.passes} passes, δ = {args.min_similarity}, η = '
        f'{config.retrieval.trust_weight}, k = {config.retrieval.top_k}; reward: position '
        f'within {config.reward.tau_m} m, time within {config.reward.time_tolerance_s} s, '
        f'yes/no right. Worlds: ' + ', '.join(f'{w} ({s:.0f} s)' for w, s in walls.items()),
        '',
        '## Deployment split, accuracy per category',
        '',
        *category_table(results),
        '',
        '## Acquisition passes (cards written in pass 0 only)',
        '',
        *pass_table(results),
        '',
        '## Accuracy by the mean TRS of the lessons given (lessons-trs row)',
        '',
        *trust_table(results),
    ]
    if not args.real:
        lines += ['', 'The scripted planner reads no lesson: these rows are not a lessons result.']
    text = '\n'.join(lines)
    out.mkdir(parents=True, exist_ok=True)
    (out / 'lessons_eval.md').write_text(text)
    write_json_atomically(
        out / 'lessons_eval.json',
        {'model': description, 'worlds': [r.to_json() for r in results]},
    )
    print(text)
    return 0


if __name__ == '__main__':
    sys.exit(main())
