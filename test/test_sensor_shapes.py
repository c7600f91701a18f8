# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Every sensor shape the suite records new families in (raw and compressed images;
Odometry, PoseStamped and PoseWithCovarianceStamped; drivers' rates) evaluates to memory
of located frames, with the topics found in the bag."""

from __future__ import annotations

import json

import pytest

from waymark.evaluation.harness import EvaluationConfig, run
from waymark.evaluation.questions import Question, QuestionSet, save_questions
from waymark.sim.bag import write_bag
from waymark.sim.generate import generate_world
from waymark.sim.shapes import SHAPES


@pytest.mark.parametrize('shape', SHAPES, ids=[s.name for s in SHAPES])
def test_each_sensor_shape_evaluates_to_located_memory(shape, tmp_path):
    world = generate_world(0, 'small', 'corridor')
    info = write_bag(
        world, tmp_path / 'bag', width=160, height=120, max_duration_s=12.0, **shape.bag_options()
    )
    assert info.topics == {
        shape.pose_topic: {
            'odometry': 'nav_msgs/msg/Odometry',
            'pose_stamped': 'geometry_msgs/msg/PoseStamped',
            'pose_with_covariance': 'geometry_msgs/msg/PoseWithCovarianceStamped',
        }[shape.pose_type],
        shape.image_topic: 'sensor_msgs/msg/Image'
        if shape.image_format == 'raw'
        else 'sensor_msgs/msg/CompressedImage',
    }
    assert info.message_counts[shape.pose_topic] == pytest.approx(12 * shape.odom_rate_hz, abs=2)
    truth = json.loads(info.ground_truth.read_text())
    assert truth['family'] == 'corridor' and truth['odometry']['topic'] == shape.pose_topic
    questions = tmp_path / 'questions.json'
    sign = truth['world']['signs'][0]
    save_questions(
        QuestionSet(
            world=world.name,
            questions=[
                Question(
                    id='sign',
                    category='basic',
                    question=f'Where is the {sign["text"].lower()}?',
                    answer_type='position',
                    position=tuple(sign['position']),
                )
            ],
        ),
        questions,
    )
    config = EvaluationConfig(
        info.path, questions, tmp_path / 'eval', answerers=('embedder-only',), progress=False
    )
    report = run(config)
    sensors, ingest = report['sensors'], report['ingest']
    assert (sensors['image_topic'], sensors['pose_topic']) == (shape.image_topic, shape.pose_topic)
    assert ingest['poses_rejected'] == {} and ingest['poses'] == ingest['poses_accepted'] > 0
    assert ingest['keyframes_pose_valid'] == ingest['keyframes'] > 0
