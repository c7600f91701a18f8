# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""reasoner_node's parameters. What steers the agent per question (input limits, the step
budget, search top_k, the prompt, target localisation, relational search) and the traces
are live: a change applies to the questions that start after it (one already running may
see it from its next step)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

from waymark.agent.agent import AgentConfig
from waymark.agent.bintrack import BinTrackParams
from waymark.agent.limits import InputLimits
from waymark.agent.llm import LLMConfig
from waymark.agent.relations import RelationParams
from waymark.agent.trace import TraceWriter
from waymark.agent.verifier import VerifierConfig
from waymark.llm_client import api_key_from_env
from waymark.localisation.params import LocalisationParams
from waymark.memory.entries import LEVELS, check_robot_id
from waymark.memory.storage.image_codec import ImageLimits
from waymark.parameters.common import (
    POSE_TYPES,
    TF,
    InputDiagnosticsParameters,
    TfPoseParameters,
    check_tf_frame,
    comma_list,
)
from waymark.settings import setting

CoreParams = TypeVar('CoreParams')

# Bounds of max_concurrent_questions and question_queue_length: the executor has a thread
# for each running and each waiting question.
MAX_CONCURRENT_QUESTIONS = 16
MAX_QUEUE_LENGTH = 64


@dataclass(frozen=True)
class MemoryDataParameters:
    data_dir: str = setting(
        '~/.waymark/memory',
        "memory_node's data_dir, where the pictures shown to the model and the verifier are "
        'read (the same directory, or a copy of it).',
    )
    robots: str = setting(
        '',
        'Robots whose sessions questions search, where several share one memory: '
        'comma-separated memory_node robot_id values (this robot alone where the robots do '
        'not share a map); empty: every robot.',
    )

    def __post_init__(self) -> None:
        for robot in self.robot_ids:
            check_robot_id(robot)

    @property
    def robot_ids(self) -> tuple[str, ...]:
        return comma_list(self.robots)


@dataclass(frozen=True)
class RobotParameters:
    odom_topic: str = setting(
        '',
        "Pose topic (map frame) whose latest pose the model is told as the robot's; empty: "
        'the robot pose is not given (unless robot.pose_type is tf).',
    )
    pose_type: str = setting(
        'odometry',
        'Message type on robot.odom_topic, or tf (robot.tf_pose.parent_frame -> '
        'robot.tf_pose.child_frame).',
        choices=POSE_TYPES,
    )
    tf_pose: TfPoseParameters = field(default_factory=TfPoseParameters)

    @property
    def enabled(self) -> bool:
        return bool(self.odom_topic) or self.pose_type == TF


@dataclass(frozen=True)
class NavigationParameters:
    action: str = setting('go_to', "navigator_node's GoTo action.")
    server_wait_s: float = setting(
        2.0, 'Longest wait for the navigator when a goal is to be sent.', low=0.0, high=60.0
    )
    accept_wait_s: float = setting(
        5.0,
        'Longest wait for the navigator to accept a goal; then it is reported failed.',
        low=0.1,
        high=60.0,
    )
    result_wait_s: float = setting(
        360.0,
        'Longest wait for how a drive ended; then the goal is canceled and reported failed. '
        "Keep it above navigator_node's goal_timeout_s.",
        low=1.0,
        high=86400.0,
    )


@dataclass(frozen=True)
class FreeSpaceParameters:
    map_topic: str = setting(
        '',
        "nav_msgs/OccupancyGrid (navigator_node's map) that tells where answer goals may "
        'stand: a free pose facing the target; empty: no map, and a goal stays at the '
        'viewpoint the target was seen from.',
    )
    map_transient_local: bool = setting(True, 'Map publisher is latched (map_server, SLAM).')
    robot_radius_m: float = setting(
        0.35,
        "Obstacles and unknown space grow by this much; keep navigator_node's robot_radius_m.",
        low=0.0,
        high=5.0,
    )


@dataclass(frozen=True)
class LLMParameters:
    base_url: str = setting(
        '',
        'OpenAI-compatible server of the agent (vLLM: http://localhost:8000/v1); empty: no '
        'LLM, every answer is the embedder-only fallback.',
    )
    model: str = setting('Qwen/Qwen2.5-VL-7B-Instruct', 'Model name the server serves.')
    api_key_env: str = setting(
        'WAYMARK_LLM_API_KEY', 'Environment variable holding the API key (unset: no key).'
    )
    timeout_s: float = setting(
        LLMConfig.timeout_s, 'Timeout of one LLM request.', low=0.1, high=600.0
    )
    max_tokens: int = setting(
        LLMConfig.max_tokens, 'Tokens the model may write per call.', low=1, high=32768
    )
    temperature: float = setting(LLMConfig.temperature, 'Sampling temperature.', low=0.0, high=2.0)
    max_retries: int = setting(
        LLMConfig.max_retries,
        'Retries of a request the server did not answer (unreachable, timeout, 5xx).',
        low=0,
        high=10,
    )
    accepts_images: bool = setting(
        True, 'The model takes pictures (a VLM): found keyframes are shown to it.'
    )


@dataclass(frozen=True)
class VerifierParameters:
    enabled: bool = setting(
        True,
        'Check candidate pictures with a VLM (Binary Tracking, lock-on); needs '
        'verifier.model or an LLM that accepts images.',
    )
    base_url: str = setting(
        '', 'Server of the verifier VLM; empty: the LLM server (none without an LLM).'
    )
    model: str = setting('', 'Verifier VLM; empty: the LLM, if it accepts images.')
    api_key_env: str = setting(
        '', 'Environment variable holding the verifier API key; empty: llm.api_key_env.'
    )
    max_images: int = setting(
        VerifierConfig.max_images, 'Pictures per verifier call.', low=1, high=64
    )


@dataclass(frozen=True)
class AgentParameters:
    max_steps: int = setting(
        AgentConfig.max_steps, 'Searches the model may make.', low=1, high=50, live=True
    )
    prefetch_hits: int = setting(
        AgentConfig.prefetch_hits,
        "The embedder's best hits shown with the question before the model's first step "
        '(0: none); they spend no search.',
        low=0,
        high=20,
        live=True,
    )
    free_empty_replies: int = setting(
        AgentConfig.free_empty_replies,
        'Replies with neither text nor a tool call asked again without spending a search; '
        'any beyond spend one each.',
        low=0,
        high=10,
        live=True,
    )
    top_k: int = setting(AgentConfig.top_k, 'Hits per search.', low=1, high=100, live=True)
    level: str = setting(
        AgentConfig.level,
        'Memory level searched: frame (keyframes) or segment (1.5 s windows).',
        choices=LEVELS,
        live=True,
    )
    deadline_s: float = setting(
        AgentConfig.deadline_s,
        'Longest time for one question from its arrival, time in the queue included; then '
        'the fallback answers.',
        low=1.0,
        high=3600.0,
        live=True,
    )
    # Offline evaluation keeps no reserve (AgentConfig's 0); a robot answers by its deadline.
    fallback_reserve_s: float = setting(
        2.0,
        "Seconds of agent.deadline_s kept for the fallback's memory search: the agent loop "
        'is cut this much earlier. Below agent.deadline_s.',
        low=0.0,
        high=600.0,
        live=True,
    )
    max_images_per_step: int = setting(
        AgentConfig.max_images_per_step,
        'Pictures of found memories shown to a model that accepts images, per step.',
        low=0,
        high=20,
        live=True,
    )
    search_between: bool = setting(
        AgentConfig.search_between,
        'Offer the model search_between (Binary Tracking between route anchors).',
        live=True,
    )
    time_zone: str = setting(
        AgentConfig.time_zone,
        "IANA time zone of the session's clock (UTC, Europe/Berlin): times are shown to "
        'the model and in answers in it, and clock times in questions ("at ten", "this '
        'morning") are read in it.',
        live=True,
    )


@dataclass(frozen=True)
class LocalisationParameters:
    """Where an answer's target is and the goal pose that faces it; the core's
    LocalisationParams checks how the values fit together."""

    min_text_score: float = setting(
        LocalisationParams.min_text_score,
        "Share of a text box's words the query must cover for the box to be the target.",
        low=0.01,
        high=1.0,
        live=True,
    )
    same_text_ratio: float = setting(
        LocalisationParams.same_text_ratio,
        "How alike another keyframe's best box must read (0..1) to count as a second view of "
        'the same thing.',
        low=0.01,
        high=1.0,
        live=True,
    )
    max_rays: int = setting(
        LocalisationParams.max_rays,
        'Most views (the matched keyframe and others that read the same words) a '
        'triangulation combines.',
        low=2,
        high=64,
        live=True,
    )
    min_baseline_m: float = setting(
        LocalisationParams.min_baseline_m,
        'Least spread of the camera positions for a triangulation; closer views give none.',
        low=0.0,
        high=10.0,
        live=True,
    )
    min_ray_angle_deg: float = setting(
        LocalisationParams.min_ray_angle_deg,
        'Least angle between two bearings for a triangulation; near-parallel ones give none.',
        low=0.1,
        high=89.0,
        live=True,
    )
    min_range_m: float = setting(
        LocalisationParams.min_range_m,
        'Depth readings and triangulated points nearer their camera than this are dropped '
        '(behind it or at the lens). Below localisation.assumed_range_m.',
        low=0.0,
        high=10.0,
        live=True,
    )
    max_range_m: float = setting(
        LocalisationParams.max_range_m,
        'Depth readings and triangulated points farther from their camera than this are '
        'dropped. At least localisation.assumed_range_m.',
        low=0.1,
        high=100.0,
        live=True,
    )
    max_residual_m: float = setting(
        LocalisationParams.max_residual_m,
        'RMS miss of the bearings above which they disagree and no triangulation is made.',
        low=0.01,
        high=10.0,
        live=True,
    )
    bearing_sigma_deg: float = setting(
        LocalisationParams.bearing_sigma_deg,
        "Noise of one bearing (pixel centre and pose yaw), for the estimate's uncertainty.",
        low=0.01,
        high=30.0,
        live=True,
    )
    depth_sigma_m: float = setting(
        LocalisationParams.depth_sigma_m,
        'Least uncertainty of a position measured by depth.',
        low=0.001,
        high=5.0,
        live=True,
    )
    assumed_range_m: float = setting(
        LocalisationParams.assumed_range_m,
        'Distance assumed along a single bearing with no depth. Above '
        'localisation.min_range_m, at most localisation.max_range_m.',
        low=0.1,
        high=100.0,
        live=True,
    )
    assumed_range_sigma_m: float = setting(
        LocalisationParams.assumed_range_sigma_m,
        'Uncertainty (1 sigma) of localisation.assumed_range_m.',
        low=0.01,
        high=50.0,
        live=True,
    )
    viewing_range_m: float = setting(
        LocalisationParams.viewing_range_m,
        'How far a camera typically is from what it matched, when only the viewpoint is '
        'known: the uncertainty of that estimate.',
        low=0.1,
        high=50.0,
        live=True,
    )
    standoff_m: float = setting(
        LocalisationParams.standoff_m,
        'Distance the goal pose keeps from the target.',
        low=0.0,
        high=10.0,
        live=True,
    )
    standoff_ring_step_m: float = setting(
        LocalisationParams.standoff_ring_step_m,
        'Step outwards between the rings searched for a free goal pose.',
        low=0.01,
        high=5.0,
        live=True,
    )
    standoff_rings: int = setting(
        LocalisationParams.standoff_rings,
        'Rings searched for a free goal pose; none free: the goal is the viewpoint.',
        low=1,
        high=20,
        live=True,
    )
    standoff_angle_step_deg: float = setting(
        LocalisationParams.standoff_angle_step_deg,
        'Angle between the goal poses tried on one ring. At most '
        'localisation.standoff_max_side_deg.',
        low=1.0,
        high=180.0,
        live=True,
    )
    standoff_max_side_deg: float = setting(
        LocalisationParams.standoff_max_side_deg,
        'Farthest a goal pose may turn from the side the target was seen from (90 keeps the '
        'goal off the back of a wall sign).',
        low=1.0,
        high=180.0,
        live=True,
    )


@dataclass(frozen=True)
class RelationParameters:
    """The anchor-then-instance search of "Z next to Y" questions; the core's
    RelationParams checks the values."""

    enabled: bool = setting(
        RelationParams.enabled,
        'Answer "Z next to Y" by finding Y, then the Z nearest it; off: a plain search.',
        live=True,
    )
    max_anchors: int = setting(
        RelationParams.max_anchors,
        'Distinct sightings of the anchor searched around, best first.',
        low=1,
        high=20,
        live=True,
    )
    anchor_k: int = setting(
        RelationParams.anchor_k,
        'Hits asked for the anchor; its distinct sightings are taken from them.',
        low=1,
        high=100,
        live=True,
    )
    anchor_separation_m: float = setting(
        RelationParams.anchor_separation_m,
        'Two anchor sightings closer than this are one place.',
        low=0.0,
        high=100.0,
        live=True,
    )
    radius_m: float = setting(
        RelationParams.radius_m,
        'Neighbourhood of an anchor that is an object or a sign.',
        low=0.1,
        high=100.0,
        live=True,
    )
    room_radius_m: float = setting(
        RelationParams.room_radius_m,
        'Neighbourhood of an anchor that is a room.',
        low=0.1,
        high=100.0,
        live=True,
    )
    sight_margin_m: float = setting(
        RelationParams.sight_margin_m,
        'How far a camera may stand from what it sees: the neighbourhood search reaches this '
        'much further.',
        low=0.0,
        high=100.0,
        live=True,
    )
    range_k: int = setting(
        RelationParams.range_k,
        'Entries taken from one neighbourhood.',
        low=1,
        high=10_000,
        live=True,
    )
    max_visits: int = setting(
        RelationParams.max_visits,
        'Passes through a neighbourhood (runs of consecutive entries) ranked for the instance.',
        low=1,
        high=50,
        live=True,
    )
    target_k: int = setting(
        RelationParams.target_k,
        'Hits asked for the instance, over all memory and per pass.',
        low=1,
        high=100,
        live=True,
    )
    match_margin: float = setting(
        RelationParams.match_margin,
        'An entry matches the instance or the anchor when its similarity is within this of '
        'the best memory has for it.',
        low=0.0,
        high=2.0,
        live=True,
    )
    min_anchor_similarity: float = setting(
        RelationParams.min_anchor_similarity,
        'Least similarity of a sighting to the anchor for it to show the anchor.',
        low=0.0,
        high=1.0,
        live=True,
    )
    min_target_similarity: float = setting(
        RelationParams.min_target_similarity,
        "Below this best similarity memory cannot recognise the instance and the anchor's "
        'sightings are the answer; lower it for embedders whose cosines run low, 0: off.',
        low=0.0,
        high=1.0,
        live=True,
    )
    visit_gap: int = setting(
        RelationParams.visit_gap,
        'Entries of one session further apart in index than this start a new pass.',
        low=1,
        high=10_000,
        live=True,
    )


@dataclass(frozen=True)
class PromptParameters:
    max_text_chars: int = setting(
        AgentConfig.max_text_chars,
        'Characters of text read from the world (OCR, a caption, a session name) shown to '
        'the model per field, quoted; longer text is cut.',
        low=10,
        high=10_000,
        live=True,
    )


@dataclass(frozen=True)
class TracesParameters:
    dir: str = setting(
        '~/.waymark/traces',
        'Directory of the JSON trace of every question; empty: no traces.',
        live=True,
    )
    max_files: int = setting(1000, 'Newest traces kept.', low=1, high=1_000_000, live=True)

    def writer(self) -> TraceWriter | None:
        return TraceWriter(Path(self.dir).expanduser(), self.max_files) if self.dir else None


@dataclass(frozen=True)
class LessonsParameters:
    enabled: bool = setting(
        False,
        "Put memory_node's lessons for each question before it (lessons/get); a bank that "
        'is off or away leaves the question without lessons. The robot preset turns it on.',
    )
    timeout_s: float = setting(
        2.0,
        'Longest wait for lessons/get before the question goes on without lessons, and for '
        'each call the feedback service makes.',
        low=0.05,
        high=60.0,
        live=True,
    )
    calibrate_service: str = setting(
        'lessons/calibrate', "memory_node's service the feedback service counts outcomes with."
    )
    get_task_service: str = setting(
        'get_task', "task_node's service the feedback service looks tasks up with."
    )
    reflect: bool = setting(
        False,
        'After a verified outcome (feedback on an answer or a task), the answering model '
        "writes a lesson from it for memory_node's bank (add_service; the bank must be in "
        'acquire mode). Needs llm.base_url.',
    )
    add_service: str = setting('lessons/add', "memory_node's service lessons are written with.")
    reflect_task_service: str = setting(
        'lessons/reflect_task',
        'The service task_node names a closed task on, to be reflected on once its judge '
        'verified it (served whether reflection is on or not, to say so).',
    )
    reflect_dir: str = setting(
        '~/.waymark/reflections',
        'Where outcomes wait for their reflection, so a restart loses none.',
    )
    reflect_max_pending: int = setting(
        256,
        'Outcomes waiting for reflection; beyond them one is not queued.',
        low=1,
        high=100_000,
    )
    reflect_max_attempts: int = setting(
        6, 'Tries of one reflection while the model or memory_node is away.', low=1, high=100
    )
    reflect_retry_s: float = setting(
        30.0,
        'Wait before a reflection is tried again, doubled per attempt (at most 16 times).',
        low=0.01,
        high=86_400.0,
    )
    reflect_timeout_s: float = setting(
        120.0,
        'Longest one reflection may take the model, re-prompt included.',
        low=1.0,
        high=3600.0,
    )
    reflect_max_tokens: int = setting(
        300, 'Longest reply the model may write for a lesson.', low=50, high=4000
    )


@dataclass(frozen=True)
class LimitsParameters:
    max_question_chars: int = setting(
        2000,
        'Longest question, in characters; a longer one is refused before any work.',
        low=1,
        high=100_000,
        live=True,
    )
    max_sessions: int = setting(
        64, 'Most sessions a question may name.', low=0, high=10_000, live=True
    )
    max_photo_bytes: int = setting(
        10_000_000,
        'Largest compressed photo with a question; checked before it is decoded.',
        low=1,
        high=200_000_000,
        live=True,
    )
    max_photo_pixels: int = setting(
        25_000_000,
        'Most pixels in a photo, read from its header before it is decoded.',
        low=1,
        high=400_000_000,
        live=True,
    )

    def input_limits(self) -> InputLimits:
        return InputLimits(
            question_chars=self.max_question_chars,
            sessions=self.max_sessions,
            photo=ImageLimits(max_bytes=self.max_photo_bytes, max_pixels=self.max_photo_pixels),
        )


@dataclass(frozen=True)
class ReasonerParameters:
    map_frame: str = setting('map', 'Frame of goals and evidence poses (memory_node map_frame).')
    memory_timeout_s: float = setting(
        10.0,
        'Longest wait for one memory_node search, and for memory_node to be found.',
        low=0.1,
        high=600.0,
    )
    max_concurrent_questions: int = setting(
        4,
        'Agent loops run at once; more questions wait in the queue.',
        low=1,
        high=MAX_CONCURRENT_QUESTIONS,
    )
    question_queue_length: int = setting(
        8,
        'Questions that wait for an agent loop, in arrival order, until their deadline; '
        'beyond them a question is refused at once as busy.',
        low=0,
        high=MAX_QUEUE_LENGTH,
    )
    request_history_depth: int = setting(
        100,
        'Query requests and Ask goals DDS keeps until the node takes them; a burst beyond '
        'this overwrites the oldest before the node sees it.',
        low=10,
        high=10_000,
    )
    limits: LimitsParameters = field(default_factory=LimitsParameters)
    prompt: PromptParameters = field(default_factory=PromptParameters)
    memory: MemoryDataParameters = field(default_factory=MemoryDataParameters)
    robot: RobotParameters = field(default_factory=RobotParameters)
    navigation: NavigationParameters = field(default_factory=NavigationParameters)
    free_space: FreeSpaceParameters = field(default_factory=FreeSpaceParameters)
    llm: LLMParameters = field(default_factory=LLMParameters)
    verifier: VerifierParameters = field(default_factory=VerifierParameters)
    agent: AgentParameters = field(default_factory=AgentParameters)
    bintrack: BinTrackParams = field(default_factory=BinTrackParams)
    localisation: LocalisationParameters = field(default_factory=LocalisationParameters)
    relations: RelationParameters = field(default_factory=RelationParameters)
    traces: TracesParameters = field(default_factory=TracesParameters)
    lessons: LessonsParameters = field(default_factory=LessonsParameters)
    diagnostics: InputDiagnosticsParameters = field(default_factory=InputDiagnosticsParameters)

    def __post_init__(self) -> None:
        self.agent_config()  # its checks across fields (fallback reserve, localisation)
        check_tf_frame(self.robot.pose_type, self.robot.tf_pose, self.map_frame)

    def agent_config(self) -> AgentConfig:
        agent = self.agent
        return AgentConfig(
            max_steps=agent.max_steps,
            free_empty_replies=agent.free_empty_replies,
            prefetch_hits=agent.prefetch_hits,
            top_k=agent.top_k,
            level=agent.level,
            deadline_s=agent.deadline_s,
            fallback_reserve_s=agent.fallback_reserve_s,
            max_text_chars=self.prompt.max_text_chars,
            max_images_per_step=agent.max_images_per_step,
            search_between=agent.search_between,
            bintrack=self.bintrack,
            localisation=_core_params(LocalisationParams, self.localisation, 'localisation.'),
            relations=_core_params(RelationParams, self.relations, 'relations.'),
            time_zone=agent.time_zone,
        )

    def llm_config(self) -> LLMConfig | None:
        """The agent's model; None without llm.base_url (the fallback answers)."""
        llm = self.llm
        if not llm.base_url:
            return None
        _check_url('llm.base_url', llm.base_url)
        return self._model_config(llm.base_url, llm.model, llm.api_key_env, llm.accepts_images)

    def verifier_config(self, note: Callable[[str], None]) -> VerifierConfig | None:
        """The VLM that checks candidate pictures: the LLM itself when it accepts images,
        or the one verifier.base_url / verifier.model name. None without either, and
        `note` is told why when the verifier is on but has no model."""
        verifier, llm = self.verifier, self.llm
        if verifier.base_url:
            _check_url('verifier.base_url', verifier.base_url)
        if not verifier.enabled:
            return None
        base_url = verifier.base_url or llm.base_url
        if not base_url:
            return None
        model = verifier.model or (llm.model if llm.base_url and llm.accepts_images else '')
        if not model:
            note('verifier off: no verifier.model, and the LLM does not accept images')
            return None
        key_env = verifier.api_key_env or llm.api_key_env
        config = self._model_config(base_url, model, key_env, accepts_images=True)
        return VerifierConfig(config, verifier.max_images)

    def _model_config(
        self, base_url: str, model: str, key_env: str, accepts_images: bool
    ) -> LLMConfig:
        llm = self.llm
        return LLMConfig(
            base_url=base_url,
            model=model,
            api_key=api_key_from_env(key_env),
            timeout_s=llm.timeout_s,
            max_tokens=llm.max_tokens,
            temperature=llm.temperature,
            max_retries=llm.max_retries,
            accepts_images=accepts_images,
        )


def _check_url(name: str, url: str) -> None:
    if not url.startswith(('http://', 'https://')):
        raise ValueError(f'{name}={url!r} must be an http:// or https:// URL')


def _core_params(core_type: type[CoreParams], group: Any, prefix: str) -> CoreParams:
    """`group`'s settings as the core's `core_type` (the same field names); a refusal names
    the parameters in full, so an operator knows which to change."""
    values = {item.name: getattr(group, item.name) for item in fields(group)}
    try:
        return core_type(**values)
    except ValueError as error:
        names = '|'.join(sorted(values, key=len, reverse=True))
        raise ValueError(re.sub(rf'\b({names})\b', rf'{prefix}\1', str(error))) from error
