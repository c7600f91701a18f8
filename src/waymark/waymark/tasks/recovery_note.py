# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The recovery note: what a failed attempt hands to the next one.

Searched and excluded stay apart: driving to a place does not prove the target is not
there, so a place is only excluded with the observation that rules it out, and an
exclusion without one is refused. A note written by a model is untrusted text: it is
parsed strictly against a bounded schema and never evaluated. When no model writes one,
the runner builds it from its own records (stops, judge verdicts, tracking).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from waymark.model_text import first_json_object, validation_problems
from waymark.tasks.outcomes import JudgeVerdict, Scope, VerdictKind

# A note is a short file; these bound what one may hold.
MAX_NOTE_CHARS = 6_000
MAX_ITEMS = 12
MAX_ITEM_CHARS = 300

_Item = Annotated[str, Field(min_length=1, max_length=MAX_ITEM_CHARS)]
_ScopeName = Literal['attempt', 'place', 'room', 'floor', 'house']


@dataclass(frozen=True)
class Exclusion:
    """A place ruled out, and the observation that rules it out."""

    place: str
    evidence: str

    def __post_init__(self) -> None:
        if not self.place.strip():
            raise ValueError('an exclusion must name the place it rules out')
        if not self.evidence.strip():
            raise ValueError(f'the exclusion of {self.place[:80]!r} cites no observation')


@dataclass(frozen=True)
class RecoveryNote:
    """The digest's (S, R, a*, U, U~, u^): searched places, evidence-backed exclusions,
    the last reliable anchor, untried options, uncertainties and the suggested scope."""

    searched: tuple[str, ...] = ()
    exclusions: tuple[Exclusion, ...] = ()
    anchor: str = ''
    untried: tuple[str, ...] = ()
    uncertainties: tuple[str, ...] = ()
    suggested_scope: Scope | None = None

    def __post_init__(self) -> None:
        """The bounds a parsed note has, so that every note survives its JSON round trip."""
        lists = {
            'searched': self.searched,
            'exclusions': self.exclusions,
            'untried': self.untried,
            'uncertainties': self.uncertainties,
        }
        for name, items in lists.items():
            if len(items) > MAX_ITEMS:
                raise ValueError(f'{name} has {len(items)} items, over the limit of {MAX_ITEMS}')
        texts = [*self.searched, *self.untried, *self.uncertainties]
        texts += [text for item in self.exclusions for text in (item.place, item.evidence)]
        for text in texts:
            if not text.strip() or len(text) > MAX_ITEM_CHARS:
                raise ValueError(f'note items need 1 to {MAX_ITEM_CHARS} characters: {text[:80]!r}')
        if len(self.anchor) > MAX_ITEM_CHARS:
            raise ValueError(f'the anchor is over {MAX_ITEM_CHARS} characters')
        if (size := len(self.to_json())) > MAX_NOTE_CHARS:
            raise ValueError(f'the note is {size} characters, over the limit of {MAX_NOTE_CHARS}')

    def to_json(self) -> str:
        return json.dumps(
            {
                'searched': list(self.searched),
                'exclusions': [
                    {'place': item.place, 'evidence': item.evidence} for item in self.exclusions
                ],
                'anchor': self.anchor,
                'untried': list(self.untried),
                'uncertainties': list(self.uncertainties),
                'suggested_scope': (
                    None if self.suggested_scope is None else self.suggested_scope.name.lower()
                ),
            },
            ensure_ascii=False,
        )

    @classmethod
    def from_json(cls, text: str) -> RecoveryNote:
        return parse_note(text)


class _ExclusionModel(BaseModel):
    model_config = ConfigDict(extra='forbid', strict=True)

    place: _Item
    evidence: _Item


class _NoteModel(BaseModel):
    """The note's shape; strict, so no key is guessed and no size is unbounded."""

    model_config = ConfigDict(extra='forbid', strict=True)

    searched: list[_Item] = Field(default_factory=list, max_length=MAX_ITEMS)
    exclusions: list[_ExclusionModel] = Field(default_factory=list, max_length=MAX_ITEMS)
    anchor: str = Field('', max_length=MAX_ITEM_CHARS)
    untried: list[_Item] = Field(default_factory=list, max_length=MAX_ITEMS)
    uncertainties: list[_Item] = Field(default_factory=list, max_length=MAX_ITEMS)
    suggested_scope: _ScopeName | None = None


def parse_note(text: str) -> RecoveryNote:
    """The note in a model's text (its first JSON object, so a code fence or a sentence
    around it does no harm). Raises ValueError saying why a note cannot be used."""
    if len(text) > MAX_NOTE_CHARS:
        raise ValueError(f'the note is {len(text)} characters, over the limit of {MAX_NOTE_CHARS}')
    found = first_json_object(text)
    if found is None:
        raise ValueError('the note holds no JSON object')
    try:
        model = _NoteModel.model_validate(found)
    except ValidationError as error:
        problems = validation_problems(error, 'note', 3)
        raise ValueError(f'the note does not fit the format: {problems}') from None
    return RecoveryNote(
        searched=tuple(model.searched),
        exclusions=tuple(Exclusion(item.place, item.evidence) for item in model.exclusions),
        anchor=model.anchor,
        untried=tuple(model.untried),
        uncertainties=tuple(model.uncertainties),
        suggested_scope=(
            None if model.suggested_scope is None else Scope[model.suggested_scope.upper()]
        ),
    )


@dataclass(frozen=True)
class Stop:
    """Where an attempt stopped, as the runner recorded it: the place's label (a place
    name or the memory entry driven to) and the judge's check there, None when none ran."""

    place: str
    verdict: JudgeVerdict | None = None

    def __post_init__(self) -> None:
        if not self.place.strip():
            raise ValueError('a stop needs the label of the place it was at')


def mechanical_note(
    stops: Sequence[Stop],
    untried: Sequence[str] = (),
    anchor: str = '',
    tracking_lost: bool = False,
    suggested_scope: Scope | None = None,
) -> RecoveryNote:
    """A note from the runner's own records, no model involved. Every stop was searched;
    only a definite INCOMPLETE verdict with evidence excludes a place, citing what the
    judge saw. A failed or missing check is an uncertainty, never an exclusion. Longer
    records are cut to the note's bounds, the oldest stops dropped first."""
    recent = list(stops)[-MAX_ITEMS:]
    options = tuple(_clip(option) for option in untried if option.strip())[:MAX_ITEMS]
    while True:
        try:
            return _note_from(recent, options, _clip(anchor), tracking_lost, suggested_scope)
        except ValueError:
            if not recent:
                raise
            recent = recent[1:]  # over the size limit: the oldest stop goes first


def _note_from(
    stops: list[Stop],
    untried: tuple[str, ...],
    anchor: str,
    tracking_lost: bool,
    suggested_scope: Scope | None,
) -> RecoveryNote:
    exclusions: list[Exclusion] = []
    uncertainties: list[str] = []
    for stop in stops:
        place = _clip(stop.place)
        verdict = stop.verdict
        if verdict is None:
            uncertainties.append(_clip(f'no check ran at {place}'))
        elif verdict.verdict is VerdictKind.INCOMPLETE and verdict.evidence.strip():
            cited = f'{verdict.source or "judge"} at the stop: {verdict.evidence}'
            exclusions.append(Exclusion(place, _clip(cited)))
        elif verdict.verdict is VerdictKind.UNKNOWN:
            why = verdict.error or 'no definite verdict'
            uncertainties.append(_clip(f'the check at {place} was undecided: {why}'))
    if tracking_lost:
        uncertainties.append('tracking was lost; positions since then are not reliable')
    return RecoveryNote(
        searched=tuple(dict.fromkeys(_clip(stop.place) for stop in stops)),
        exclusions=tuple(exclusions),
        anchor=anchor,
        untried=untried,
        uncertainties=tuple(uncertainties[-MAX_ITEMS:]),
        suggested_scope=suggested_scope,
    )


def _clip(text: str) -> str:
    return text if len(text) <= MAX_ITEM_CHARS else text[: MAX_ITEM_CHARS - 3] + '...'
