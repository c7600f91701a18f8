# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The reasoning agent: RAVEN's retrieval loop with BinTrack's route search, bounded.

At each step the model either calls one search tool, whose hits are appended to the
conversation, or answers with final_answer. Everything the model sends is checked: tool
arguments against their schemas, and the answer against what it was shown. A position
answer always comes from a memory entry returned to this question (the one the model's
goal names, within `evidence_match_m`, or the first it cites); a goal anywhere else is
refused once with the reason, and a second refusal ends in the fallback. Ids and
coordinates the model writes are claims; only what memory returned is a source. From
that entry (and the other hits shown that read the same words) target localisation
estimates where the thing itself is (`answer.target`), and the goal becomes a free pose
facing it at a standoff, or the entry's own pose when nothing better is known.

Text read from the world (OCR, captions, session names) reaches the model only as quoted
data with control characters removed and its length capped, under a standing rule that
it is evidence and never instructions (see `prompts` and `evidence.quote`).

The loop always ends with an answer or a clear failure, never a hang: the model gets at
most `max_steps` searches and a bounded number of calls, every call is bounded by the
loop's deadline (the question's, less `fallback_reserve_s` kept for the fallback's
search), and cancellation is checked between steps. When the model is
unreachable, runs out of budget or keeps answering badly, the answer falls back to the
best verified candidate found so far (route search, lock-on-Y), else to the top hit of a
plain similarity search for the question, flagged `used_fallback`.
"""

from __future__ import annotations

import logging
import math
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any

import numpy as np

from waymark.agent import prompts
from waymark.agent.bintrack import (
    BinTrackParams,
    lock_on_rerank,
    primary_target,
    secondary_anchor,
)
from waymark.agent.evidence import clock, describe_hits, parse_time, quote
from waymark.agent.exclusions import Exclusions
from waymark.agent.llm import ChatClient, ChatReply, LLMError, LLMUnavailableError, image_part
from waymark.agent.memory_api import MemoryBackend, MemoryUnavailableError
from waymark.agent.relations import (
    PositionOf,
    RelationalSearch,
    RelationParams,
    parse_relation,
)
from waymark.agent.route import ImageLoader, RouteSearch
from waymark.agent.spoken_time import DEFAULT_ZONE, find, parse, resolve, time_zone
from waymark.agent.tools import (
    FINAL,
    TOOLS,
    FinalAnswer,
    Scope,
    SearchBetween,
    ToolArgumentError,
    parse_call,
    search_query,
    tool_specs,
)
from waymark.agent.trace import TraceWriter, redact_images
from waymark.agent.verifier import Verifier
from waymark.localisation.estimate import TargetEstimate
from waymark.localisation.locate import locate
from waymark.localisation.params import LocalisationParams
from waymark.localisation.place import place
from waymark.localisation.standoff import FreeSpace
from waymark.memory.entries import FRAME, LEVELS, Hit
from waymark.memory.search_query import Mode, SearchQuery
from waymark.memory.views.fusion import per_view_zscores

_LOG = logging.getLogger(__name__)
POSITION, TEXT, TIME, YES_NO, NONE = 'position', 'text', 'time', 'yes_no', 'none'
# How fallback_reason starts when memory could not be searched.
MEMORY_UNAVAILABLE = 'memory unavailable'
# The step that shows the embedder's hits before the model's first (AgentConfig.prefetch_hits).
PREFETCH = 'prefetched'


@dataclass(frozen=True)
class AgentConfig:
    """Limits and choices of the loop (defaults: BinTrack's 4 searches, RAVEN-QA's top-k 5)."""

    # Searches per question: every reply that is not a final answer (a tool call, a bad
    # call or text) spends one; BinTrack's budget is 4.
    max_steps: int = 4
    # Replies with neither text nor a tool call that are asked again without spending a
    # search (small models send them); any beyond spend one each.
    free_empty_replies: int = 2
    # The embedder's best hits for the question shown with it before the first step (0:
    # none): the model starts by choosing among what the fallback would answer with.
    prefetch_hits: int = 0
    top_k: int = 5
    level: str = FRAME
    deadline_s: float = 60.0
    max_images_per_step: int = 5
    # A goal this close to a memory's pose is that memory's pose.
    evidence_match_m: float = 0.25
    fallback_top_k: int = 5
    # Seconds of the deadline kept for the fallback: the loop stops this much earlier.
    fallback_reserve_s: float = 0.0
    # Characters of text read from the world (OCR, captions, session names) shown per field.
    max_text_chars: int = 200
    # Offer search_between (Binary Tracking) to the model; off for ablations.
    search_between: bool = True
    bintrack: BinTrackParams = field(default_factory=BinTrackParams)
    # Where an answer's target is, and the standoff pose the goal becomes.
    localisation: LocalisationParams = field(default_factory=LocalisationParams)
    # "Z next to Y": find Y, then the Z nearest it (text searches and the fallback's).
    relations: RelationParams = field(default_factory=RelationParams)
    # IANA zone of the session's clock: times shown and clock times read are local to it.
    time_zone: str = DEFAULT_ZONE

    def __post_init__(self) -> None:
        if not 1 <= self.max_steps <= 50:
            raise ValueError(f'max_steps must be in [1, 50], got {self.max_steps}')
        if not 0 <= self.prefetch_hits <= 20:
            raise ValueError(f'prefetch_hits must be in [0, 20], got {self.prefetch_hits}')
        if not 0 <= self.free_empty_replies <= 10:
            raise ValueError(
                f'free_empty_replies must be in [0, 10], got {self.free_empty_replies}'
            )
        if not 1 <= self.top_k <= 100 or not 1 <= self.fallback_top_k <= 100:
            raise ValueError('top_k and fallback_top_k must be in [1, 100]')
        if self.level not in LEVELS:
            raise ValueError(f'level must be one of {LEVELS}, got {self.level!r}')
        if not 0 < self.deadline_s <= 3600:
            raise ValueError(f'deadline_s must be in (0, 3600], got {self.deadline_s}')
        if self.max_images_per_step < 0:
            raise ValueError('max_images_per_step must be >= 0')
        if not 0 <= self.evidence_match_m <= 10.0:
            raise ValueError(f'evidence_match_m must be in [0, 10], got {self.evidence_match_m}')
        if not 0 <= self.fallback_reserve_s < self.deadline_s:
            raise ValueError(
                f'fallback_reserve_s must be in [0, deadline_s), got {self.fallback_reserve_s}'
            )
        if not 10 <= self.max_text_chars <= 10_000:
            raise ValueError(f'max_text_chars must be in [10, 10000], got {self.max_text_chars}')
        time_zone(self.time_zone)


@dataclass(frozen=True)
class AgentQuestion:
    question: str
    now_ns: int
    sessions: tuple[str, ...] = ()
    image: np.ndarray | None = None  # RGB photo of the target, when the user gave one
    robot_pose: tuple[float, float, float, float] | None = None  # x, y, z, yaw (map)
    # Where the answer must not be (a task's searched places): never shown, never answered.
    exclusions: Exclusions = field(default_factory=Exclusions)
    # What the lessons are looked up by (a task's goal); '' looks them up by the question.
    lesson_task: str = ''


@dataclass(frozen=True)
class Goal:
    x: float
    y: float
    z: float
    yaw: float
    map_epoch: int
    session: str = ''  # of the memory the pose comes from: its map epoch is that session's


@dataclass
class AgentAnswer:
    kind: str = NONE
    text: str = ''
    goal: Goal | None = None
    # Where the thing itself is (goal is the free pose to drive to, facing it).
    target: TargetEstimate | None = None
    time_ns: int | None = None
    yes: bool | None = None
    confidence: float = 0.0
    evidence: list[Hit] = field(default_factory=list)
    used_fallback: bool = False
    fallback_reason: str = ''
    cancelled: bool = False
    trace_id: str = ''
    steps: int = 0
    llm_calls: int = 0
    retrievals: int = 0
    verifier_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    # The lessons put before the question, and of those the ones a verified outcome of
    # this answer may calibrate: all of them for the model's own answer, none for the
    # fallback's or a cancelled one (the lessons guided nothing the person or judge saw).
    lessons_shown: tuple[str, ...] = ()
    lesson_ids: tuple[str, ...] = ()
    # Why no lessons were shown or credited ('no lessons: ...'); '' when they were.
    lessons_note: str = ''


@dataclass(frozen=True)
class LessonsGiven:
    """A lesson source's answer for one question: the block to put before it ('' for
    none), the ids of the lessons in it, and why there are none when the source could not
    give any ('no lessons: ...'; '' when none were similar enough)."""

    block: str = ''
    lesson_ids: tuple[str, ...] = ()
    note: str = ''


@dataclass(frozen=True)
class StepEvent:
    """Reported after each tool the model called (feedback for the Ask action)."""

    step: int
    tool: str
    arguments: str
    hits: int
    elapsed_s: float


class _RejectedError(ValueError):
    """A final answer that does not stand against what the model was shown."""


class _Run:
    """The state of one question: conversation, what was shown, counts, trace."""

    def __init__(
        self, question: AgentQuestion, config: AgentConfig, deadline: float | None
    ) -> None:
        self.question = question
        self.trace_id = uuid.uuid4().hex
        self.started = time.monotonic()
        # The loop's: the question's deadline less what the fallback's search may need.
        end = self.started + config.deadline_s if deadline is None else deadline
        self.deadline = end - config.fallback_reserve_s
        self.messages: list[dict[str, Any]] = []
        self.shown: dict[str, Hit] = {}
        self.verified: list[Hit] = []
        self.steps: list[dict[str, Any]] = []
        self.answer = AgentAnswer(trace_id=self.trace_id)
        # What the model last searched for by description: lock-on-Y's Z.
        self.last_query = ''
        # How the answer's target and goal were found, for the trace.
        self.localised: dict[str, Any] | None = None
        # How the last search used an anchor ("Z next to Y"), for its trace step.
        self.anchor_note: dict[str, Any] | None = None
        # When the sessions asked about started (their first memory), once looked up.
        self.session_start: int | None = None
        # Whether the question's one verifier call was made (or tried: a failed call
        # is not retried).
        self.verifier_asked = False
        # What the answer check asked and found (the trace's `verification`).
        self.verification: dict[str, Any] = {}
        # The embedder-only hits, once searched: the prefetch and the fallback share them.
        self.similar: list[Hit] | None = None

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def show(self, hits: Sequence[Hit]) -> None:
        for hit in hits:
            self.shown.setdefault(hit.record.id, hit)

    def admitted(self, hits: Sequence[Hit]) -> list[Hit]:
        """`hits` less the entries the question excludes."""
        excluded = self.question.exclusions
        return [hit for hit in hits if not excluded.excludes_entry(hit.record.id)]

    def count(self, reply: ChatReply) -> None:
        self.answer.llm_calls += 1
        self.answer.prompt_tokens += reply.prompt_tokens
        self.answer.completion_tokens += reply.completion_tokens


class Agent:
    """Answers questions about memory; see the module docstring.

    `chat` None means no LLM is configured: every answer is the fallback. Thread-safe as
    long as `memory`, `chat` and `verifier` are (each question has its own state).
    """

    def __init__(
        self,
        chat: ChatClient | None,
        memory: MemoryBackend,
        images: ImageLoader,
        config: AgentConfig | None = None,
        verifier: Verifier | None = None,
        traces: TraceWriter | None = None,
        free_space: FreeSpace | None = None,
        position_of: PositionOf | None = None,
        lessons: Callable[[str], LessonsGiven] | None = None,
    ) -> None:
        """`position_of` places a hit in the map for anchor-then-instance searches: by
        default where target localisation puts the thing the hit shows (where the camera
        stood when the hit has no sighting). `lessons` gives the lessons block for a
        question (SMA); a source that fails is logged and the question goes without."""
        self.chat = chat
        self.memory = memory
        self.images = images
        self.config = config or AgentConfig()
        self.verifier = verifier
        self.traces = traces
        # A map's test of whether a position is free, for the goal's standoff pose.
        self.free_space = free_space
        self.route = RouteSearch(memory, images, verifier, self.config.bintrack)
        self.position_of = position_of or self._located
        self.lessons = lessons

    def _located(self, hit: Hit, query: str) -> tuple[float, float]:
        """Where the thing `hit` shows for `query` is, from that one entry."""
        estimate = locate(hit.record, query, (), self.config.localisation, hit.region)
        return estimate.x, estimate.y

    def ask(
        self,
        question: AgentQuestion,
        on_step: Callable[[StepEvent], None] | None = None,
        cancelled: Callable[[], bool] = lambda: False,
        deadline: float | None = None,
    ) -> AgentAnswer:
        """The answer to `question` by `deadline` (a `time.monotonic()` instant; default:
        `config.deadline_s` from now), searches of a slow memory aside."""
        if not question.question.strip():
            raise ValueError('empty question')
        run = _Run(question, self.config, deadline)
        try:
            self._loop(run, on_step or (lambda event: None), cancelled)
        except MemoryUnavailableError as error:
            run.answer = AgentAnswer(
                trace_id=run.trace_id,
                fallback_reason=f'{MEMORY_UNAVAILABLE}: {error}',
                lessons_shown=run.answer.lessons_shown,
                lessons_note=_uncredited(run.answer, 'memory could not be searched'),
                **{key: getattr(run.answer, key) for key in _COUNTS},
            )
            run.answer.text = run.answer.fallback_reason
        run.answer.latency_s = run.elapsed()
        run.answer.steps = len(run.steps)
        self._write_trace(run)
        return run.answer

    # -- the loop ------------------------------------------------------------------------

    def _loop(self, run: _Run, on_step: Callable, cancelled: Callable[[], bool]) -> None:
        config = self.config
        if self.chat is None:
            return self._fallback(run, 'no LLM configured')
        tools = [
            name
            for name in TOOLS
            if (name != 'retrieve_from_image' or _has_photo(run))
            and (name != 'search_between' or config.search_between)
        ]
        given = self._lessons_for(run.question.lesson_task or run.question.question)
        run.answer.lessons_shown = run.answer.lesson_ids = given.lesson_ids
        run.answer.lessons_note = given.note
        question = self._question_text(run)
        if given.block:
            question = f'{given.block}\n\n{question}'
        run.messages = [
            {'role': 'system', 'content': prompts.SYSTEM.format(max_steps=config.max_steps)},
            {'role': 'user', 'content': question},
        ]
        if config.prefetch_hits:
            self._prefetch(run, on_step)
        searches, refusals, empty, told, calls = 0, 0, 0, False, 0
        # Searches, the forced final call, one re-ask, one nudge and the empty replies asked
        # again (at most free_empty_replies); nothing beyond.
        while calls < config.max_steps + 3 + empty:
            calls += 1
            if cancelled():
                run.answer.cancelled = True
                run.answer.fallback_reason = 'cancelled'
                run.answer.lesson_ids = ()
                run.answer.lessons_note = _uncredited(run.answer, 'the question was cancelled')
                return None
            if time.monotonic() >= run.deadline:
                return self._fallback(run, f'deadline of {config.deadline_s:g} s reached')
            offered = tools if searches < config.max_steps else [FINAL]
            if offered == [FINAL] and not told:  # however the steps were spent
                run.messages.append({'role': 'user', 'content': prompts.BUDGET_SPENT})
                told = True
            try:
                reply = self.chat.complete(run.messages, tool_specs(offered), run.deadline)
            except LLMUnavailableError as error:
                return self._fallback(run, f'LLM unreachable: {error}')
            except LLMError as error:
                return self._fallback(run, f'LLM reply unusable: {error}')
            run.count(reply)
            run.messages.append(_assistant_message(reply))
            if not reply.tool_calls:
                run.messages.append({'role': 'user', 'content': prompts.NO_TOOL})
                if reply.content.strip() or empty >= config.free_empty_replies:
                    searches += 1
                else:  # said nothing at all: asked again, no search spent
                    empty += 1
                continue
            call, *extra = reply.tool_calls
            for ignored in extra:
                run.messages.append(_tool_message(ignored.id, prompts.ONE_TOOL))
            started = time.monotonic()
            try:
                arguments = parse_call(call.name, call.arguments, offered)
            except ToolArgumentError as error:
                self._record(run, on_step, call.name, call.arguments, [], started, str(error))
                if call.name == FINAL:  # an answer that cannot be read is refused
                    refusals += 1
                    if refusals > 1:
                        return self._fallback(run, f'final answer refused twice: {error}')
                else:
                    searches += 1
                run.messages.append(_tool_message(call.id, f'Error: {error}'))
                continue
            if isinstance(arguments, FinalAnswer):
                try:
                    self._accept(run, arguments, searches < config.max_steps)
                    self._record(run, on_step, FINAL, call.arguments, [], started)
                    return None
                except _RejectedError as why:
                    self._record(run, on_step, FINAL, call.arguments, [], started, str(why))
                    refusals += 1
                    if refusals > 1:
                        return self._fallback(run, f'final answer refused twice: {why}')
                    run.messages.append(
                        _tool_message(call.id, prompts.REJECTED_ANSWER.format(why=why))
                    )
                    continue
            try:
                hits = run.admitted(self._search(run, arguments))
                content = describe_hits(
                    hits, run.question.now_ns, config.max_text_chars, config.time_zone
                )
                error = ''
            except ValueError as problem:  # memory refused the request as asked
                hits, content, error = [], f'Error: {problem}', str(problem)
            except LLMUnavailableError as problem:  # the verifier inside search_between
                return self._fallback(run, f'verifier unreachable: {problem}')
            except LLMError as problem:  # the verifier answered, unusably
                hits, error = [], f'verification failed: {problem}'
                content = f'Error: {error}'
            run.show(hits)
            run.messages.append(_tool_message(call.id, content))
            self._show_pictures(run, hits)
            self._record(run, on_step, call.name, call.arguments, hits, started, error)
            searches += 1
        return self._fallback(run, f'no usable answer within {config.max_steps} searches')

    def _lessons_for(self, task: str) -> LessonsGiven:
        if self.lessons is None:
            return LessonsGiven()
        try:
            return self.lessons(task)
        except Exception as error:  # lessons help; a question never fails for them
            _LOG.warning('no lessons for this question: %s', error)
            return LessonsGiven(note=f'no lessons: {error}')

    def _question_text(self, run: _Run) -> str:
        question = run.question
        pose = ''
        if question.robot_pose is not None:
            x, y, z, yaw = question.robot_pose
            pose = (
                f'The robot is at x={x:.2f} y={y:.2f} z={z:.2f} m, heading '
                f'{math.degrees(yaw):.0f} deg.\n'
            )
        photo = ''
        if question.image is not None:
            photo = 'A photo of the target comes with the question.\n'
        limit = self.config.max_text_chars
        sessions = (
            f'Search only the recordings named: '
            f'{", ".join(quote(name, limit) for name in question.sessions)}.\n'
            if question.sessions
            else ''
        )
        return prompts.QUESTION.format(
            question=' '.join(question.question.split()),
            now=self._clock(question.now_ns) + _zone_name(self.config.time_zone),
            times=self._spoken_times(run),
            pose=pose,
            photo=photo,
            sessions=sessions,
        ).strip()

    def _spoken_times(self, run: _Run) -> str:
        """The spoken time that ends the question ("... five minutes ago?") as a clock
        time, with the session start when it is counted from it; '' when there is none."""
        found = find(run.question.question)
        if found is None:
            return ''
        span, spoken = found
        start = self._session_start(run) if spoken.needs_start else None
        moment = resolve(spoken, run.question.now_ns, start, self.config.time_zone)
        if moment is None:
            return ''
        lines = [f'The session started at {self._clock(start)}.'] if start is not None else []
        when = self._clock(moment.start_ns)
        if not moment.is_instant:
            when = f'from {when} to {self._clock(moment.end_ns)}'
        lines.append(f'"{span}" is {when}.')
        return '\n'.join(lines) + '\n'

    def _session_start(self, run: _Run) -> int | None:
        """The first memory of the sessions asked about: what "after I started" counts from."""
        if run.session_start is None:
            run.answer.retrievals += 1
            first = self.memory.search(self._scope(run, 1)(Mode.TIME, stamp_ns=0))
            run.session_start = first[0].record.stamp_ns if first else None
        return run.session_start

    def _time(self, run: _Run, text: str) -> int:
        """A time the model wrote, read in the session's zone and against its start
        (looked up only when the words count from it)."""
        spoken = parse(text)
        start = self._session_start(run) if spoken is not None and spoken.needs_start else None
        return parse_time(text, run.question.now_ns, self.config.time_zone, start)

    def _clock(self, stamp_ns: int) -> str:
        return clock(stamp_ns, self.config.time_zone)

    # -- tools ---------------------------------------------------------------------------

    def _scope(self, run: _Run, k: int | None = None) -> Scope:
        """SearchQuery within the question's sessions at the configured level, of `k`
        hits (default: top_k)."""
        return partial(
            SearchQuery,
            k=k or self.config.top_k,
            sessions=run.question.sessions,
            level=self.config.level,
        )

    def _search(self, run: _Run, arguments: Any) -> list[Hit]:
        if isinstance(arguments, SearchBetween):  # counts its own retrievals
            sessions = list(run.question.sessions) or None
            return self._search_between(run, arguments, sessions)
        # Made first: a time that cannot be read costs no retrieval.
        query = search_query(
            arguments, self._scope(run), run.question.image, partial(self._time, run)
        )
        if query.mode == Mode.TEXT:
            run.last_query = query.text
            return self._search_text(run, query)
        run.answer.retrievals += 1
        return self.memory.search(query)

    def _search_text(self, run: _Run, query: SearchQuery) -> list[Hit]:
        """A text search; for "Z next to Y" the Z nearest Y's sightings when there are
        any (see `relations`), else the plain search."""
        relation = parse_relation(query.text) if self.config.relations.enabled else None
        if relation is not None:
            search = RelationalSearch(
                self.memory.search, self._scope(run), self.config.relations, self.position_of
            )
            note: dict[str, Any] = {'relation': asdict(relation)}
            try:
                result = search.run(relation, query.k)
            except ValueError as error:  # memory refused a part: the plain search may not
                run.anchor_note = note | {'why': str(error)}
            else:
                run.answer.retrievals += result.retrievals
                run.anchor_note = note | result.note()
                if result.hits:
                    return result.hits
        run.answer.retrievals += 1
        return self.memory.search(query)

    def _search_between(
        self, run: _Run, arguments: SearchBetween, sessions: list[str] | None
    ) -> list[Hit]:
        run.last_query = arguments.target
        start = arguments.from_place or (arguments.from_position.x, arguments.from_position.y)
        end = arguments.to_place or (arguments.to_position.x, arguments.to_position.y)
        # The question's one verifier call: a second route search goes unverified.
        may_verify = not run.verifier_asked
        try:
            result = self.route.run(
                arguments.target, start, end, sessions, run.deadline, may_verify
            )
        except LLMError:  # the call was made, and failed: it is not made again
            run.verifier_asked = True
            raise
        run.verifier_asked = run.verifier_asked or result.verifier_calls > 0
        run.answer.retrievals += result.retrievals
        run.answer.verifier_calls += result.verifier_calls
        if result.chosen is None:
            raise ValueError(result.message or 'nothing found between the anchors')
        if result.verified:
            run.verified.append(result.chosen)
        pool = result.track.candidates if result.track else []
        others = [hit for hit in pool if hit is not result.chosen]
        return [result.chosen, *others][: self.config.top_k]

    def _prefetch(self, run: _Run, on_step: Callable) -> None:
        """Show the embedder's best hits before the first step, as a search's result
        would be shown: the entries the fallback would answer from, so a small model's
        first job is to choose among them or to search further. Spends no search."""
        started = time.monotonic()
        hits = run.admitted(self._similar(run))[: self.config.prefetch_hits]
        if not hits:
            return
        run.show(hits)
        listing = describe_hits(
            hits, run.question.now_ns, self.config.max_text_chars, self.config.time_zone
        )
        run.messages.append({'role': 'user', 'content': f'{prompts.PREFETCHED}\n{listing}'})
        self._show_pictures(run, hits)
        self._record(run, on_step, PREFETCH, '', hits, started)

    def _show_pictures(self, run: _Run, hits: Sequence[Hit]) -> None:
        if self.chat is None or not self.chat.config.accepts_images:
            return
        parts: list[dict[str, Any]] = [{'type': 'text', 'text': prompts.IMAGES}]
        for hit in hits[: self.config.max_images_per_step]:
            jpeg = self.images(hit.record)
            if jpeg:
                parts += [{'type': 'text', 'text': f'[{hit.record.id}]'}, image_part(jpeg)]
        if len(parts) > 1:
            run.messages.append({'role': 'user', 'content': parts})

    def _record(
        self,
        run: _Run,
        on_step: Callable,
        tool: str,
        arguments: str,
        hits: Sequence[Hit],
        started: float,
        error: str = '',
    ) -> None:
        run.steps.append(
            {
                'tool': tool,
                'arguments': arguments,
                'error': error,
                'hits': [[hit.record.id, round(float(hit.score), 4), hit.view] for hit in hits],
                'seconds': round(time.monotonic() - started, 4),
            }
        )
        if run.anchor_note is not None:
            run.steps[-1]['anchor'], run.anchor_note = run.anchor_note, None
        on_step(StepEvent(len(run.steps), tool, arguments, len(hits), run.elapsed()))

    # -- answers -------------------------------------------------------------------------

    def _accept(self, run: _Run, final: FinalAnswer, may_search: bool) -> None:
        """Check the model's answer against what it was shown; _RejectedError says why not."""
        if final.kind != NONE and run.answer.retrievals == 0 and may_search:
            # Small models answer from their own imagination if let; memory must speak first.
            raise _RejectedError('nothing was searched yet: search memory before answering')
        unknown = [key for key in final.evidence_ids if key not in run.shown]
        if unknown:
            raise _RejectedError(f'ids never shown: {", ".join(unknown[:5])}')
        cited = [run.shown[key] for key in dict.fromkeys(final.evidence_ids)]
        # Checked in full before anything is kept, so a refused answer leaves no trace in
        # the answer (a cancelled or failed run must not report half of it).
        goal, target, time_ns, yes = None, None, None, None
        if final.kind == POSITION:
            source = self._checked(run, self._goal(final, cited, list(run.shown.values())))
            goal, target = self._place(run, source, cited)
            if run.question.exclusions.excludes(source.record.id, target.x, target.y):
                raise _RejectedError(
                    f'the answer points at ({target.x:.1f}, {target.y:.1f}), a place already '
                    'searched and ruled out: answer with another memory'
                )
            if source.record.id not in final.evidence_ids:  # name the goal's memory too
                cited = [source, *cited]
        elif final.kind == TIME:
            if final.time:
                try:
                    time_ns = self._time(run, final.time)
                except ValueError as error:
                    raise _RejectedError(str(error)) from error
            elif not cited:
                raise _RejectedError('a time answer needs a time or a cited memory')
        elif final.kind == YES_NO:
            if final.yes is None:
                raise _RejectedError('a yes/no answer needs yes set to true or false')
            yes = final.yes
        if cited and time_ns is None:
            time_ns = cited[0].record.stamp_ns
        answer = run.answer
        answer.kind, answer.text = final.kind, final.text.strip()
        answer.confidence, answer.evidence = float(final.confidence), cited
        answer.goal, answer.target, answer.time_ns, answer.yes = goal, target, time_ns, yes

    def _goal(self, final: FinalAnswer, cited: list[Hit], shown: list[Hit]) -> Hit:
        """The memory entry, returned to this question, whose pose is the goal: the one the
        model's goal names (within evidence_match_m), else the first cited with a pose.
        The model's own coordinates are never the goal."""
        placed = [hit for hit in cited if hit.record.pose_valid]
        if final.goal is None:
            if not placed:
                raise _RejectedError('a position answer needs a goal or a cited memory with a pose')
            return placed[0]
        g = final.goal
        if not (math.isfinite(g.x) and math.isfinite(g.y)):
            raise _RejectedError('the goal is not a finite position')
        candidates = [hit for hit in shown if hit.record.pose_valid]
        nearest = min(candidates, key=lambda h: _distance(h, g.x, g.y), default=None)
        if nearest is None:
            raise _RejectedError('no memory returned to this question has a position')
        distance = _distance(nearest, g.x, g.y)
        if distance > self.config.evidence_match_m:
            raise _RejectedError(
                f'the goal is {distance:.1f} m from the nearest memory returned to this '
                'question; a goal must be the pose of one of them'
            )
        return nearest

    def _fallback(self, run: _Run, reason: str) -> None:
        """Best verified candidate, else lock-on-Y, else the question's top similarity hit."""
        answer = AgentAnswer(
            trace_id=run.trace_id,
            used_fallback=True,
            fallback_reason=reason,
            # Shown, but the answer is not the model's: its outcome says nothing of them.
            lessons_shown=run.answer.lessons_shown,
            lessons_note=_uncredited(run.answer, "the answer is the fallback's"),
            **{key: getattr(run.answer, key) for key in _COUNTS},
        )
        run.answer = answer
        best = run.verified[0] if run.verified else self._checked(run, None)
        if best is None or self._ruled_out(run, best):
            hits = run.admitted(self._similar(run))
            best = next(
                (hit for hit in hits if hit.record.pose_valid and not self._ruled_out(run, hit)),
                None,
            )
            # The goal's memory first: a caller takes the first evidence as the answer's.
            answer.evidence = [best, *(hit for hit in hits if hit is not best)] if best else hits
        else:
            answer.evidence = [best]
        if best is None:
            answer.text = f'No memory with a position matches the question ({reason}).'
            return None
        record = best.record
        answer.kind = POSITION
        answer.goal, answer.target = self._place(run, best, answer.evidence)
        answer.time_ns = record.stamp_ns
        answer.confidence = max(0.0, min(1.0, float(best.score))) if _similarity(best) else 0.0
        quoted = quote(record.text, self.config.max_text_chars) if record.text else ''
        seen = f' (text read there: {quoted})' if quoted else ''
        answer.text = (
            f'Best match in memory: seen from x={record.x:.2f}, y={record.y:.2f} at '
            f'{self._clock(record.stamp_ns)}{seen}.'
        )
        return None

    def _ruled_out(self, run: _Run, hit: Hit) -> bool:
        """Whether the question excludes `hit`, or where it shows the thing to be."""
        excluded = run.question.exclusions
        if not excluded:
            return False
        x, y = self._located(hit, f'{run.question.question} {run.last_query}')
        return excluded.excludes(hit.record.id, x, y)

    def _place(self, run: _Run, source: Hit, cited: Sequence[Hit]) -> tuple[Goal, TargetEstimate]:
        """Where the goal's memory saw the thing the question names, helped by the other
        hits shown that read the same words, and the free pose facing it to drive to.
        Both derive from what memory returned, never from coordinates the model wrote."""
        record, params = source.record, self.config.localisation
        query = f'{run.question.question} {run.last_query}'
        others = [hit.record for hit in (*cited, *run.shown.values())]
        target, pose = place(record, query, others, params, self.free_space, source.region)
        goal = Goal(pose.x, pose.y, record.z, pose.yaw, record.map_epoch, record.session)
        run.localised = {'source': record.id, 'target': asdict(target), 'goal': asdict(goal)}
        return goal, target

    def _similar(self, run: _Run) -> list[Hit]:
        """The embedder-only answer's hits: the photo when given, else the question;
        searched once per question."""
        if run.similar is None:
            run.similar = self._search_similar(run)
        return run.similar

    def _search_similar(self, run: _Run) -> list[Hit]:
        question = run.question
        scope = self._scope(run, self.config.fallback_top_k)
        try:
            if question.image is not None:
                run.answer.retrievals += 1
                return self.memory.search(scope(Mode.IMAGE, image=question.image))
            hits = self._search_text(run, scope(Mode.TEXT, text=question.question))
        except ValueError:
            return []
        if run.anchor_note is not None:
            run.steps.append({'tool': 'fallback_search', 'anchor': run.anchor_note})
            run.anchor_note = None
        return hits

    def _checked(self, run: _Run, preferred: Hit | None) -> Hit | None:
        """The answer's memory after the question's one verifier call (None: no answer).

        With a verifier configured and not yet asked this question (Binary Tracking asks
        it at its leaf), the candidates for the target Z (the model's pick `preferred`
        first, then the hits its similarity searches showed, by per-view normalised score)
        go to it in one call; for a "Z near Y" question Y's candidates go in the same
        call. Lock-on-Y: when at least two distinct verified Y poses reorder the verified
        Z candidates to a new top-1, that is the answer. Otherwise the model's pick stands
        if the verifier confirms it, else the verifier's best; when it confirms nothing,
        or cannot be asked, the pick stands. Without a verifier nothing is checked: every
        retrieved look-alike would count as a Z or a Y, and the rerank would follow noise.
        """
        if self.verifier is None or run.verifier_asked:
            return preferred
        shown = [h for h in run.shown.values() if _similarity(h) and h.record.pose_valid]
        order = np.argsort(-np.asarray(per_view_zscores(shown)), kind='stable')
        ranked = [shown[i] for i in order]
        if preferred is not None:
            ranked = [preferred, *(h for h in ranked if h.record.id != preferred.record.id)]
        pool = self.config.bintrack.verifier_pool
        z_pool = ranked[:pool]
        if not z_pool:
            return preferred
        anchor = secondary_anchor(run.question.question)
        target = primary_target(run.last_query or run.question.question, anchor)
        step = run.verification = {'target': target, 'anchor': anchor}
        checks = [(target, self._pictures(z_pool))]
        y_pool: list[Hit] = []
        if anchor is not None:
            run.answer.retrievals += 1
            try:
                found = self.memory.search(self._scope(run, pool)(Mode.TEXT, text=anchor))
                y_pool = [hit for hit in found if hit.record.pose_valid]
            except ValueError as error:
                step['why'] = f'no search for {anchor!r}: {error}'
            if y_pool:
                checks.append((anchor, self._pictures(y_pool)))
        run.verifier_asked = True
        try:
            verdicts = self.verifier.verify_each(checks, run.deadline)
        except (LLMError, ValueError) as error:
            step['why'] = f'the verifier could not be asked: {error}'
            return preferred
        run.answer.verifier_calls += sum(verdict.calls for verdict in verdicts)
        z_verified = _confirmed(z_pool, verdicts[0].matches)
        y_verified = _confirmed(y_pool, verdicts[1].matches) if len(verdicts) > 1 else []
        reranked, applied = lock_on_rerank(z_verified, y_verified)
        step.update(
            z_verified=[hit.record.id for hit in z_verified],
            y_verified=[hit.record.id for hit in y_verified],
            lock_on_y=applied,
        )
        if applied:
            return reranked[0]
        if preferred is not None and any(h.record.id == preferred.record.id for h in z_verified):
            return preferred
        return z_verified[0] if z_verified else preferred

    def _pictures(self, hits: Sequence[Hit]) -> list[tuple[str, bytes]]:
        return [(hit.record.id, self.images(hit.record) or b'') for hit in hits]

    # -- traces --------------------------------------------------------------------------

    def _write_trace(self, run: _Run) -> None:
        if self.traces is None:
            return
        answer = run.answer
        trace = {
            'trace_id': run.trace_id,
            'question': run.question.question,
            'now': self._clock(run.question.now_ns),
            'sessions': list(run.question.sessions),
            'photo': run.question.image is not None,
            'config': asdict(self.config),
            'model': self.chat.config.model if self.chat else None,
            'steps': run.steps,
            'verification': run.verification,
            'messages': redact_images(run.messages),
            'answer': {
                'kind': answer.kind,
                'text': answer.text,
                'goal': asdict(answer.goal) if answer.goal else None,
                'target': asdict(answer.target) if answer.target else None,
                'time': self._clock(answer.time_ns) if answer.time_ns is not None else None,
                'yes': answer.yes,
                'confidence': answer.confidence,
                'evidence': [hit.record.id for hit in answer.evidence],
            },
            'lesson_ids': list(answer.lesson_ids),
            'lessons_shown': list(answer.lessons_shown),
            'lessons_note': answer.lessons_note,
            'localisation': run.localised,
            'used_fallback': answer.used_fallback,
            'fallback_reason': answer.fallback_reason,
            'cancelled': answer.cancelled,
            **{key: getattr(answer, key) for key in _COUNTS},
            'latency_s': answer.latency_s,
        }
        self.traces.write(trace)


_COUNTS = ('llm_calls', 'retrievals', 'verifier_calls', 'prompt_tokens', 'completion_tokens')


def _uncredited(answer: AgentAnswer, why: str) -> str:
    """The lessons note of an answer whose lessons are not credited, for `why`."""
    if not answer.lessons_shown:
        return answer.lessons_note
    return f'lessons shown, not credited: {why}'


def _similarity(hit: Hit) -> bool:
    """Whether a hit's score is a similarity (not seconds, metres or route order)."""
    return hit.view not in ('time', 'position', 'index')


def _zone_name(zone: str) -> str:
    """' (Europe/Berlin)' after a local time; nothing after UTC, which says so itself."""
    return '' if zone == DEFAULT_ZONE else f' ({zone})'


def _confirmed(hits: Sequence[Hit], matches: Sequence[str]) -> list[Hit]:
    """The hits the verifier named, in its order (best first)."""
    by_id = {hit.record.id: hit for hit in hits}
    return [by_id[key] for key in matches if key in by_id]


def _has_photo(run: _Run) -> bool:
    return run.question.image is not None


def _distance(hit: Hit, x: float, y: float) -> float:
    return math.hypot(hit.record.x - x, hit.record.y - y)


def _assistant_message(reply: ChatReply) -> dict[str, Any]:
    # An empty string, not null, for a reply that only calls tools: the OpenAI API takes
    # both, llama.cpp's server only the string.
    message: dict[str, Any] = {'role': 'assistant', 'content': reply.content or ''}
    if reply.tool_calls:
        message['tool_calls'] = [
            {
                'id': call.id,
                'type': 'function',
                'function': {'name': call.name, 'arguments': call.arguments},
            }
            for call in reply.tool_calls
        ]
    return message


def _tool_message(call_id: str, content: str) -> dict[str, Any]:
    return {'role': 'tool', 'tool_call_id': call_id, 'content': content}
