# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Run the fault drills and print what each lost, answered wrongly or left unanswered.

Exits 1 when any drill shows a loss, a wrong outcome, an unanswered request or a dead
node (or could not be carried out), 0 when all pass.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from waymark_ros.tools.drill.drills import Settings
from waymark_ros.tools.drill.report import table, to_json
from waymark_ros.tools.drill.run import DRILLS, run_drill

MAX_DOMAIN = 232  # the highest ROS_DOMAIN_ID Fast DDS accepts on Linux


def main(argv: Sequence[str] | None = None) -> int:
    defaults = Settings()
    parser = argparse.ArgumentParser(
        prog='python -m waymark_ros.tools.drill', description=__doc__.splitlines()[0]
    )
    parser.add_argument('drills', nargs='*', metavar='DRILL', help=f'any of {", ".join(DRILLS)}')
    parser.add_argument('--out', type=Path, default=Path('drill_output'), help='data and logs')
    parser.add_argument('--json', action='store_true', help='print JSON instead of the table')
    parser.add_argument(
        '--domain',
        type=int,
        default=int(os.environ.get('ROS_DOMAIN_ID', '30')),
        help='DDS domain of the first drill; the next ones count up from it',
    )
    parser.add_argument(
        '--keyframes', type=int, default=defaults.keyframes, help="kill drills' replay length"
    )
    parser.add_argument('--kills', type=int, default=defaults.kills, help='kill -9 per node')
    parser.add_argument(
        '--replay-rate', type=float, default=defaults.replay_rate, help='replay speed factor'
    )
    parser.add_argument(
        '--llm-queries', type=int, default=defaults.llm_queries, help='questions per LLM fault'
    )
    parser.add_argument(
        '--deadline', type=float, default=defaults.deadline_s, help="reasoner's agent.deadline_s"
    )
    parser.add_argument(
        '--e-stop-goals',
        type=int,
        default=defaults.e_stop_goals,
        help='goals sent while the e-stop is engaged',
    )
    args = parser.parse_args(argv)
    unknown = [name for name in args.drills if name not in DRILLS]
    if unknown:
        parser.error(f'unknown drill {", ".join(unknown)}; choose from {", ".join(DRILLS)}')
    names = args.drills or list(DRILLS)
    if args.domain < 0 or args.domain + len(names) - 1 > MAX_DOMAIN:
        parser.error(f'--domain {args.domain}: drills need domains up to {MAX_DOMAIN}')
    too_small = (
        args.keyframes < 10,
        args.kills < 1,
        args.llm_queries < 1,
        args.replay_rate <= 0,
        args.deadline <= 0,
        args.e_stop_goals < 1,
    )
    if any(too_small):
        parser.error(
            'need --keyframes >= 10, --kills >= 1, --llm-queries >= 1, --replay-rate > 0, '
            '--deadline > 0 and --e-stop-goals >= 1'
        )
    settings = Settings(
        keyframes=args.keyframes,
        kills=args.kills,
        replay_rate=args.replay_rate,
        llm_queries=args.llm_queries,
        deadline_s=args.deadline,
        e_stop_goals=args.e_stop_goals,
    )
    shutil.rmtree(args.out / 'bag', ignore_errors=True)
    results = []
    for offset, name in enumerate(names):
        if not args.json:
            print(f'drill {name} ...', flush=True)
        results.append(run_drill(name, settings, args.out, args.domain + offset))
        if not args.json:
            print(f'  {results[-1].row()[-1]} in {results[-1].seconds:.0f} s', flush=True)
    print(to_json(results) if args.json else '\n' + table(results))
    return 0 if all(r.passed for r in results) else 1


if __name__ == '__main__':
    sys.exit(main())
