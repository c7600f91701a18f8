# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Looking at the candidates: a VLM says which retrieved pictures really show the target.

Retrieval ranks by embedding similarity, which confuses look-alikes (a red door for the
red door). Before the agent commits to an answer it shows the best candidates' pictures
to a VLM and keeps those the model says show the target (BinTrack's VERIFY step).

All candidates go in one request, each picture after its own "Candidate N:" label, so a
verification costs one call however many candidates there are (up to `max_images`), and
checks of several targets (lock-on-Y's Z and Y) share one request too (`verify_each`). The
model is asked for a small JSON object; its answer is untrusted text, so it is only
searched for the first JSON object, validated strictly, and never evaluated. An answer
that cannot be read is a verdict with no choice and a `parse_error`, not an exception:
the agent can go on without it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from waymark.agent.evidence import quote
from waymark.agent.llm import ChatClient, LLMConfig, image_part
from waymark.model_text import first_json_object, validation_problems

# Enough for any description of a thing to look for; longer targets are cut.
MAX_TARGET_CHARS = 300
# Only this much of an answer is searched for JSON (max_tokens bounds it anyway).
_MAX_ANSWER_CHARS = 20_000


@dataclass(frozen=True)
class VerifierConfig:
    """The VLM to verify with and how much to show it; see `Verifier`."""

    llm: LLMConfig
    max_images: int = 12  # pictures per call; lower-ranked candidates beyond it are dropped
    max_tokens: int = 200

    def __post_init__(self) -> None:
        if not self.llm.accepts_images:
            raise ValueError(f'the verifier needs a model that accepts images: {self.llm.model}')
        if self.max_images < 1 or self.max_tokens < 1:
            raise ValueError(
                f'max_images and max_tokens must be at least 1: {self.max_images}, '
                f'{self.max_tokens}'
            )


@dataclass(frozen=True)
class Verdict:
    """Which candidates show the target.

    `matches` are candidate ids, best first; `chosen` is the first of them, or None.
    `rejected` counts numbers the model gave that name no candidate; `dropped` counts
    candidates beyond `max_images` and `skipped` those without a picture, neither shown.
    """

    chosen: str | None
    matches: list[str] = field(default_factory=list)
    rejected: int = 0
    parse_error: str = ''
    calls: int = 0
    images: int = 0
    dropped: int = 0
    skipped: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0


class _Answer(BaseModel):
    """The answer's shape; strict, so that "2", 2.0 and true are not taken for 2."""

    model_config = ConfigDict(strict=True, extra='ignore')

    matches: list[int]
    best: int | None = None


class Verifier:
    """Asks the VLM which candidates show a target, in one call per verification."""

    def __init__(self, chat: ChatClient, config: VerifierConfig) -> None:
        self.chat = chat
        self.config = config

    @classmethod
    def sharing(cls, config: VerifierConfig, chat: ChatClient | None) -> Verifier:
        """A verifier that talks through the agent's `chat` when it is the same model on
        the same server with the same key, so that both use one client."""
        llm = config.llm
        same = chat is not None and (llm.base_url, llm.model, llm.api_key) == (
            chat.config.base_url,
            chat.config.model,
            chat.config.api_key,
        )
        return cls(chat if same else ChatClient(llm), config)

    def verify(
        self, target: str, candidates: Sequence[tuple[str, bytes]], deadline: float | None = None
    ) -> Verdict:
        """Which of `candidates` ((id, JPEG) pairs, best ranked first) show `target`.

        Raises LLMUnavailableError when the model cannot be asked (the caller falls back
        to the ranking) and LLMError when its reply is unusable; an answer that cannot be
        read gives a verdict with `parse_error` instead.
        """
        quoted = quote(target, MAX_TARGET_CHARS)
        if quoted == '""':
            raise ValueError('nothing to verify: the target is empty')
        pictured = [(key, jpeg) for key, jpeg in candidates if jpeg]
        shown = pictured[: self.config.max_images]
        counts = {'dropped': len(pictured) - len(shown), 'skipped': len(candidates) - len(pictured)}
        if not shown:
            return Verdict(chosen=None, **counts)
        reply = self.chat.complete(
            [{'role': 'user', 'content': _request_content(quoted, [jpeg for _, jpeg in shown])}],
            deadline=deadline,
            max_tokens=self.config.max_tokens,
        )
        numbers, rejected, parse_error = parse_answer(reply.content, len(shown))
        matches = [shown[number - 1][0] for number in numbers]
        return Verdict(
            chosen=matches[0] if matches else None,
            matches=matches,
            rejected=rejected,
            parse_error=parse_error,
            calls=1,
            images=len(shown),
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
            latency_s=reply.latency_s,
            **counts,
        )

    def verify_each(
        self,
        checks: Sequence[tuple[str, Sequence[tuple[str, bytes]]]],
        deadline: float | None = None,
    ) -> list[Verdict]:
        """One verdict per (target, candidates) check, all from ONE call: lock-on-Y asks
        about the target Z and the place Y together, so a question costs one verification.

        The candidates of all checks are shown once each (by id, at most `max_images`,
        shared out in turn so every check keeps its best ranked), and the model answers
        with one match list per target. Errors as in `verify`; every verdict of the call
        reports the call once, in the first verdict's `calls`.
        """
        if not checks:
            return []
        if len(checks) == 1:
            return [self.verify(*checks[0], deadline)]
        quoted = [quote(target, MAX_TARGET_CHARS) for target, _ in checks]
        if '""' in quoted:
            raise ValueError('nothing to verify: a target is empty')
        shown = _shared_pictures(
            [[c for c in cands if c[1]] for _, cands in checks], self.config.max_images
        )
        if not shown:
            return [Verdict(chosen=None) for _ in checks]
        reply = self.chat.complete(
            [{'role': 'user', 'content': _batch_content(quoted, [jpeg for _, jpeg in shown])}],
            deadline=deadline,
            max_tokens=self.config.max_tokens,
        )
        answers, parse_error = parse_batch_answer(reply.content, len(checks), len(shown))
        verdicts = []
        for position, ((_, candidates), (numbers, rejected)) in enumerate(
            zip(checks, answers, strict=True)
        ):
            offered = {key for key, _ in candidates}
            matches = [shown[n - 1][0] for n in numbers if shown[n - 1][0] in offered]
            first = position == 0
            verdicts.append(
                Verdict(
                    chosen=matches[0] if matches else None,
                    matches=matches,
                    rejected=rejected,
                    parse_error=parse_error,
                    calls=1 if first else 0,
                    images=len(shown) if first else 0,
                    prompt_tokens=reply.prompt_tokens if first else 0,
                    completion_tokens=reply.completion_tokens if first else 0,
                    latency_s=reply.latency_s if first else 0.0,
                )
            )
        return verdicts


def _shared_pictures(
    lists: Sequence[Sequence[tuple[str, bytes]]], limit: int
) -> list[tuple[str, bytes]]:
    """Candidates of several checks, each id once, taken in turn from each list's best
    ranked until `limit`."""
    shown: dict[str, bytes] = {}
    for rank in range(max((len(items) for items in lists), default=0)):
        for items in lists:
            if len(shown) == limit:
                return list(shown.items())
            if rank < len(items):
                shown.setdefault(*items[rank])
    return list(shown.items())


def _batch_content(quoted: Sequence[str], pictures: list[bytes]) -> list[dict[str, Any]]:
    """The user message of a several-target check: the numbered targets, each picture
    after its label, then the answer format (one entry per target, in order)."""
    targets = '; '.join(f'target {n}: {q}' for n, q in enumerate(quoted, start=1))
    content: list[dict[str, Any]] = [
        {
            'type': 'text',
            'text': (
                f'A robot is looking for {len(quoted)} things ({targets}). Its memory '
                f'returned the {len(pictures)} numbered photos below as candidates. Some may '
                'show something only similar, or nothing relevant at all.'
            ),
        }
    ]
    content += _numbered(pictures)
    content.append(
        {
            'type': 'text',
            'text': (
                'For each target in turn, which candidates clearly show it? Judge each photo '
                'by itself, and do not count a look-alike of a different kind or with '
                'different text. Answer with one JSON object and nothing else: {"targets": '
                '[one {"matches": [numbers of the candidates that show it, surest first], '
                '"best": the number of the clearest, or null} per target, in the order '
                'given]}.'
            ),
        }
    )
    return content


class _BatchAnswer(BaseModel):
    model_config = ConfigDict(strict=True, extra='ignore')

    targets: list[_Answer]


def parse_batch_answer(
    text: str, targets: int, count: int
) -> tuple[list[tuple[list[int], int]], str]:
    """Per target (numbers best first, out-of-range numbers dropped), and a parse error
    or ''. A reply that cannot be read, or lists another number of targets, gives no
    match for any target rather than matches assigned to the wrong one."""
    nothing = [([], 0) for _ in range(targets)]
    found = first_json_object(text[:_MAX_ANSWER_CHARS])
    if found is None:
        return nothing, f'no JSON object in the answer: {_clip(text)!r}'
    try:
        answer = _BatchAnswer.model_validate(found)
    except ValidationError as error:
        return nothing, _clip(f'the answer does not fit the format: {error.errors()[0]["msg"]}')
    if len(answer.targets) != targets:
        return nothing, f'the answer lists {len(answer.targets)} targets, not {targets}'
    return [_numbers(item, count) for item in answer.targets], ''


def _request_content(quoted: str, pictures: list[bytes]) -> list[dict[str, Any]]:
    """The user message: the task (`quoted`, a JSON string literal), each picture after its
    label, then the answer format."""
    content: list[dict[str, Any]] = [
        {
            'type': 'text',
            'text': (
                f'A robot is looking for this: {quoted}. Its memory returned the '
                f'{len(pictures)} numbered photos below as candidates. Some may show '
                'something only similar, or nothing relevant at all.'
            ),
        }
    ]
    content += _numbered(pictures)
    content.append(
        {
            'type': 'text',
            'text': (
                f'Which candidates clearly show {quoted}? Judge each photo by itself, and do '
                'not count a look-alike of a different kind or with different text. Answer '
                'with one JSON object and nothing else: {"matches": [numbers of the '
                'candidates that show it, surest first], "best": the number of the one that '
                'shows it most clearly, or null when none does}.'
            ),
        }
    )
    return content


def parse_answer(text: str, count: int) -> tuple[list[int], int, str]:
    """Candidate numbers (1..count) from the model's answer, best first, without repeats.

    Returns (numbers, how many distinct out-of-range numbers were dropped, parse error or
    ''). The first JSON object in the text is used, so a code fence or prose around it
    does no harm.
    """
    found = first_json_object(text[:_MAX_ANSWER_CHARS])
    if found is None:
        return [], 0, f'no JSON object in the answer: {_clip(text)!r}'
    try:
        answer = _Answer.model_validate(found)
    except ValidationError as error:
        problems = validation_problems(error, 'answer')
        return [], 0, _clip(f'the answer does not fit the format: {problems}')
    numbers, rejected = _numbers(answer, count)
    return numbers, rejected, ''


def _numbers(answer: _Answer, count: int) -> tuple[list[int], int]:
    """The answer's candidate numbers in 1..count, best first, without repeats, and how
    many distinct out-of-range ones were dropped."""
    ordered = ([answer.best] if answer.best is not None else []) + answer.matches
    numbers: list[int] = []
    rejected: set[int] = set()
    for number in ordered:
        if not 1 <= number <= count:
            rejected.add(number)
        elif number not in numbers:
            numbers.append(number)
    return numbers, len(rejected)


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 3] + '...'


def _numbered(pictures: list[bytes]) -> list[dict[str, Any]]:
    """Each picture after its label, numbered from 1 as the answer refers to them."""
    content: list[dict[str, Any]] = []
    for number, jpeg in enumerate(pictures, start=1):
        content.append({'type': 'text', 'text': f'Candidate {number}:'})
        content.append(image_part(jpeg))
    return content
