# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Message packages that are not on PyPI, as test-only stand-ins (waymark_testing.standins): Nav2
played in-process for the navigator's nav2 backend tests, and tf2_msgs for poses from TF."""

from __future__ import annotations

import pytest


def _standin(package: str):
    from waymark_testing import standins

    prefix = standins.build(package)
    standins.load(prefix, package)
    return prefix


def _use_in_children(prefix, monkeypatch) -> None:
    """Node processes started during the test find the stand-in."""
    from waymark_testing import standins

    for key, value in standins.child_environment(prefix).items():
        monkeypatch.setenv(key, value)


@pytest.fixture(scope='session')
def standin():
    """The stand-in nav2_msgs, built (once) and loaded into this process."""
    return _standin('nav2_msgs')


@pytest.fixture
def nav2_env(standin, monkeypatch):
    _use_in_children(standin, monkeypatch)


@pytest.fixture(scope='session')
def tf2_standin():
    """The stand-in tf2_msgs, built (once) and loaded into this process."""
    return _standin('tf2_msgs')


@pytest.fixture
def tf2_env(tf2_standin, monkeypatch):
    _use_in_children(tf2_standin, monkeypatch)


@pytest.fixture
def nav2(ros, nav2_env):
    """A NavigateToPose server that also plays the robot (waymark_testing.navigation_worlds)."""
    from nav2_msgs.action import NavigateToPose

    from waymark_testing.navigation_worlds import Nav2Stub

    stub = Nav2Stub(ros.context, NavigateToPose)
    yield stub
    stub.close()
