# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Sweep δ, the lessons' similarity threshold, for a text embedder on the environment
split of the generated worlds' questions; prints the table and the chosen value."""

from __future__ import annotations

from collections.abc import Sequence

from waymark.cli import ArgumentParser, UsageError, fail

PROG = 'python -m waymark lessons-sweep'


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(prog=PROG, description=__doc__.split('\n\n')[0])
    parser.add_argument('--size', default='small')
    parser.add_argument('--family', default='rooms')
    parser.add_argument('--worlds', type=int, nargs='+', default=[0, 1, 2, 3, 4, 5])
    parser.add_argument('--per-category', type=int, default=5, help='questions per world')
    parser.add_argument('--text-model', default='default', help='the text embedder to tune')
    parser.add_argument('--low', type=float, default=0.2)
    parser.add_argument('--high', type=float, default=0.9)
    parser.add_argument('--step', type=float, default=0.05)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if not (-1.0 <= args.low < args.high <= 1.0 and args.step > 0.0):
            raise UsageError('need -1 <= --low < --high <= 1 and --step > 0')
        return _run(args)
    except (UsageError, ValueError) as error:
        return fail(PROG, error)


def _run(args) -> int:
    from waymark.evaluation.question_gen import generate_questions
    from waymark.evaluation.task_sequences import tour_ground_truth
    from waymark.lessons.splits import best_threshold, split_by_category, sweep_threshold
    from waymark.memory.views.embedders import SentenceEmbedder
    from waymark.sim.generate import generate_world

    questions = []
    for seed in args.worlds:
        world = generate_world(seed, args.size, args.family)
        truth = tour_ground_truth(world, tour_seed=seed)
        questions += generate_questions(truth, seed=0, per_category=args.per_category).questions
    environment, deployment = split_by_category(questions, lambda q: q.category.value)
    embedder = SentenceEmbedder(args.text_model, device='cpu')
    embedder.load()
    vectors = embedder.embed_texts([q.question for q in environment])
    count = round((args.high - args.low) / args.step) + 1
    thresholds = [round(args.low + i * args.step, 4) for i in range(count)]
    points = sweep_threshold(vectors, [q.category.value for q in environment], thresholds)
    print(
        f'{len(questions)} questions from {len(args.worlds)} worlds: {len(environment)} in '
        f'the environment split (swept), {len(deployment)} in the deployment split\n'
    )
    print('| δ | precision | recall | F1 |\n| --- | --- | --- | --- |')
    for p in points:
        print(f'| {p.threshold:.2f} | {p.precision:.3f} | {p.recall:.3f} | {p.f1:.3f} |')
    best = best_threshold(points)
    print(f'\nchosen δ = {best.threshold:.2f} (F1 {best.f1:.3f})')
    return 0
