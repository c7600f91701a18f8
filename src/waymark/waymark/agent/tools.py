# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The agent's tools: argument schemas the model's calls are checked against.

A tool call is untrusted input. Its arguments are parsed as JSON and validated by a
strict pydantic model (no extra keys, bounded strings and numbers); anything else is
refused with a short reason the model can act on. The JSON schemas sent to the server
are generated from the same models, so what the model is told and what is accepted
cannot drift apart.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from waymark.memory.search_query import Mode, SearchQuery
from waymark.model_text import validation_problems

MAX_QUERY_CHARS = 300
MAX_ANSWER_CHARS = 1000
MAX_EVIDENCE_IDS = 20
MAX_ARGUMENT_CHARS = 20_000
MAX_COORDINATE = 1e6  # metres; a map is never this large

Coordinate = Annotated[float, Field(ge=-MAX_COORDINATE, le=MAX_COORDINATE)]
Query = Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS)]


class _Arguments(BaseModel):
    # Strict: a value must have the JSON type the schema gives (no "1.5" or true for a
    # number, no "yes" for a boolean), so what is accepted is what the model was told.
    model_config = ConfigDict(extra='forbid', allow_inf_nan=False, strict=True)


class TextSearch(_Arguments):
    """Find memories matching a description: things, signs, places, text on them."""

    query: Query = Field(description='What to look for, in your own words.')


class ImageSearch(_Arguments):
    """Find memories that look like the photo given with the question."""


class TimeSearch(_Arguments):
    """Memories recorded from a moment on, in the order they were recorded."""

    time: Query = Field(
        description='ISO 8601 date and time (in the session time zone unless it has an '
        'offset), a clock time HH:MM[:SS] in the session time zone meaning its latest '
        'occurrence before now, or the time in words: "five minutes ago", "a minute and '
        'a half after I started", "this morning at ten".'
    )


class PositionSearch(_Arguments):
    """Memories recorded nearest to a point of the map, nearest first."""

    x: Coordinate
    y: Coordinate
    z: Coordinate = 0.0


class RangeSearch(_Arguments):
    """Memories recorded within a radius of a point of the map."""

    x: Coordinate
    y: Coordinate
    radius: float = Field(gt=0.0, le=100.0, description='Metres.')


class Point(_Arguments):
    x: Coordinate
    y: Coordinate


class SearchBetween(_Arguments):
    """Find the target along the route from one place to another (Binary Tracking)."""

    target: Query = Field(description='What to find on the way.')
    from_place: Query | None = Field(None, description='Where the route starts, by name.')
    to_place: Query | None = Field(None, description='Where the route ends, by name.')
    from_position: Point | None = Field(None, description='Where the route starts, on the map.')
    to_position: Point | None = Field(None, description='Where the route ends, on the map.')

    @model_validator(mode='after')
    def _one_of_each(self) -> SearchBetween:
        if (self.from_place is None) == (self.from_position is None):
            raise ValueError('give exactly one of from_place and from_position')
        if (self.to_place is None) == (self.to_position is None):
            raise ValueError('give exactly one of to_place and to_position')
        return self


class Goal(_Arguments):
    x: Coordinate
    y: Coordinate
    z: Coordinate = 0.0
    yaw: float = Field(0.0, ge=-2 * math.pi, le=2 * math.pi, description='Radians.')


class FinalAnswer(_Arguments):
    """Answer the question and stop. Cite the memories the answer rests on."""

    kind: Literal['position', 'text', 'time', 'yes_no']
    text: str = Field(max_length=MAX_ANSWER_CHARS, description='The answer in words.')
    evidence_ids: list[Annotated[str, Field(max_length=100)]] = Field(
        default_factory=list,
        max_length=MAX_EVIDENCE_IDS,
        description='Ids of the memories that support the answer, best first.',
    )
    goal: Goal | None = Field(
        None,
        description='For a position: where the robot should go, normally the pose of the '
        'best evidence (the place it was seen from).',
    )
    time: Query | None = Field(None, description='For a time: ISO 8601 date and time.')
    yes: bool | None = Field(None, description='For a yes/no question.')
    confidence: float = Field(0.5, ge=0.0, le=1.0)


TOOLS: dict[str, type[_Arguments]] = {
    'retrieve_from_text': TextSearch,
    'retrieve_from_image': ImageSearch,
    'retrieve_from_time': TimeSearch,
    'retrieve_from_position': PositionSearch,
    'retrieve_in_range': RangeSearch,
    'search_between': SearchBetween,
    'final_answer': FinalAnswer,
}
FINAL = 'final_answer'
# SearchQuery with the question's k, sessions and level given: the scope of its searches.
Scope = Callable[..., SearchQuery]


class ToolArgumentError(ValueError):
    """A tool call that cannot be run as it stands; the message is shown to the model."""


def tool_specs(names: list[str]) -> list[dict[str, Any]]:
    """OpenAI `tools` entries for these tools, in this order."""
    specs = []
    for name in names:
        model = TOOLS[name]
        schema = model.model_json_schema()
        schema.pop('title', None)
        specs.append(
            {
                'type': 'function',
                'function': {
                    'name': name,
                    'description': ' '.join((model.__doc__ or '').split()),
                    'parameters': schema,
                },
            }
        )
    return specs


def parse_call(name: str, arguments: str, allowed: list[str]) -> _Arguments:
    """The validated arguments of a tool call, or ToolArgumentError saying what is wrong."""
    if name not in allowed:
        raise ToolArgumentError(
            f'there is no tool {name[:60]!r} here; use one of: {", ".join(allowed)}'
        )
    if len(arguments) > MAX_ARGUMENT_CHARS:
        raise ToolArgumentError(f'arguments are too long ({len(arguments)} characters)')
    try:
        # strict=False lets a raw newline inside a string through, as small models write
        # them; the schema below still decides what the value may be.
        value = json.loads(arguments or '{}', strict=False)
    except json.JSONDecodeError as error:
        raise ToolArgumentError(f'arguments are not valid JSON: {error.msg}') from error
    if not isinstance(value, dict):
        raise ToolArgumentError('arguments must be a JSON object')
    try:
        return TOOLS[name].model_validate(value)
    except ValidationError as error:
        problems = validation_problems(error, 'arguments', 5)
        raise ToolArgumentError(f'invalid arguments for {name}: {problems}') from error


def search_query(
    arguments: _Arguments,
    scope: Scope,
    image: np.ndarray | None,
    read_time: Callable[[str], int],
) -> SearchQuery:
    """The memory search a retrieval tool's call asks for, within `scope`: `image` is the
    question's photo, `read_time` turns the time the model wrote into UTC nanoseconds.
    (search_between makes several searches: see route.py.)"""
    if isinstance(arguments, TextSearch):
        return scope(Mode.TEXT, text=arguments.query)
    if isinstance(arguments, ImageSearch):
        return scope(Mode.IMAGE, image=image)
    if isinstance(arguments, TimeSearch):
        return scope(Mode.TIME, stamp_ns=read_time(arguments.time))
    if isinstance(arguments, PositionSearch):
        return scope(Mode.POSITION, position=(arguments.x, arguments.y, arguments.z))
    if isinstance(arguments, RangeSearch):
        return scope(Mode.RANGE, position=(arguments.x, arguments.y, 0.0), radius=arguments.radius)
    raise TypeError(f'{type(arguments).__name__} is not a memory search')
