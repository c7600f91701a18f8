# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""One OpenCV wheel only: its variants all install the same `cv2` package, so a second one
silently overwrites the first's files and whichever was installed last wins (see
requirements/no-deps.txt)."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import cv2

OPENCV_WHEELS = {
    'opencv-python',
    'opencv-python-headless',
    'opencv-contrib-python',
    'opencv-contrib-python-headless',
}


def installed_opencv_wheels() -> list[importlib.metadata.Distribution]:
    found = {}
    for distribution in importlib.metadata.distributions():
        name = re.sub(r'[-_.]+', '-', distribution.metadata['Name'] or '').lower()
        if name in OPENCV_WHEELS:
            found[name] = distribution
    return [found[name] for name in sorted(found)]


def test_exactly_one_opencv_wheel_is_installed():
    names = [distribution.metadata['Name'] for distribution in installed_opencv_wheels()]
    assert names == ['opencv-python-headless']


def test_cv2_comes_from_that_wheel():
    wheels = installed_opencv_wheels()
    assert len(wheels) == 1, [wheel.metadata['Name'] for wheel in wheels]
    wheel = wheels[0]
    files = {Path(wheel.locate_file(path)).resolve() for path in wheel.files or ()}
    assert Path(cv2.__file__).resolve() in files
