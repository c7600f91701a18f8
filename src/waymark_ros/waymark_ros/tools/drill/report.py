# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""What one drill measured, and the table that puts the drills side by side."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

COLUMNS = ('drill', 'injected', 'answered', 'lost', 'wrong outcome', 'node alive', 'verdict')


@dataclass
class DrillResult:
    """Counts of one drill. `requests` were sent and `answered` got an explicit response
    in time; `lost` are inputs the stack accepted and then dropped; `wrong` are answers
    that contradict what the input deserved; `dead` names nodes not running at the end."""

    drill: str
    injected: int = 0
    requests: int = 0
    answered: int = 0
    lost: int = 0
    wrong: int = 0
    dead: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    error: str = ''  # the drill could not be carried out
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return (
            not self.error
            and self.answered == self.requests
            and self.lost == 0
            and self.wrong == 0
            and not self.dead
        )

    def note(self, text: str) -> None:
        self.notes.append(text)

    def row(self) -> tuple[str, ...]:
        return (
            self.drill,
            str(self.injected),
            f'{self.answered}/{self.requests}',
            str(self.lost),
            str(self.wrong),
            'yes' if not self.dead else 'NO: ' + ', '.join(self.dead),
            'pass' if self.passed else ('ERROR' if self.error else 'FAIL'),
        )

    def to_dict(self) -> dict:
        return asdict(self) | {'passed': self.passed}


def table(results: list[DrillResult]) -> str:
    """A Markdown table, then each drill's notes and errors."""
    rows = [COLUMNS, *(r.row() for r in results)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]

    def line(cells) -> str:
        return '| ' + ' | '.join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + ' |'

    lines = [line(COLUMNS), '|' + '|'.join('-' * (w + 2) for w in widths) + '|']
    lines += [line(r.row()) for r in results]
    for result in results:
        details = ([f'error: {result.error}'] if result.error else []) + result.notes
        if details:
            lines.append(f'\n{result.drill} ({result.seconds:.0f} s):')
            lines += [f'  - {d}' for d in details]
    return '\n'.join(lines)


def to_json(results: list[DrillResult]) -> str:
    return json.dumps(
        {'passed': all(r.passed for r in results), 'drills': [r.to_dict() for r in results]},
        indent=1,
    )
