# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""docs/parameters.md is what the generator writes from the nodes' settings."""

from __future__ import annotations

from pathlib import Path

from waymark_ros.tools.parameters_doc import render

DOC = Path(__file__).resolve().parents[1] / 'docs' / 'parameters.md'


def test_the_parameter_reference_matches_the_settings():
    assert DOC.read_text() == render(), (
        'docs/parameters.md is out of date: run python -m waymark_ros.tools.parameters_doc'
    )
