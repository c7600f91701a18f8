# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""`python -m waymark evaluate`: a rosbag2 and a question file in, a scored report out.

Memory holds frames and, unless `segment_window_s` is 0, segments (BinTrack windows);
the standard answerers search each level with all its views and with each view alone.
Given an OpenAI-compatible LLM server (`--llm-url`), the reasoning agent adds its rows:
`agent` (Binary Tracking offered, when memory has segments) and `agent/no-bt`. With
`--verifier-url` (a server whose model takes images; `--verifier-url same` is the LLM's)
the agent verifies its answer once per question, as on the robot. With
`--captioner-url` (a VLM's OpenAI-compatible server) segments are also captioned, as
memory_node captions them, and searched by their captions too.

Runs are resumable: memory is built once (an interrupted build, or one made by another
memory format or with other settings, is wiped and redone, never half used), each answer
is appended to a per-answerer JSON-lines file as it comes, and a rerun with --resume skips
what is done (--overwrite starts over; without either, an existing output is refused).
The report is written last and atomically, with `complete: true`; a report without it is
not a result.

The sensors (topics, map frame, camera extrinsic) come from flags, else from sensor presets
(the robot's config/sensors/*.yaml), else from the bag; the report says which. Keyframes
carry depth samples when the presets (or --depth-topic) name a depth topic the bag has. A build
where most keyframes have no valid pose, or an evaluation where nothing was answered, is
an error naming the likely fix, not a report of zeros.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import cv2
from rosbags.highlevel import AnyReader
from tqdm import tqdm

from waymark.agent.agent import AgentConfig
from waymark.agent.bintrack import BinTrackParams
from waymark.agent.llm import LLMConfig
from waymark.agent.reply_cache import ReplyCache, file_sha256
from waymark.agent.spoken_time import time_zone
from waymark.agent.verifier import VerifierConfig
from waymark.cli import (
    ArgumentParser,
    UsageError,
    add_output_flags,
    add_setting_options,
    check_output_dir,
    check_positive,
    clear_output_dir,
    fail,
)
from waymark.evaluation.answerers import (
    RANDOM_ENTRY,
    Answerer,
    AnswererError,
    EmbedderOnlyAnswerer,
    RandomEntryAnswerer,
    agent_name,
    check_answerer_name,
    parse_agent_name,
    parse_embedder_name,
    standard_answerers,
)
from waymark.evaluation.bag_map import BagBackground, read_background
from waymark.evaluation.ingest import (
    BagTopicError,
    find_topics,
    ingest_bag,
    ingest_problem,
    summarize,
    summary_lines,
)
from waymark.evaluation.metrics import POSITION_METRICS, Prediction, evaluate
from waymark.evaluation.questions import QuestionFileError, QuestionSet, load_questions
from waymark.evaluation.report import markdown, plot_all, write_json_atomically
from waymark.evaluation.sensors import (
    SensorError,
    Sensors,
    camera_intrinsics,
    capture_config,
    choose_depth_topic,
    choose_map_frame,
    pose_frames,
    preset_path,
    read_presets,
)
from waymark.geometry import Pose
from waymark.memory import factory
from waymark.memory.entries import SEGMENT
from waymark.memory.factory import MemoryConfig, load_models
from waymark.memory.ingest.segments import DEFAULT_WINDOW_S
from waymark.memory.service import MemoryService
from waymark.memory.views.captioner import CAPTION_VIEWS, CaptionerConfig
from waymark.memory.views.registry import ViewSettings
from waymark.parameters.memory import CaptionerParameters
from waymark.parameters.reasoner import AgentParameters, LLMParameters

INGESTED = 'ingested.json'
SESSION = 'eval'  # the one session every build mode records into, so builds compare
PRESET_DIR = Path('config/sensors')  # the robot's sensor presets, from the repository root
# Version of what a build writes under memory/: a build marked with another one (or none)
# is rebuilt, not opened. 2: frames and segments in the two-level store. 3: frames carry
# sightings (camera model, text boxes) for target localisation. 4: frames carry the depth
# samples of the depth topic, when the bag has one.
MEMORY_FORMAT = 4
# --verifier-url naming the planner's own server (a VLM verifying for itself).
VERIFIER_SAME_AS_LLM = 'same'

# Builds memory from config.bag into a data directory; returns a summary of the build.
MemoryBuilder = Callable[['EvaluationConfig', dict | None, Path], dict]


# Where the agent rows keep the model's replies between runs (temperature 0 only).
DEFAULT_REPLY_CACHE = Path.home() / '.cache' / 'waymark' / 'llm-replies'


@dataclasses.dataclass
class EvaluationConfig:
    bag: Path
    questions: Path
    out: Path
    answerers: tuple[str, ...] | None = None  # None: standard_answerers for what memory has
    position_metric: str = 'object'
    # x y z qx qy qz qw; None: the presets', else the bag's ground truth, else identity
    camera_extrinsic: tuple[float, ...] | None = None
    image_topic: str | None = None  # None: the presets', else the bag's only camera topic
    pose_topic: str | None = None  # None: the presets', else the bag's only pose topic
    presets: tuple[str, ...] = ()  # sensor preset names (in preset_dir) or paths; later win
    preset_dir: Path = PRESET_DIR
    map_frame: str | None = None  # None: the presets', else the frame of the bag's poses
    hfov_deg: float | None = None  # used only when the bag has no CameraInfo
    # None: the presets', else the one the bag's ground truth names; '': no depth
    depth_topic: str | None = None
    # Memory with a smaller share of keyframes with a valid pose is an error, not a result.
    min_valid_pose_share: float = 0.5
    image_model: str = ''
    text_model: str = 'default'
    ocr: bool = True
    segment_window_s: float = DEFAULT_WINDOW_S  # 0: frames only, no segments
    top_k: int = 5
    seed: int = 0
    progress: bool = True
    rate: float = 0.0  # replay speed when memory is built over DDS; 0: as fast as taken
    # The reasoning agent's rows, evaluated only when an LLM server is given.
    llm_url: str = ''  # base URL of an OpenAI-compatible server, ending in /v1
    llm_model: str = ''  # empty: the first model the server lists
    llm_timeout_s: float = LLMConfig.timeout_s
    agent_label: str = ''  # names the planner in the row names: agent[<label>]
    agent_steps: int = AgentConfig.max_steps
    agent_prefetch: int = AgentConfig.prefetch_hits
    # The served model's weights: their sha256 names the model in the report and keys the
    # reply cache, which is off without them.
    llm_model_file: Path | None = None
    reply_cache: Path | None = DEFAULT_REPLY_CACHE  # None: every request is sent
    bt_alpha: float = BinTrackParams.alpha
    bt_beta: float = BinTrackParams.beta
    bt_k_leaf: int = BinTrackParams.k_leaf
    time_zone: str = AgentConfig.time_zone  # the recording's clock: "at ten" is read in it
    # The verifier's OpenAI-compatible server ('' none; VERIFIER_SAME_AS_LLM: llm_url's).
    verifier_url: str = ''
    verifier_model: str = ''  # empty: the first model the server lists
    # The VLM that captions segments ('' none: memory without captions, as before).
    captioner_url: str = ''
    captioner_model: str = ''  # empty: the first model the server lists
    captioner_timeout_s: float = CaptionerConfig.timeout_s  # per caption request
    # How long the end of a build waits for the captions still queued; those left are
    # counted in the build summary, not waited for.
    caption_wait_s: float = 600.0


def run(config: EvaluationConfig, build: MemoryBuilder | None = None) -> dict:
    check_inputs(config)  # before memory is built, which loads models and takes a while
    config = with_captioner_model(config)
    questions = load_questions(config.questions)
    truth = _ground_truth(config.bag)
    created = not config.out.exists()
    config.out.mkdir(parents=True, exist_ok=True)
    try:
        memory, ingest = _memory(config, truth, build or build_direct)
    except (BagTopicError, SensorError, UsageError):
        if created:  # the bag's topics or sensors refused it: leave nothing behind
            shutil.rmtree(config.out, ignore_errors=True)
        raise
    try:
        problem = (
            ingest_problem(ingest['ingest'], ingest['sensors'], config.min_valid_pose_share)
            if 'ingest' in ingest
            else ''
        )
        if problem:
            raise EvaluationError(problem, ingest)
        results = {}
        for name in config.answerers or (*standard_answerers(memory), *agent_rows(memory, config)):
            answerer = _answerer(name, memory, config)
            predictions = _answer_all(answerer, questions, config)
            result = evaluate(questions.questions, predictions, config.position_metric)
            result['predictions'] = [_prediction_row(p) for p in predictions]
            results[answerer.name] = result
        if questions.questions and not any(r['overall']['answered'] for r in results.values()):
            raise EvaluationError(
                f'none of the {len(questions.questions)} questions was answered by any of '
                f'{", ".join(results)}, with {memory.store.count()} frames in memory; '
                f'see the ingest summary',
                ingest,
            )
        report = {
            'title': questions.world or config.bag.name,
            'bag': str(config.bag),
            'questions': len(questions.questions),
            'categories': sorted({q.category.value for q in questions.questions}),
            'position_metric': config.position_metric,
            'memory': {
                'entries': memory.store.count(),  # frames, as before segments existed
                'frames': memory.store.count(),
                'segments': memory.store.count(level=SEGMENT),
                'segment_window_s': config.segment_window_s,
                'keyframes': ingest['keyframes'],
                'ingest_s': ingest['seconds'],
                'mode': ingest['mode'],
                'views': memory.views,
                'segment_views': memory.store.views(SEGMENT),
            },
            'answerers': results,
        }
        if config.llm_url:  # the agent rows' model, by the hash of its weights when given
            report['model'] = {
                'name': config.llm_model,
                'file': str(config.llm_model_file) if config.llm_model_file else None,
                'sha256': model_sha256(config.llm_model_file) if config.llm_model_file else None,
            }
        if config.captioner_url:  # only then, so reports without captions stay as they were
            report['memory']['captioner'] = config.captioner_model
            report['memory']['captions'] = ingest.get('captions', {})
        if 'ingest' in ingest:
            report['sensors'], report['ingest'] = ingest['sensors'], ingest['ingest']
        report['plots'] = plot_all(
            config.out, report, questions, truth, _background(config, ingest)
        )
        report['complete'] = True
        write_json_atomically(config.out / 'report.json', report)
        (config.out / 'report.md').write_text(markdown(report))
        return report
    finally:
        close_memory(memory)


class EvaluationError(ValueError):
    """Memory or answers not worth a report; carries the build summary to show."""

    def __init__(self, message: str, build: dict | None = None) -> None:
        super().__init__(message)
        self.build = build or {}


def check_inputs(config: EvaluationConfig) -> None:
    """Every argument that can be checked without reading images or loading models:
    UsageError (or the question file's, a preset's or an answerer's own error) if wrong.
    The bag is the builder's to check (check_bag): a builder may not read one."""
    if not config.questions.is_file():
        raise UsageError(f'no question file at {config.questions}')
    load_questions(config.questions)
    for name, value, zero_ok in (
        ('--top-k', config.top_k, False),
        ('--segment-window', config.segment_window_s, True),
        ('--rate', config.rate, True),
        ('--llm-timeout', config.llm_timeout_s, False),
        ('--agent-steps', config.agent_steps, False),
    ):
        check_positive(name, value, zero_ok)
    try:
        time_zone(config.time_zone)
    except ValueError as error:
        raise UsageError(f'--time-zone: {error}') from error
    if config.llm_model_file is not None and not config.llm_model_file.is_file():
        raise UsageError(f'--llm-model-file: no file at {config.llm_model_file}')
    if config.hfov_deg is not None and not 0.0 < config.hfov_deg < 180.0:
        raise UsageError(f'--hfov must be between 0 and 180 degrees, not {config.hfov_deg:g}')
    if not 0.0 <= config.min_valid_pose_share <= 1.0:
        raise UsageError(
            f'--min-valid-poses must be in [0, 1], not {config.min_valid_pose_share:g}'
        )
    for name in config.presets:
        preset_path(name, config.preset_dir)
    if config.camera_extrinsic:
        try:
            Pose.checked(config.camera_extrinsic[:3], config.camera_extrinsic[3:])
        except ValueError as error:
            raise UsageError(f'--camera-extrinsic: {error}') from error
    for name in config.answerers or ():
        check_answerer_name(name)
        if parse_agent_name(name) is not None and not config.llm_url:
            raise AnswererError(f'the {name} row needs an LLM server (llm_url, --llm-url)')
    if config.llm_url:
        agent_config(config, search_between=True)
        agent_name(label=config.agent_label)
    elif config.verifier_url:
        raise UsageError('--verifier-url needs --llm-url: only the agent verifies')
    check_captioner(
        config.captioner_url,
        config.captioner_model,
        config.captioner_timeout_s,
        config.caption_wait_s,
    )
    if config.captioner_url:
        if config.segment_window_s == 0:
            raise UsageError('--captioner-url needs segments: captions are of segments')
        if not config.text_model:
            raise UsageError('--captioner-url needs a text model: it embeds the captions')


def check_captioner(
    captioner_url: str, captioner_model: str, captioner_timeout_s: float, caption_wait_s: float
) -> None:
    """UsageError when the captioner's options (`captioner_options`' fields) are wrong."""
    check_positive('--captioner-timeout', captioner_timeout_s)
    check_positive('--caption-wait', caption_wait_s, zero_ok=True)
    if captioner_model and not captioner_url:
        raise UsageError('--captioner-model needs --captioner-url')


def with_captioner_model(config: EvaluationConfig) -> EvaluationConfig:
    """`config` naming its captioner's model: the first the server lists when none is
    given (UsageError when the server cannot say), so that a build records which model
    wrote its captions."""
    if not config.captioner_url or config.captioner_model:
        return config
    from waymark.evaluation.agent_answerer import UNKNOWN_MODEL, served_model

    model = served_model(config.captioner_url)
    if model == UNKNOWN_MODEL:
        raise UsageError(
            f'the captioner at {config.captioner_url} lists no model: is it up? '
            'Or name one with --captioner-model'
        )
    return dataclasses.replace(config, captioner_model=model)


def check_bag(bag: Path) -> None:
    """UsageError unless `bag` is a rosbag2 folder."""
    if not bag.exists():
        raise UsageError(f'no bag at {bag}')
    if not (bag / 'metadata.yaml').is_file():
        raise UsageError(f'{bag} is not a rosbag2 folder (it has no metadata.yaml)')


def is_evaluation(folder: Path) -> bool:
    """Whether `folder` holds an evaluation's output (memory, answers or a report)."""
    return any((folder / name).exists() for name in ('memory', 'report.json', INGESTED)) or any(
        folder.glob('predictions-*.jsonl')
    )


def _background(config: EvaluationConfig, ingest: dict) -> BagBackground | None:
    """The bag's map and trajectory for map.png; None when memory came from elsewhere."""
    if not (config.bag / 'metadata.yaml').is_file():
        return None
    return read_background(config.bag, ingest.get('sensors', {}).get('pose_topic'))


def _ground_truth(bag: Path) -> dict | None:
    path = bag / 'ground_truth.json'
    return json.loads(path.read_text()) if path.is_file() else None


def _memory(
    config: EvaluationConfig, truth: dict | None, build: MemoryBuilder
) -> tuple[MemoryService, dict]:
    """Open memory, building it from the bag unless a complete build of this format and
    with these settings is already there; a new build drops the answers of the old one."""
    data = config.out / 'memory'
    marker = data / INGESTED
    wanted = build_settings(config)
    built = json.loads(marker.read_text()) if marker.is_file() else {}
    if built.get('build') != wanted:
        # Captions are cached by model, prompt and picture: valid for any build, kept.
        cache, kept = data / factory.CAPTIONS, config.out / 'captions.kept'
        if cache.is_dir() and not kept.exists():
            cache.rename(kept)
        if data.exists():
            shutil.rmtree(data)  # interrupted, or of another format: start it over
        for old in config.out.glob('predictions-*.jsonl'):
            old.unlink()
        data.mkdir(parents=True)
        if kept.is_dir():
            kept.rename(cache)
        built = {**build(config, truth, data), 'build': wanted}
        write_json_atomically(marker, built)
    return open_memory(config, data), built


def build_settings(config: EvaluationConfig) -> dict:
    """What a build depends on besides the bag: a build made otherwise is not reused."""
    return {
        'format': MEMORY_FORMAT,
        'text_model': config.text_model,
        'image_model': config.image_model,
        'ocr': config.ocr,
        'segment_window_s': config.segment_window_s,
        'camera_extrinsic': list(config.camera_extrinsic or []),
        'image_topic': config.image_topic,
        'pose_topic': config.pose_topic,
        'map_frame': config.map_frame,
        'hfov_deg': config.hfov_deg,  # reported with the build
        'depth_topic': config.depth_topic,
        # The presets' values, so that an edited preset is a new build.
        'presets': read_presets([preset_path(n, config.preset_dir) for n in config.presets]),
    } | ({'captioner_model': config.captioner_model} if config.captioner_url else {})


def suite_world(world: Path, out: Path) -> EvaluationConfig:
    """Settings to evaluate a world the suite has run, with its memory copied to
    `out/memory` (once), so that the suite's own output is only read."""
    source = world / 'eval' / 'memory'
    if not (source / INGESTED).is_file():
        raise UsageError(f'{world.name}: no complete memory build; run the suite first')
    if not (out / 'memory' / INGESTED).is_file():
        shutil.rmtree(out / 'memory', ignore_errors=True)
        shutil.copytree(source, out / 'memory')
    return EvaluationConfig(world / 'bag', world / 'questions.json', out, progress=False)


def open_memory(config: EvaluationConfig, data: Path) -> MemoryService:
    """Memory in `data` laid out as memory_node lays it out, with segments unless
    `segment_window_s` is 0, and their captions with a captioner (whose answers are
    cached in `data`, as memory_node caches them). Close it with `close_memory`."""
    return factory.open_memory(
        MemoryConfig(
            data, segment_window_s=config.segment_window_s, captioner=captioner_config(config)
        ),
        load_models(
            ViewSettings(
                text_model=config.text_model, image_model=config.image_model, ocr=config.ocr
            )
        ),
    )


def captioner_config(config: EvaluationConfig) -> CaptionerConfig | None:
    """The captioner of `config` (its model named, see with_captioner_model); None
    without one."""
    if not config.captioner_url:
        return None
    return CaptionerConfig(
        base_url=config.captioner_url,
        model=config.captioner_model,
        timeout_s=config.captioner_timeout_s,
    )


def close_memory(memory: MemoryService, caption_timeout_s: float = 5.0) -> None:
    """Stop the captioner (waiting at most `caption_timeout_s` for the caption in
    progress), then close the store: no caption is written into a closed store."""
    captions = memory.segments.captions if memory.segments is not None else None
    if captions is not None:
        captions.stop(caption_timeout_s)
    memory.store.close()


def resolve_sensors(config: EvaluationConfig, truth: dict | None) -> Sensors:
    """The bag's sensors as the flags, the presets and the bag itself say, in that order."""
    check_bag(config.bag)
    names = ', '.join(config.presets)
    parameters = read_presets([preset_path(n, config.preset_dir) for n in config.presets])
    with AnyReader([config.bag]) as reader:
        available = {c.topic: c.msgtype for c in reader.connections}
        named_depth = (
            config.depth_topic,
            parameters.get('depth_topic'),
            (truth or {}).get('camera', {}).get('depth_topic'),
        )
        depth_topic, depth_from = choose_depth_topic(*named_depth, available)
        topics = find_topics(
            # Depth images are no candidate for the camera topic, even with depth off.
            {t: m for t, m in available.items() if t not in named_depth},
            config.image_topic or parameters.get('image_topic'),
            config.pose_topic or parameters.get('pose_topic'),
        )
        frames = pose_frames(reader, topics.pose)
        intrinsics = camera_intrinsics(
            reader,
            topics.image,
            config.hfov_deg,
            parameters.get('camera_hfov_deg'),
            names,
            (truth or {}).get('camera', {}).get('hfov_deg'),
        )
    map_frame, map_frame_from = choose_map_frame(
        config.map_frame, parameters.get('map_frame'), frames, topics.pose
    )
    extrinsic, extrinsic_from = _extrinsic(config, parameters, truth)
    return Sensors(
        image_topic=topics.image,
        image_type=topics.image_type,
        pose_topic=topics.pose,
        pose_type=topics.pose_type,
        map_frame=map_frame,
        map_frame_from=map_frame_from.replace('preset', f'preset {names}'),
        extrinsic=extrinsic,
        extrinsic_from=extrinsic_from.replace('preset', f'preset {names}'),
        intrinsics=intrinsics,
        pose_frames=dict(frames),
        depth_topic=depth_topic,
        depth_topic_from=depth_from.replace('preset', f'preset {names}'),
        presets=config.presets,
        parameters=parameters,
    )


def _extrinsic(config: EvaluationConfig, parameters: dict, truth: dict | None) -> tuple[Pose, str]:
    """The flag's extrinsic, else the presets', else the bag's ground truth, else identity."""
    if config.camera_extrinsic:
        values, source = config.camera_extrinsic, 'flag --camera-extrinsic'
    elif parameters.get('extrinsic_source') == 'tf':
        raise SensorError(
            'the preset takes the camera extrinsic from TF, which an evaluation does not '
            'read: pass --camera-extrinsic X Y Z QX QY QZ QW'
        )
    elif 'camera_extrinsic' in parameters:
        values, source = parameters['camera_extrinsic'], 'preset'
    elif (truth or {}).get('camera', {}).get('extrinsic'):
        values, source = truth['camera']['extrinsic'], "the bag's ground truth"
    else:
        return Pose(), 'default (identity)'
    if len(values) != 7:
        raise SensorError(f'camera extrinsic needs 7 numbers (x y z qx qy qz qw), got {values}')
    return Pose.checked(values[:3], values[3:]), source


def build_direct(config: EvaluationConfig, truth: dict | None, data: Path) -> dict:
    """Memory from the bag through the core code, no DDS."""
    sensors = resolve_sensors(config, truth)
    memory = open_memory(config, data)
    try:
        capture = capture_config(sensors.parameters, SESSION, sensors.map_frame, sensors.extrinsic)
        report = ingest_bag(
            config.bag,
            memory,
            capture,
            image_topic=sensors.image_topic,
            pose_topic=sensors.pose_topic,
            depth_topic=sensors.depth_topic or None,
            jpeg_quality=int(sensors.parameters.get('jpeg_quality', 90)),
            progress=config.progress,
            intrinsics=sensors.intrinsics,
        )
        memory.close_segments()  # the recording is over: its last window is complete
        segments = memory.store.count(level=SEGMENT)
        captions = collect_captions(memory, config.caption_wait_s)
    finally:
        close_memory(memory)
    return {
        'mode': 'direct',
        'keyframes': report.keyframes,
        'segments': segments,
        'ingested': report.ingested,
        'seconds': report.seconds,
        'counts': dict(report.counts),
        'topics': dataclasses.asdict(report.topics),
        'sensors': sensors.to_dict(),
        'ingest': summarize({**report.counts, **report.clock}),
    } | ({'captions': captions} if config.captioner_url else {})


def collect_captions(memory: MemoryService, wait_s: float) -> dict:
    """Wait at most `wait_s` for the captions still queued, then stop the captioner;
    what it did, for the build summary (empty without a captioner)."""
    segments = memory.segments
    if segments is None or segments.captions is None:
        return {}
    worker = segments.captions
    worker.wait_until_idle(wait_s)
    left = worker.stop(timeout_s=0.0)
    counts = worker.counts
    return {
        'segments_captioned': len(memory.store.view_ids(SEGMENT, CAPTION_VIEWS[0])),
        'requests': counts['requests'],
        'cache_hits': counts['cache_hits'],
        'failed': counts['jobs_failed'] + counts['jobs_failed_unavailable'],
        'not_queued': segments.counts['captions_not_queued'],
        'left_at_timeout': left,
    }


def agent_rows(memory: MemoryService, config: EvaluationConfig) -> tuple[str, ...]:
    """The agent's rows of a standard evaluation: none without an LLM server, and no
    Binary Tracking row when memory has no segments to track over."""
    if not config.llm_url:
        return ()
    with_bintrack = (True,) if memory.store.views(SEGMENT) else ()
    return tuple(agent_name(bt, config.agent_label) for bt in (*with_bintrack, False))


def agent_config(config: EvaluationConfig, search_between: bool) -> AgentConfig:
    """The agent's settings for a row; AnswererError when they are out of range."""
    try:
        return AgentConfig(
            max_steps=config.agent_steps,
            prefetch_hits=config.agent_prefetch,
            top_k=config.top_k,
            search_between=search_between,
            bintrack=BinTrackParams(
                alpha=config.bt_alpha, beta=config.bt_beta, k_leaf=config.bt_k_leaf
            ),
            time_zone=config.time_zone,
        )
    except ValueError as error:
        raise AnswererError(f'agent settings: {error}') from error


def _answerer(name: str, memory: MemoryService, config: EvaluationConfig) -> Answerer:
    if name == RANDOM_ENTRY:
        return RandomEntryAnswerer(memory, seed=config.seed)
    agent = parse_agent_name(name)
    if agent is not None:
        from waymark.evaluation.agent_answerer import AgentAnswerer, served_model

        bintrack, label = agent
        model = config.llm_model or served_model(config.llm_url)
        llm = LLMConfig(base_url=config.llm_url, model=model, timeout_s=config.llm_timeout_s)
        verifier = verifier_config(config, llm)
        cache = None
        if config.llm_model_file is not None and config.reply_cache is not None:
            cache = ReplyCache(config.reply_cache, model_sha256(config.llm_model_file))
        return AgentAnswerer(
            memory, llm, agent_config(config, bintrack), label, verifier=verifier, cache=cache
        )
    level, views = parse_embedder_name(name)
    return EmbedderOnlyAnswerer(memory, top_k=config.top_k, level=level, views=views)


@functools.cache
def model_sha256(path: Path) -> str:
    """The weights' sha256, read once per run however many rows use them."""
    return file_sha256(path)


def verifier_config(config: EvaluationConfig, llm: LLMConfig) -> VerifierConfig | None:
    """The verifier of the agent's rows: None without `verifier_url`; the planner's own
    server and model for VERIFIER_SAME_AS_LLM, taken to accept images."""
    if not config.verifier_url:
        return None
    from waymark.evaluation.agent_answerer import served_model

    if config.verifier_url == VERIFIER_SAME_AS_LLM:
        url, model = llm.base_url, config.verifier_model or llm.model
    else:
        url = config.verifier_url
        model = config.verifier_model or served_model(url)
    vlm = LLMConfig(base_url=url, model=model, timeout_s=config.llm_timeout_s, accepts_images=True)
    return VerifierConfig(llm=vlm, max_images=BinTrackParams.verifier_pool)


def _answer_all(
    answerer: Answerer, questions: QuestionSet, config: EvaluationConfig
) -> list[Prediction]:
    path = config.out / f'predictions-{answerer.name.replace("/", ".")}.jsonl'
    done = {}
    # An answerer with settings (the agent's model and limits) reuses only answers given
    # with the same settings.
    settings = getattr(answerer, 'settings', None)
    marker = path.with_suffix('.settings.json')
    if settings is not None:
        stored = json.loads(marker.read_text()) if marker.is_file() else None
        if stored != json.loads(json.dumps(settings)) and path.is_file():
            path.unlink()
        write_json_atomically(marker, settings)
    if path.is_file():
        for line in path.read_text().splitlines():
            try:
                row = json.loads(line)
                done[row['question_id']] = Prediction(**row)
            except (ValueError, TypeError, KeyError):
                break  # a line cut by an interruption: answer it again
    wanted = {q.id for q in questions.questions}
    done = {k: v for k, v in done.items() if k in wanted}
    with path.open('w') as log:
        for prediction in done.values():
            log.write(json.dumps(dataclasses.asdict(prediction)) + '\n')
        todo = [q for q in questions.questions if q.id not in done]
        for question in tqdm(todo, desc=answerer.name, disable=not config.progress):
            photo = question_image(question, config.questions.parent)
            prediction = answerer.answer(question, photo)
            done[question.id] = prediction
            log.write(json.dumps(dataclasses.asdict(prediction)) + '\n')
            log.flush()
    return [done[q.id] for q in questions.questions]


def question_image(question, base: Path):
    """The question's photo (RGB), from its path relative to the question file's folder."""
    if not question.image:
        return None
    bgr = cv2.imread(str(base / question.image), cv2.IMREAD_COLOR)
    return None if bgr is None else cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)


def _prediction_row(prediction: Prediction) -> dict:
    return {
        'question_id': prediction.question_id,
        'answered': prediction.answered,
        'goal': list(prediction.position) if prediction.position else None,
        'target': list(prediction.target) if prediction.target else None,
        'target_sigma_m': prediction.target_sigma_m,
        'target_method': prediction.target_method,
        'viewpoint': list(prediction.viewpoint) if prediction.viewpoint else None,
        'time_ns': prediction.time_ns,
        'yes': prediction.yes,
        'used_fallback': prediction.used_fallback,
        'entries_shown': prediction.entries_shown,
        'llm_calls': prediction.llm_calls,
        'tokens': prediction.tokens,
        'retrievals': prediction.retrievals,
        'verifier_calls': prediction.verifier_calls,
        'latency_s': prediction.latency_s,
        'message': prediction.message,
    }


def add_agent_arguments(parser: argparse.ArgumentParser) -> None:
    """The agent's options, shared by `waymark evaluate` and `waymark suite`."""
    group = parser.add_argument_group('reasoning agent (rows added only with --llm-url)')
    group.add_argument('--llm-url', default='', help='OpenAI-compatible server, .../v1')
    group.add_argument('--llm-model', default='', help='model name (default: the first served)')
    add_setting_options(group, LLMParameters, {'timeout_s': '--llm-timeout'})
    group.add_argument(
        '--llm-model-file',
        type=Path,
        default=None,
        help="the served model's weights: their sha256 names the model in the report and "
        'keys the reply cache',
    )
    group.add_argument(
        '--reply-cache',
        default=str(DEFAULT_REPLY_CACHE),
        help="folder of the model's kept replies (temperature 0, with --llm-model-file); "
        "'' sends every request",
    )
    group.add_argument('--agent-label', default='', help='row suffix naming the planner')
    add_setting_options(
        group,
        AgentParameters,
        {
            'max_steps': '--agent-steps',
            'prefetch_hits': '--agent-prefetch',
            'time_zone': '--time-zone',
        },
    )
    add_setting_options(
        group, BinTrackParams, {'alpha': '--bt-alpha', 'beta': '--bt-beta', 'k_leaf': '--bt-k-leaf'}
    )
    group.add_argument(
        '--verifier-url',
        default='',
        help=f'VLM server that verifies answers, .../v1 ({VERIFIER_SAME_AS_LLM!r}: the LLM)',
    )
    group.add_argument('--verifier-model', default='', help='default: the first served')


def agent_options(args: argparse.Namespace) -> dict:
    """EvaluationConfig fields from the options `add_agent_arguments` added."""
    return {
        'llm_url': args.llm_url,
        'llm_model': args.llm_model,
        'llm_timeout_s': args.llm_timeout,
        'agent_label': args.agent_label,
        'agent_steps': args.agent_steps,
        'agent_prefetch': args.agent_prefetch,
        'llm_model_file': args.llm_model_file,
        'reply_cache': Path(args.reply_cache) if args.reply_cache else None,
        'bt_alpha': args.bt_alpha,
        'bt_beta': args.bt_beta,
        'bt_k_leaf': args.bt_k_leaf,
        'time_zone': args.time_zone,
        'verifier_url': args.verifier_url,
        'verifier_model': args.verifier_model,
    }


def add_captioner_arguments(parser: argparse.ArgumentParser) -> None:
    """The segment captioner's options, shared by `waymark evaluate` and `waymark suite`."""
    group = parser.add_argument_group('segment captions (only with --captioner-url)')
    group.add_argument('--captioner-url', default='', help='VLM server, .../v1 (OpenAI API)')
    group.add_argument('--captioner-model', default='', help='default: the first served')
    add_setting_options(group, CaptionerParameters, {'timeout_s': '--captioner-timeout'})
    group.add_argument(
        '--caption-wait',
        type=float,
        default=EvaluationConfig.caption_wait_s,
        metavar='S',
        help='most seconds the end of a build waits for queued captions',
    )


def captioner_options(args: argparse.Namespace) -> dict:
    """EvaluationConfig fields from the options `add_captioner_arguments` added."""
    return {
        'captioner_url': args.captioner_url,
        'captioner_model': args.captioner_model,
        'captioner_timeout_s': args.captioner_timeout,
        'caption_wait_s': args.caption_wait,
    }


def main(
    argv: Sequence[str] | None = None,
    builders: Mapping[str, MemoryBuilder] | None = None,
    preset_dir: Path = PRESET_DIR,
) -> int:
    """The CLI; `builders` adds ways of building memory (the ROS package adds 'dds'),
    `preset_dir` is where sensor presets are found by name."""
    builders = {'direct': build_direct, **(builders or {})}
    parser = ArgumentParser(prog='waymark evaluate', description=__doc__.splitlines()[0])
    parser.add_argument('bag', type=Path, help='rosbag2 directory with camera and pose topics')
    parser.add_argument('questions', type=Path, help='question file (JSON or YAML)')
    parser.add_argument('--out', type=Path, default=Path('eval_output'))
    add_output_flags(parser)
    parser.add_argument('--mode', default='direct', choices=sorted(builders), help='memory build')
    parser.add_argument('--rate', type=float, default=0.0, help='dds mode replay rate (0: max)')
    parser.add_argument(
        '--answerers',
        nargs='+',
        help='rows to evaluate, e.g. embedder-only embedder-only/segment/text random-entry '
        '(default: every level and view memory has)',
    )
    parser.add_argument('--position-metric', default='object', choices=POSITION_METRICS)
    sensors = parser.add_argument_group('sensors (default: the presets, else the bag)')
    sensors.add_argument(
        '--preset',
        action='append',
        default=[],
        metavar='NAME',
        help=f'sensor preset: {preset_dir}/NAME.yaml or a path; repeat to layer a camera and '
        'an odometry preset as the robot launch does (later wins)',
    )
    sensors.add_argument('--map-frame', help="frame of the poses (default: the bag's poses')")
    sensors.add_argument(
        '--camera-extrinsic', type=float, nargs=7, metavar='V', help='x y z qx qy qz qw'
    )
    sensors.add_argument('--image-topic')
    sensors.add_argument('--pose-topic')
    depth = sensors.add_mutually_exclusive_group()
    depth.add_argument(
        '--depth-topic', metavar='TOPIC', help="depth image topic (default: the presets')"
    )
    depth.add_argument('--no-depth', action='store_true', help='keyframes without depth')
    sensors.add_argument(
        '--hfov', type=float, metavar='DEG', help='field of view when the bag has no CameraInfo'
    )
    sensors.add_argument(
        '--min-valid-poses',
        type=float,
        default=0.5,
        metavar='SHARE',
        help='fail when a smaller share of keyframes has a valid pose (0-1)',
    )
    parser.add_argument('--image-model', default='', help='SigLIP/CLIP id or path (off if empty)')
    parser.add_argument(
        '--segment-window', type=float, default=DEFAULT_WINDOW_S, help='segment length s (0: off)'
    )
    parser.add_argument('--top-k', type=int, default=5)
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--no-progress', action='store_true')
    add_agent_arguments(parser)
    add_captioner_arguments(parser)
    args = parser.parse_args(argv)
    config = EvaluationConfig(
        bag=args.bag,
        questions=args.questions,
        out=args.out,
        answerers=tuple(args.answerers) if args.answerers else None,
        position_metric=args.position_metric,
        camera_extrinsic=tuple(args.camera_extrinsic) if args.camera_extrinsic else None,
        image_topic=args.image_topic,
        pose_topic=args.pose_topic,
        presets=tuple(args.preset),
        preset_dir=preset_dir,
        map_frame=args.map_frame,
        hfov_deg=args.hfov,
        depth_topic='' if args.no_depth else args.depth_topic,
        min_valid_pose_share=args.min_valid_poses,
        image_model=args.image_model,
        segment_window_s=args.segment_window,
        top_k=args.top_k,
        seed=args.seed,
        progress=not args.no_progress,
        rate=args.rate,
        **agent_options(args),
        **captioner_options(args),
    )
    try:
        check_inputs(config)
        if args.mode == 'direct':
            check_bag(config.bag)  # other builders check what they read
        elif config.captioner_url:
            raise UsageError('--captioner-url works with --mode direct only')
        check_output_dir(config.out, is_evaluation, 'evaluation', args.resume, args.overwrite)
        if args.overwrite:
            clear_output_dir(config.out)
        report = run(config, builders[args.mode])
    except EvaluationError as error:
        if 'ingest' in error.build:
            print('\n'.join(summary_lines(error.build['ingest'], error.build['sensors'])))
        print(f'waymark evaluate: {error}', file=sys.stderr)
        return 1
    except (UsageError, QuestionFileError, BagTopicError, SensorError, AnswererError) as error:
        return fail('waymark evaluate', error)
    print(markdown(report))
    return 0


if __name__ == '__main__':
    sys.exit(main())
