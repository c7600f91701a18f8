# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Nav2 played in-process, for the navigator's nav2 backend tests."""

from __future__ import annotations

import pytest


@pytest.fixture(scope='session')
def standin():
    """The stand-in nav2_msgs, built (once) and loaded into this process."""
    from support import nav2_standin

    prefix = nav2_standin.build()
    nav2_standin.load(prefix)
    return prefix


@pytest.fixture
def nav2_env(standin, monkeypatch):
    """Node processes started during the test find the stand-in."""
    from support import nav2_standin

    for key, value in nav2_standin.child_environment(standin).items():
        monkeypatch.setenv(key, value)


@pytest.fixture
def nav2(ros, nav2_env):
    """A NavigateToPose server that also plays the robot (support.navigation_worlds)."""
    from nav2_msgs.action import NavigateToPose
    from support.navigation_worlds import Nav2Stub

    stub = Nav2Stub(ros.context, NavigateToPose)
    yield stub
    stub.close()
