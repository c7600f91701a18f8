# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""task_node's parameters: where the ledger, places and notes live, the topics and actions
the task layer runs over, every wait's bound, a task's default budget and the judge."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from waymark.agent.llm import LLMConfig
from waymark.llm_client import api_key_from_env
from waymark.memory.views.photo_match import PhotoMatchParams
from waymark.parameters.common import POSE_TYPES
from waymark.settings import setting
from waymark.tasks.checks import MAX_PRECHECKS, CheckSwitches
from waymark.tasks.consolidation import ConsolidationConfig
from waymark.tasks.coverage import DEFAULT_CELL_M, DEFAULT_MAX_CELLS, MAX_CELLS_CAP, CoverageParams
from waymark.tasks.judge import OcrJudgeConfig, VlmJudgeConfig
from waymark.tasks.outcomes import Budget
from waymark.tasks.runner import MAX_ATTEMPTS_CAP, MAX_CANDIDATES_CAP, RunnerParams
from waymark.tasks.stop_views import FRAME_LIMIT_CAP, HEADING_BUCKETS, MAX_JUDGE_FRAMES
from waymark.tasks.view_relocation import MAX_SEARCHED, ViewRelocationParams

JUDGE_BACKENDS = ('ocr', 'vlm')


@dataclass(frozen=True)
class InputParameters:
    odom_topic: str = setting('odom', 'Pose topic of the base in the map frame.')
    pose_type: str = setting(
        'odometry', 'Message type on inputs.odom_topic.', choices=POSE_TYPES[:3]
    )
    image_topic: str = setting(
        '/camera/image/compressed', 'Camera topic (sensor_msgs/CompressedImage).'
    )
    map_epoch_topic: str = setting(
        'capture/stats',
        "capture_node's latched stats (JSON): their map_epoch is the epoch of stop poses "
        'and places; empty: epoch 0.',
    )
    pose_timeout_s: float = setting(
        2.0,
        'A pose older than this is no pose: the task stops, a mark is refused, and tracking '
        'counts as lost for recovery.',
        low=0.1,
        high=60.0,
    )
    frame_period_s: float = setting(
        0.5, 'Least time between two camera frames kept.', low=0.0, high=60.0
    )
    frame_ring_length: int = setting(
        120, 'Camera frames kept for the judge, newest last.', low=4, high=10_000
    )


@dataclass(frozen=True)
class MarkParameters:
    radius_m: float = setting(
        1.0,
        'A mark keeps recent camera frames taken within this distance of the current position '
        '(the latest per heading bucket, at most four).',
        low=0.0,
        high=20.0,
    )
    max_age_s: float = setting(
        30.0, 'A mark keeps camera frames at most this old.', low=0.1, high=3600.0
    )


@dataclass(frozen=True)
class CoverageParameters:
    cell_m: float = setting(
        DEFAULT_CELL_M,
        'Grid cell of the explored area and of first visits (recovery signals).',
        low=0.05,
        high=10.0,
    )
    max_cells: int = setting(
        DEFAULT_MAX_CELLS,
        'Most cells kept; past it the explored area stops growing.',
        low=1,
        high=MAX_CELLS_CAP,
    )

    def params(self) -> CoverageParams:
        return CoverageParams(self.cell_m, self.max_cells)


@dataclass(frozen=True)
class ActionParameters:
    ask: str = setting('ask', "reasoner_node's Ask action (recall).")
    go_to: str = setting('go_to', "navigator_node's GoTo action (drives and stop turns).")
    store_place: str = setting(
        'store_place', "memory_node's service that keeps a marked place searchable."
    )
    explore: str = setting(
        'explore',
        "navigator_node's Explore action, driven before a ROOM-wide (or wider) re-query; "
        'empty: recoveries do not explore.',
    )
    calibrate_lessons: str = setting(
        'lessons/calibrate',
        "memory_node's service that counts a verified task (CERTIFIED, NOT DONE) for the "
        'lessons its answers were given; empty: tasks calibrate no lessons.',
    )
    reflect_lessons: str = setting(
        'lessons/reflect_task',
        "reasoner_node's service that reflects a lesson from a task the judge verified "
        '(CERTIFIED, NOT DONE), when its lessons.reflect is on; empty: tasks ask for none.',
    )
    server_wait_s: float = setting(
        5.0,
        'Longest wait for an action server to be found, and for one that vanished while '
        'its goal ran to come back before that goal counts as lost.',
        low=0.1,
        high=120.0,
    )
    accept_wait_s: float = setting(
        5.0,
        'Longest wait for a goal to be answered; one never answered is canceled by its id.',
        low=0.1,
        high=120.0,
    )
    resend_after_s: float = setting(
        2.0,
        'A goal not answered this long is sent again under its id (an answer lost in '
        'discovery); the server runs an id once.',
        low=0.1,
        high=120.0,
    )
    cancel_wait_s: float = setting(
        5.0, 'Longest wait for a cancel to be answered.', low=0.1, high=120.0
    )


@dataclass(frozen=True)
class BudgetParameters:
    time_s: float = setting(Budget.time_s, 'Default time budget of a task.', low=1.0, high=86_400.0)
    distance_m: float = setting(
        Budget.distance_m, 'Default drive distance budget of a task.', low=0.1, high=100_000.0
    )
    agent_steps: int = setting(
        Budget.agent_steps, 'Default agent step budget of a task.', low=1, high=1000
    )

    def budget(self) -> Budget:
        return Budget(self.time_s, self.distance_m, self.agent_steps)


@dataclass(frozen=True)
class RunnerParameters:
    max_attempts: int = setting(
        RunnerParams.max_attempts, 'Attempts of one task.', low=1, high=MAX_ATTEMPTS_CAP
    )
    max_candidates: int = setting(
        RunnerParams.max_candidates,
        'Candidates kept from one recall.',
        low=1,
        high=MAX_CANDIDATES_CAP,
    )
    recall_deadline_s: float = setting(
        RunnerParams.recall_deadline_s, 'Longest recall.', low=1.0, high=3600.0
    )
    drive_deadline_s: float = setting(
        RunnerParams.drive_deadline_s, 'Longest drive.', low=1.0, high=3600.0
    )
    view_deadline_s: float = setting(
        RunnerParams.view_deadline_s, 'Longest turn for stop views.', low=1.0, high=3600.0
    )
    judge_deadline_s: float = setting(
        RunnerParams.judge_deadline_s, 'Longest judge call.', low=1.0, high=3600.0
    )
    stop_view_count: int = setting(
        HEADING_BUCKETS, 'Views turned for at a stop.', low=1, high=HEADING_BUCKETS
    )
    judge_frames: int = setting(
        MAX_JUDGE_FRAMES,
        'Pictures the judge sees, stop views first; at least runner.stop_view_count.',
        low=1,
        high=FRAME_LIMIT_CAP,
    )
    precheck: bool = setting(True, 'Judge each arrival before stopping there.')
    precheck_limit: int = setting(
        MAX_PRECHECKS,
        'Arrivals of one task judged before the stop (1: only the first, as the digest).',
        low=1,
        high=MAX_PRECHECKS,
    )
    certify: bool = setting(True, 'Judge the final stop (off: every claim stays CLAIMED).')
    max_relocations: int = setting(
        RunnerParams.max_relocations,
        'Relocations of one task (a turn in place for views, matched against memory).',
        low=0,
        high=10,
    )
    relocation_step_m: float = setting(
        RunnerParams.relocation_step_m,
        'How far the robot moves to look again after a relocation that did not align.',
        low=0.1,
        high=20.0,
    )
    explore_deadline_s: float = setting(
        RunnerParams.explore_deadline_s,
        "Longest exploration before a ROOM-wide re-query (the explore action's time budget).",
        low=1.0,
        high=3600.0,
    )


@dataclass(frozen=True)
class RelocationParameters:
    search_service: str = setting(
        'search_memory',
        "memory_node's search service, by which the views of a relocation are matched; "
        'empty: no relocation, and a remembered goal from another map epoch is refused.',
    )
    memory_data_dir: str = setting(
        '~/.waymark/memory', "memory_node's data_dir: the pictures the views are verified on."
    )
    searched: int = setting(
        ViewRelocationParams.searched,
        'Memory hits per view verified by local features.',
        low=1,
        high=MAX_SEARCHED,
    )
    camera_hfov_deg: float = setting(
        ViewRelocationParams.hfov_deg,
        "The robot camera's horizontal field of view, for where a view's match lies.",
        low=1.0,
        high=179.0,
    )
    timeout_s: float = setting(5.0, 'Longest wait for one memory search.', low=0.1, high=120.0)

    def view_relocation(self) -> ViewRelocationParams:
        return ViewRelocationParams(searched=self.searched, hfov_deg=self.camera_hfov_deg)


@dataclass(frozen=True)
class JudgeParameters:
    backend: str = setting(
        'ocr',
        'ocr: matches a goal photo in the stop views, then reads them for the goal text, no '
        'server; vlm: a model over judge.base_url.',
        choices=JUDGE_BACKENDS,
    )
    coverage: float = setting(
        1.0, 'Share of the goal words one stop view must read (ocr).', low=0.01, high=1.0
    )
    ocr_min_confidence: float = setting(
        0.5, 'Least OCR confidence of a line read (ocr).', low=0.0, high=1.0
    )
    photo_min_inliers: int = setting(
        PhotoMatchParams().min_inliers,
        'Verified inliers between a goal photo and a stop view for a match (ocr: photo goals '
        'are matched first).',
        low=4,
        high=1000,
    )
    photo_textured_keypoints: int = setting(
        PhotoMatchParams().textured_keypoints,
        'Keypoints a stop view needs for a lack of match to rule the stop out (ocr).',
        low=1,
        high=10_000,
    )
    base_url: str = setting('', 'OpenAI-compatible server of the judge VLM (vlm).')
    model: str = setting('Qwen/Qwen2.5-VL-7B-Instruct', 'Judge VLM (vlm).')
    api_key_env: str = setting(
        'WAYMARK_LLM_API_KEY', 'Environment variable holding the API key (unset: no key).'
    )
    timeout_s: float = setting(60.0, 'Timeout of one judge request.', low=0.1, high=600.0)
    max_tokens: int = setting(300, 'Tokens the judge may write.', low=16, high=8192)


@dataclass(frozen=True)
class ConsolidationParameters:
    base_url: str = setting(
        '', 'OpenAI-compatible server that rewrites the house notes; empty: mechanical.'
    )
    model: str = setting('', 'Model of consolidation.base_url.')
    timeout_s: float = setting(120.0, 'Timeout of one request.', low=0.1, high=600.0)
    deadline_s: float = setting(
        300.0,
        'Longest consolidation with the model; past it the mechanical summary is written.',
        low=1.0,
        high=3600.0,
    )
    max_tokens: int = setting(3000, 'Tokens the model may write.', low=64, high=32_768)
    max_records: int = setting(
        100, 'Newest ledger records a consolidation reads.', low=1, high=10_000
    )


@dataclass(frozen=True)
class TaskNodeParameters:
    data_dir: str = setting(
        '~/.waymark/tasks', 'Folder of the task ledger, the named places and the house notes.'
    )
    run_id: str = setting('', 'Name of this run in the ledger (at most 64 characters).')
    map_frame: str = setting('map', 'Frame of poses, goals and places.')
    max_text_chars: int = setting(
        2000, 'Longest goal text; a longer goal is refused.', low=1, high=100_000
    )
    max_photo_bytes: int = setting(
        10_000_000, 'Largest goal photo; a larger goal is refused.', low=1, high=200_000_000
    )
    inputs: InputParameters = field(default_factory=InputParameters)
    actions: ActionParameters = field(default_factory=ActionParameters)
    mark: MarkParameters = field(default_factory=MarkParameters)
    coverage: CoverageParameters = field(default_factory=CoverageParameters)
    budget: BudgetParameters = field(default_factory=BudgetParameters)
    runner: RunnerParameters = field(default_factory=RunnerParameters)
    judge: JudgeParameters = field(default_factory=JudgeParameters)
    relocation: RelocationParameters = field(default_factory=RelocationParameters)
    consolidation: ConsolidationParameters = field(default_factory=ConsolidationParameters)

    def __post_init__(self) -> None:
        if len(self.run_id) > 64:
            raise ValueError(f'run_id must be at most 64 characters: {self.run_id!r}')
        self.runner_params()
        self.judge_llm()
        if bool(self.consolidation.base_url) != bool(self.consolidation.model):
            raise ValueError('consolidation.base_url and consolidation.model go together')

    @property
    def root(self) -> Path:
        return Path(self.data_dir).expanduser()

    def runner_params(self) -> RunnerParams:
        runner = self.runner
        return RunnerParams(
            max_attempts=runner.max_attempts,
            max_candidates=runner.max_candidates,
            recall_deadline_s=runner.recall_deadline_s,
            drive_deadline_s=runner.drive_deadline_s,
            view_deadline_s=runner.view_deadline_s,
            judge_deadline_s=runner.judge_deadline_s,
            stop_view_count=runner.stop_view_count,
            judge_frames=runner.judge_frames,
            max_relocations=runner.max_relocations,
            relocation_step_m=runner.relocation_step_m,
            explore_deadline_s=runner.explore_deadline_s,
            checks=CheckSwitches(
                precheck=runner.precheck,
                certify=runner.certify,
                precheck_limit=runner.precheck_limit,
            ),
        )

    def ocr_config(self) -> OcrJudgeConfig:
        return OcrJudgeConfig(coverage=self.judge.coverage)

    def photo_match(self) -> PhotoMatchParams:
        return PhotoMatchParams(
            min_inliers=self.judge.photo_min_inliers,
            textured_keypoints=self.judge.photo_textured_keypoints,
        )

    def judge_llm(self) -> VlmJudgeConfig | None:
        """The VLM judge's model; None for the ocr backend."""
        judge = self.judge
        if judge.backend != 'vlm':
            return None
        _check_url('judge.base_url', judge.base_url)
        llm = LLMConfig(
            base_url=judge.base_url,
            model=judge.model,
            api_key=api_key_from_env(judge.api_key_env),
            timeout_s=judge.timeout_s,
            max_tokens=judge.max_tokens,
            accepts_images=True,
        )
        return VlmJudgeConfig(llm, max_tokens=judge.max_tokens)

    def consolidation_config(self) -> ConsolidationConfig:
        config = self.consolidation
        return ConsolidationConfig(max_records=config.max_records, max_tokens=config.max_tokens)

    def consolidation_llm(self) -> LLMConfig | None:
        """The model that rewrites the notes; None: the mechanical summary."""
        config = self.consolidation
        if not config.base_url:
            return None
        _check_url('consolidation.base_url', config.base_url)
        return LLMConfig(
            config.base_url,
            config.model,
            timeout_s=config.timeout_s,
            max_tokens=config.max_tokens,
        )


def _check_url(name: str, url: str) -> None:
    if not url.startswith(('http://', 'https://')):
        raise ValueError(f'{name}={url!r} must be an http:// or https:// URL')
