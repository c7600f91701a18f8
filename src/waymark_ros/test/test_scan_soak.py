# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The scan soak's command line: bad sizes are refused before anything starts."""

from __future__ import annotations

import pytest

from waymark_ros.tools import scan_soak


@pytest.mark.parametrize(
    'words', [['--sim-minutes', '0'], ['--rss-every', '-1'], ['--rate-hz', '0']]
)
def test_bad_sizes_are_refused_with_a_usage_line(words, capsys):
    with pytest.raises(SystemExit) as exit_:
        scan_soak.main(words)
    assert exit_.value.code == 2
    assert 'need --sim-minutes > 0' in capsys.readouterr().err


def test_the_table_has_a_row_per_reading():
    result = {
        'scans': 18000,
        'rate_hz': 20.0,
        'integrated': 17990,
        'wall_s': 900.0,
        'rss': [(0.0, 200.0, 200.0), (5.0, 260.0, 300.0)],
        'exit_code': 0,
    }
    text = scan_soak.render(result)
    assert '18000 scans published, at 20 Hz, 17990 integrated' in text
    assert text.splitlines()[-2:] == ['| 0.0 | 200 | 200 |', '| 5.0 | 260 | 300 |']
