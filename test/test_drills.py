# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The fault drills of `python -m waymark_ros.tools.drill`, reduced to fit CI: one kill -9 per
node during a short replay, two questions per LLM fault, the refused goals, the bad
inputs, the safety chain's stops while driving and a task node killed mid-task, each on
a fresh stack. A drill passes only with nothing lost, nothing answered wrongly, every
request answered and every node alive at the end.

"""

from __future__ import annotations

import os

import pytest

from waymark_ros.tools.drill.drills import Settings
from waymark_ros.tools.drill.report import table
from waymark_ros.tools.drill.run import run_drill

pytestmark = pytest.mark.dds

CI = Settings(
    keyframes=20, kills=1, replay_rate=2.0, llm_queries=2, deadline_s=10.0, e_stop_goals=2
)


def drill(name: str, tmp_path) -> None:
    result = run_drill(name, CI, tmp_path, int(os.environ['ROS_DOMAIN_ID']))
    assert result.passed, '\n' + table([result])


@pytest.mark.parametrize(
    'name',
    [
        'kill-capture',
        'kill-memory',
        'kill-reasoner',
        'kill-navigator',
    ],
)
def test_kill_9_during_a_replay(name, tmp_path):
    drill(name, tmp_path)


@pytest.mark.parametrize('name', ['llm-hang', 'llm-fail', 'llm-garbage'])
def test_llm_faults_answer_every_query_within_its_deadline(name, tmp_path):
    drill(name, tmp_path)


def test_refused_goals_before_and_after_a_reached_one(tmp_path):
    drill('refused-goals', tmp_path)


def test_bad_inputs_get_a_clear_error_and_lose_nothing(tmp_path):
    drill('bad-inputs', tmp_path)


@pytest.mark.parametrize(
    'name',
    [
        'kill-navigator-driving',
        'kill-safety-driving',
        'kill-all-driving',
        'e-stop-driving',
        'ctrl-c-driving',
    ],
)
def test_the_base_stops_in_time_when_the_chain_breaks_while_driving(name, tmp_path):
    drill(name, tmp_path)


def test_a_task_cut_short_by_kill_9_is_recorded_interrupted_and_the_next_one_runs(tmp_path):
    drill('kill-task-node-mid-task', tmp_path)


def test_a_reasoner_killed_with_reflections_waiting_loses_no_acknowledged_outcome(tmp_path):
    drill('kill-reasoner-mid-reflections', tmp_path)


def test_a_clock_offset_is_named_within_seconds_and_misplaces_no_keyframe(tmp_path):
    drill('clock-offset', tmp_path)


def test_a_map_message_of_50_million_points_is_refused_and_the_navigator_drives_on(tmp_path):
    drill('huge-map', tmp_path)
