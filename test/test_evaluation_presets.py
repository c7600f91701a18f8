# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Evaluating bags shaped as the sensor presets record them: each evaluates with its
--preset to memory of located frames, the same over DDS as direct; where the camera
publishes depth, keyframes carry it and signs are located by it; a bag whose poses are in
another frame than the one expected fails with a reason that names the fix."""

from __future__ import annotations

import json
import math
import shutil
import statistics
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from rosbags.highlevel import AnyReader
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore

from waymark.evaluation import harness
from waymark.evaluation.harness import EvaluationConfig, open_memory, run
from waymark.evaluation.questions import Question, QuestionSet, load_questions, save_questions
from waymark.localisation.estimate import DEPTH
from waymark.memory.search_query import Mode, SearchQuery
from waymark.sim.bag import BAG_VERSION, DEPTH_TOPIC, GROUND_TRUTH_FILE, write_bag
from waymark.sim.world import build_demo_world
from waymark_ros.tools.evaluate import build_over_dds

pytestmark = pytest.mark.dds

PRESETS = Path(__file__).resolve().parents[1] / 'config' / 'sensors'
WIDTH, HFOV_DEG = 640, 90.0  # write_bag's defaults
TYPESTORE = get_typestore(Stores.ROS2_JAZZY)


@dataclass(frozen=True)
class Shape:
    """How a robot with a preset records: topic names, pose message, frame."""

    image_topic: str
    pose_topic: str
    pose_type: str  # 'nav_msgs/msg/Odometry' or 'geometry_msgs/msg/PoseStamped'
    frame: str
    camera_info: str = ''  # CameraInfo topic, written with every image; '' for none
    depth_topic: str = ''  # depth image topic, written with every image; '' for none
    depth_encoding: str = '32FC1'  # float metres (ZED) or '16UC1' millimetres (RealSense)


ZED = Shape(
    '/zed/zed_node/rgb/color/rect/image/compressed',
    '/zed/zed_node/pose',
    'geometry_msgs/msg/PoseStamped',
    'map',
    camera_info='/zed/zed_node/rgb/color/rect/camera_info',
    depth_topic='/zed/zed_node/depth/depth_registered',
)
FAST_LIO = Shape('/camera/image/compressed', '/Odometry', 'nav_msgs/msg/Odometry', 'camera_init')
REALSENSE = Shape(
    '/camera/camera/color/image_raw/compressed',
    '/Odometry',
    'nav_msgs/msg/Odometry',
    'camera_init',
    camera_info='/camera/camera/color/camera_info',
    depth_topic='/camera/camera/aligned_depth_to_color/image_raw',
    depth_encoding='16UC1',
)


def reshape(source: Path, target: Path, shape: Shape) -> Path:
    """The simulated bag as a robot with `shape` records it (same stamps and contents)."""
    types = TYPESTORE.types
    with (
        AnyReader([source]) as reader,
        Writer(target, version=BAG_VERSION, storage_plugin=StoragePlugin.MCAP) as out,
    ):
        image = out.add_connection(
            shape.image_topic, 'sensor_msgs/msg/CompressedImage', typestore=TYPESTORE
        )
        pose = out.add_connection(shape.pose_topic, shape.pose_type, typestore=TYPESTORE)
        info = (
            out.add_connection(shape.camera_info, 'sensor_msgs/msg/CameraInfo', typestore=TYPESTORE)
            if shape.camera_info
            else None
        )
        depth = (
            out.add_connection(shape.depth_topic, 'sensor_msgs/msg/Image', typestore=TYPESTORE)
            if shape.depth_topic
            else None
        )
        for connection, stamp, raw in reader.messages():
            msg = reader.deserialize(raw, connection.msgtype)
            if connection.msgtype == 'nav_msgs/msg/Odometry':
                msg.header.frame_id = shape.frame
                if shape.pose_type == 'geometry_msgs/msg/PoseStamped':
                    msg = types[shape.pose_type](header=msg.header, pose=msg.pose.pose)
                out.write(pose, stamp, TYPESTORE.serialize_cdr(msg, shape.pose_type))
            elif connection.msgtype == 'sensor_msgs/msg/CompressedImage':
                kind = connection.msgtype
                out.write(image, stamp, TYPESTORE.serialize_cdr(msg, kind))
                if info is not None:
                    out.write(info, stamp, TYPESTORE.serialize_cdr(_camera_info(msg), info.msgtype))
            elif connection.topic == DEPTH_TOPIC[0] and depth is not None:
                msg = _encoded_depth(msg, shape.depth_encoding)
                out.write(depth, stamp, TYPESTORE.serialize_cdr(msg, depth.msgtype))
    shutil.copy(source / GROUND_TRUTH_FILE, target / GROUND_TRUTH_FILE)
    return target


def _encoded_depth(image, encoding: str):
    """The simulation's float metres as the driver encodes them: as they are (ZED), or
    whole millimetres with 0 where nothing was measured (RealSense)."""
    if encoding == '32FC1':
        return image
    metres = np.frombuffer(bytes(image.data), dtype='<f4').reshape(image.height, image.width)
    with np.errstate(invalid='ignore'):
        millimetres = np.where(np.isfinite(metres), np.round(metres * 1000.0), 0.0)
    pixels = np.clip(millimetres, 0, np.iinfo(np.uint16).max).astype('<u2')
    return TYPESTORE.types['sensor_msgs/msg/Image'](
        header=image.header,
        height=image.height,
        width=image.width,
        encoding=encoding,
        is_bigendian=0,
        step=2 * image.width,
        data=pixels.view(np.uint8).reshape(-1),
    )


def _camera_info(image):
    height = WIDTH * 3 // 4
    focal = 0.5 * WIDTH / math.tan(math.radians(HFOV_DEG) / 2)
    k = np.array([focal, 0, WIDTH / 2, 0, focal, height / 2, 0, 0, 1], dtype=np.float64)
    return TYPESTORE.types['sensor_msgs/msg/CameraInfo'](
        header=image.header,
        height=height,
        width=WIDTH,
        distortion_model='plumb_bob',
        d=np.zeros(5),
        k=k,
        r=np.eye(3).reshape(-1),
        p=np.array([focal, 0, WIDTH / 2, 0, 0, focal, height / 2, 0, 0, 0, 1, 0], dtype=float),
        binning_x=0,
        binning_y=0,
        roi=TYPESTORE.types['sensor_msgs/msg/RegionOfInterest'](
            x_offset=0, y_offset=0, height=0, width=0, do_rectify=False
        ),
    )


@pytest.fixture(scope='module')
def recording(tmp_path_factory):
    """A 40 s tour of a small world, and a question per sign seen."""
    root = tmp_path_factory.mktemp('presets')
    info = write_bag(
        build_demo_world(seed=2),
        root / 'sim',
        camera_rate_hz=5.0,
        max_duration_s=40,
        depth_camera=True,
    )
    truth = json.loads(info.ground_truth.read_text())
    seen = {v['text'] for v in truth['sign_views']}
    questions = [
        Question(
            id=f'sign-{i}',
            category='basic',
            question=f'Where is the {sign["text"].lower()}?',
            answer_type='position',
            position=tuple(sign['position']),
        )
        for i, sign in enumerate(truth['world']['signs'])
        if sign['text'] in seen
    ]
    assert questions
    path = root / 'questions.json'
    save_questions(QuestionSet(world='demo-2', questions=questions), path)
    return root, info.path, path


def config(bag: Path, questions: Path, out: Path, **options) -> EvaluationConfig:
    return EvaluationConfig(
        bag,
        questions,
        out,
        answerers=('embedder-only',),
        progress=False,
        preset_dir=PRESETS,
        **options,
    )


def frames(settings: EvaluationConfig) -> list[tuple]:
    memory = open_memory(settings, settings.out / 'memory')
    try:
        hits = memory.search(SearchQuery(Mode.TIME, memory.store.max_k))
        return [
            (
                h.record.index,
                h.record.stamp_ns,
                round(h.record.x, 6),
                round(h.record.y, 6),
                round(h.record.yaw, 6),
                h.record.pose_valid,
                h.record.map_epoch,
            )
            for h in hits
        ]
    finally:
        memory.store.close()


@pytest.mark.parametrize(
    ('shape', 'options', 'frame_from'),
    [
        (ZED, {'presets': ('zed2i',), 'pose_topic': '/zed/zed_node/pose'}, 'preset zed2i'),
        (FAST_LIO, {'presets': ('fast_lio_mid360',)}, 'preset fast_lio_mid360'),
        (REALSENSE, {'presets': ('realsense_d455',)}, 'preset realsense_d455'),
    ],
    ids=['zed2i', 'fast_lio', 'realsense'],
)
def test_each_preset_evaluates_to_located_memory_direct_and_over_dds(
    recording, tmp_path, shape, options, frame_from
):
    _root, sim, questions = recording
    bag = reshape(sim, tmp_path / 'bag', shape)
    direct = config(bag, questions, tmp_path / 'direct', **options)
    report = run(direct)
    dds = config(bag, questions, tmp_path / 'dds', **options)
    report_dds = run(dds, build_over_dds)

    sensors, ingest = report['sensors'], report['ingest']
    assert sensors['map_frame'] == shape.frame and sensors['map_frame_from'] == frame_from
    assert (sensors['image_topic'], sensors['pose_topic']) == (shape.image_topic, shape.pose_topic)
    # The preset's extrinsic, not the simulation's ground truth.
    preset = harness.read_presets([PRESETS / f'{options["presets"][0]}.yaml'])
    assert sensors['camera_extrinsic'] == preset['camera_extrinsic']
    assert ingest['poses_rejected'] == {} and ingest['poses'] == ingest['poses_accepted'] > 0
    assert ingest['keyframes_pose_valid'] == ingest['keyframes'] > 10
    if shape.camera_info:
        assert sensors['intrinsics']['source'] == f'camera_info {shape.camera_info}'
        assert sensors['intrinsics']['hfov_deg'] == pytest.approx(HFOV_DEG)
    elif 'camera_hfov_deg' in preset:  # a camera preset's data-sheet figure
        assert sensors['intrinsics']['source'] == f'preset {options["presets"][0]}'
        assert sensors['intrinsics']['hfov_deg'] == preset['camera_hfov_deg'] > 0
    else:  # a pose-only preset names no camera: the simulation's ground truth does
        assert sensors['intrinsics']['source'] == "the bag's ground truth"
    assert report['answerers']['embedder-only']['overall']['answered'] > 0
    if shape.depth_topic:  # the preset's depth topic, which the driver publishes
        assert (sensors['depth_topic'], sensors['depth_topic_from']) == (
            shape.depth_topic,
            frame_from,
        )
        assert ingest['keyframes_with_depth'] == ingest['keyframes']
        assert_signs_located_by_depth(report, questions)
    else:
        assert sensors['depth_topic'] == '' and ingest['keyframes_with_depth'] == 0

    located = frames(direct)
    assert len(located) == report['memory']['frames'] == ingest['keyframes']
    assert all(valid for *_, valid, _epoch in located)
    assert located == frames(dds)
    # Over DDS an image can come before the depth stream has begun (capture holds nothing
    # up for a stream not yet heard from) or outwait a late depth image: most are ranged.
    ingest_dds = dict(report_dds['ingest'])
    ranged, ranged_dds = ingest['keyframes_with_depth'], ingest_dds.pop('keyframes_with_depth')
    assert ranged // 2 < ranged_dds <= ranged if ranged else ranged_dds == 0
    # The direct build measures the clocks from the bag's arrival times; a replay over DDS
    # runs faster than recorded, where arrival times cannot tell (nothing is decided).
    assert ingest['clocks_disagree'] is False and ingest_dds['clocks_disagree'] is not True
    assert ingest['images_clock_mismatch'] == ingest_dds['images_clock_mismatch'] == 0
    clocks = {key for key in ingest if key.startswith('clock')} | {'keyframes_with_depth'}
    assert {k: v for k, v in ingest_dds.items() if k not in clocks} == {
        k: v for k, v in ingest.items() if k not in clocks
    }
    assert report_dds['sensors'] == sensors
    assert '## Ingest' in (direct.out / 'report.md').read_text()


def assert_signs_located_by_depth(report: dict, questions: Path) -> None:
    """Sign answers are located by depth, nearer the sign than where the camera stood."""
    signs = {q.id: q.position for q in load_questions(questions).questions}
    rows = report['answerers']['embedder-only']['predictions']
    ranged = [r for r in rows if r['answered'] and r['target_method'] == DEPTH]
    assert ranged and len(ranged) == sum(r['answered'] for r in rows), rows
    target = [math.dist(r['target'][:2], signs[r['question_id']][:2]) for r in ranged]
    viewpoint = [math.dist(r['viewpoint'][:2], signs[r['question_id']][:2]) for r in ranged]
    assert statistics.median(target) < statistics.median(viewpoint), (target, viewpoint)


def test_without_a_preset_the_map_frame_is_the_poses_frame(recording, tmp_path):
    _root, sim, questions = recording
    bag = reshape(sim, tmp_path / 'bag', FAST_LIO)
    report = run(config(bag, questions, tmp_path / 'out'))
    assert report['sensors']['map_frame'] == 'camera_init'
    assert report['sensors']['map_frame_from'].startswith('bag')
    assert report['sensors']['camera_extrinsic_from'] == "the bag's ground truth"
    assert report['ingest']['keyframes_pose_valid'] == report['ingest']['keyframes'] > 10


@pytest.mark.parametrize('mode', ['direct', 'dds'])
def test_poses_in_an_unexpected_frame_fail_with_the_fix(recording, tmp_path, capsys, mode):
    _root, sim, questions = recording
    bag = reshape(sim, tmp_path / 'bag', FAST_LIO)
    out = tmp_path / 'out'
    argv = [str(bag), str(questions), '--out', str(out), '--no-progress', '--mode', mode]
    argv += ['--preset', str(PRESETS / 'zed2i.yaml'), '--pose-topic', '/Odometry']
    argv += ['--image-topic', FAST_LIO.image_topic, '--answerers', 'embedder-only']
    main = harness.main if mode == 'direct' else _dds_main
    assert main(argv) == 1
    captured = capsys.readouterr()
    # One line (after whatever the models log while loading), the last.
    error = [line for line in captured.err.splitlines() if line.startswith('waymark evaluate')]
    assert len(error) == 1 and captured.err.rstrip().endswith(error[0]), captured.err
    assert "in frame 'camera_init', not the map frame 'map'" in error[0]
    assert '--map-frame camera_init' in error[0]
    assert 'map frame: map (from preset' in captured.out  # the ingest summary, printed
    assert not (out / 'report.json').exists()

    # The fix it names works, on the memory the failed run built being replaced.
    assert main([*argv, '--map-frame', 'camera_init', '--resume']) == 0
    report = json.loads((out / 'report.json').read_text())
    assert report['sensors']['map_frame_from'] == 'flag --map-frame'
    assert report['ingest']['keyframes_pose_valid'] == report['ingest']['keyframes'] > 10


def test_memory_that_answers_nothing_fails_instead_of_a_report_of_zeros(recording, tmp_path):
    _root, sim, questions = recording
    # Without OCR and an image model, frames have no view a question can be searched in.
    settings = config(sim, questions, tmp_path / 'out', ocr=False)
    with pytest.raises(harness.EvaluationError, match=r'none of the \d+ questions was answered'):
        run(settings)
    assert not (settings.out / 'report.json').exists()


def _dds_main(argv):
    from waymark_ros.tools.evaluate import main

    return main(argv)


def test_a_preset_that_does_not_exist_names_those_that_do(recording, tmp_path, capsys, monkeypatch):
    _root, sim, questions = recording
    monkeypatch.chdir(PRESETS.parents[1])  # names are looked up in config/sensors
    argv = [str(sim), str(questions), '--out', str(tmp_path / 'out'), '--preset', 'zed3']
    assert harness.main([*argv, '--no-progress']) == 2
    error = capsys.readouterr().err
    assert "no sensor preset 'zed3'" in error and 'fast_lio_mid360' in error
