# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The test-only stand-ins of nav2_msgs and tf2_msgs never reach a build of the repository:
colcon must not discover them, or a plain `colcon build` on a robot would install fake
message packages next to (or instead of) the real ones."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from waymark_testing import standins

ROOT = Path(__file__).resolve().parents[1]
STANDINS = {'nav2_msgs', 'tf2_msgs'}


def discovered(base: Path) -> set[str]:
    colcon = shutil.which('colcon', path=str(Path(sys.prefix) / 'bin'))
    assert colcon is not None, 'colcon not found: run scripts/bootstrap.sh'
    done = subprocess.run(
        [colcon, 'list', '--base-paths', str(base), '--names-only'],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return set(done.stdout.split())


def test_a_colcon_discovery_of_the_repository_finds_waymark_and_no_stand_in():
    found = discovered(ROOT)
    assert {'waymark', 'waymark_ros', 'waymark_interfaces'} <= found
    assert not found & STANDINS


def test_the_stand_ins_are_packages_only_the_ignore_marker_hides(tmp_path):
    """The check above can fail: without the marker, colcon finds both stand-ins."""
    assert (standins.SOURCES / 'COLCON_IGNORE').is_file()
    copy = tmp_path / 'standins'
    shutil.copytree(standins.SOURCES, copy)
    (copy / 'COLCON_IGNORE').unlink()
    assert discovered(copy) == STANDINS


def test_an_unknown_stand_in_is_refused():
    with pytest.raises(ValueError, match="no stand-in 'sensor_msgs'"):
        standins.build('sensor_msgs')
