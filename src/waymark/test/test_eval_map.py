# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""map.png on a recorded rosbag2 read as a real one (no ground truth): the trajectory of
its poses over its occupancy map when it has one, framed on the trajectory otherwise."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.colors import to_rgb
from PIL import Image

from waymark.evaluation.bag_map import plot_extent, read_background
from waymark.evaluation.questions import Question, QuestionSet
from waymark.evaluation.report import TRAJECTORY_COLOR, _table, plot_map
from waymark.sim.bag import write_bag
from waymark.sim.world import build_demo_world

QUESTIONS = QuestionSet(
    world='demo',
    questions=[
        Question(
            id='where',
            category='basic',
            question='Where is it?',
            answer_type='position',
            position=(1.0, 1.0, 0.0),
        )
    ],
)
REPORT = {
    'answerers': {
        'embedder-only': {'predictions': [{'question_id': 'where', 'goal': [2.0, 1.5, 0.0]}]}
    }
}


def _bag(root, static_topics: bool):
    return write_bag(
        build_demo_world(seed=0),
        root / ('with_map' if static_topics else 'without_map'),
        camera_rate_hz=1.0,
        width=64,
        height=48,
        static_topics=static_topics,
        max_duration_s=8,
    ).path


def _pixels(path, colour: str) -> int:
    pixels = np.asarray(Image.open(path).convert('RGB'), dtype=float)
    target = np.array(to_rgb(colour)) * 255
    return int(np.sum(np.all(np.abs(pixels - target) < 12, axis=-1)))


@pytest.mark.parametrize('static_topics', [True, False])
def test_map_png_of_a_real_bag(tmp_path, static_topics):
    bag = _bag(tmp_path, static_topics)
    background = read_background(bag, '/odom')
    assert len(background.trajectory) > 50  # 20 Hz odometry for 8 s
    assert (background.occupancy is not None) == static_topics

    path, limits = plot_map(tmp_path / 'map.png', REPORT, QUESTIONS, None, background)
    assert path.is_file() and limits is not None
    x0, x1, y0, y1 = limits
    xs, ys = background.trajectory[:, 0], background.trajectory[:, 1]
    assert x0 < xs.min() and xs.max() < x1 and y0 < ys.min() and ys.max() < y1
    assert _pixels(path, TRAJECTORY_COLOR) > 30
    if static_topics:
        mx0, mx1, my0, my1 = background.occupancy.extent
        assert x0 <= mx0 and mx1 <= x1 and y0 <= my0 and my1 <= y1
        # Occupied cells (walls) are drawn black; without the map there are none.
        assert _pixels(path, '#000000') > 1000
    else:
        # Framed on the trajectory: a margin, not the whole world.
        assert x1 - x0 < (xs.max() - xs.min()) + (y1 - y0) + 5.0


def test_the_map_draws_each_located_target_and_its_miss(tmp_path):
    report = {
        'answerers': {
            'embedder-only': {
                'predictions': [
                    {
                        'question_id': 'where',
                        'goal': [2.0, 1.5, 0.0],
                        'target': [1.2, 1.1, 0.0],
                        'viewpoint': [3.0, 2.0, 0.0],
                    }
                ]
            }
        }
    }
    plain, _ = plot_map(tmp_path / 'plain.png', REPORT, QUESTIONS, None)
    located, _ = plot_map(tmp_path / 'located.png', report, QUESTIONS, None)
    colour = '#1f77b4'  # the first answerer's: dots, the target's cross and its lines
    assert _pixels(located, colour) > _pixels(plain, colour)


def test_the_report_tables_show_the_target_error_and_the_methods():
    summary = {
        'questions': 2,
        'answered': 2,
        'success_at': {'1': 0.5},
        'mean_position_error_m': 1.0,
        'median_position_error_m': 1.0,
        'median_target_error_m': 0.42,
        'target_methods': {'viewpoint': 1, 'triangulated': 3},
        'mean_time_error_s': None,
        'yes_no_accuracy': None,
        'retrieval_efficiency': None,
        'mean_latency_s': 0.1,
        'llm_calls_per_query': 0.0,
        'tokens_per_query': 0.0,
        'fallback_rate': 1.0,
    }
    rows = _table({'answerers': {'embedder-only': {'overall': summary}}}, lambda r: r['overall'])
    header, _, row = rows
    cells = dict(zip(header.split('|'), row.split('|'), strict=True))
    assert cells[' target err (m) '].strip() == '0.42'
    assert cells[' located by '].strip() == 'triangulated 3, viewpoint 1'


def test_the_extent_covers_map_and_points_with_a_margin():
    points = np.array([[0.0, 0.0], [10.0, 4.0]])
    assert plot_extent(None, points) == (-1.0, 11.0, -1.0, 5.0)  # 5% of 10 m < 1 m
    assert plot_extent(None, np.array([[0.0, 0.0], [40.0, 0.0]])) == (-2.0, 42.0, -2.0, 2.0)
    assert plot_extent(None, np.empty((0, 2))) is None
