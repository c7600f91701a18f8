# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The question file: schema, loader and writer.

A question file is hand-edited as often as it is generated, so the loader turns every
problem into one line naming the file, the entry (index and id) and the field, instead of
a pydantic traceback. docs/questions.md documents the format.
"""

from __future__ import annotations

import json
import re
from enum import Enum
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator
from pydantic_core import PydanticCustomError

_ANSWER_FIELD = 'answer_field'  # error type whose context names the offending field


class Category(str, Enum):
    """What a question tests (RAVEN and BinTrack taxonomies, see docs/questions.md)."""

    BASIC = 'basic'
    LOCAL = 'local'
    ROUTE = 'route'
    TEMPORAL = 'temporal'
    YES_NO = 'yes_no'
    IMAGE = 'image'
    SPOKEN = 'spoken'


class AnswerType(str, Enum):
    """What the answer is scored as."""

    POSITION = 'position'
    TIME = 'time'
    YES_NO = 'yes_no'
    TEXT = 'text'


def _field_error(field: str, why: str, **context: Any) -> PydanticCustomError:
    return PydanticCustomError(
        _ANSWER_FIELD, '{field}: {why}', {'field': field, 'why': why, **context}
    )


class Question(BaseModel):
    """One question and its ground truth."""

    model_config = ConfigDict(extra='forbid', frozen=True, allow_inf_nan=False)

    id: str
    category: Category
    question: str
    answer_type: AnswerType
    target: str | None = None
    position: tuple[float, float, float] | None = None
    observed_from: list[tuple[float, float, float]] = []
    time_ns: int | None = None
    yes: bool | None = None
    text: str | None = None
    image: str | None = None
    # When the question is asked (UTC ns): what "five minutes ago" counts back from. None:
    # the answerer's own now (just after the recording ends).
    now_ns: int | None = None

    @field_validator('id', 'question')
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError('must not be empty')
        return value

    @field_validator('time_ns', 'now_ns')
    @classmethod
    def _not_before_epoch(cls, value: int | None) -> int | None:
        if value is not None and value < 0:
            raise ValueError('must be UTC nanoseconds, not negative')
        return value

    @model_validator(mode='after')
    def _answer_present(self) -> Question:
        required = {
            AnswerType.POSITION: ('position', 'required for a position answer'),
            AnswerType.TIME: ('time_ns', 'required for a time answer'),
            AnswerType.YES_NO: ('yes', 'required for a yes_no answer'),
            AnswerType.TEXT: ('text', 'required for a text answer'),
        }
        field, why = required[self.answer_type]
        if getattr(self, field) is None:
            raise _field_error(field, why)
        if self.category is Category.IMAGE and not self.image:
            raise _field_error('image', 'required for an image question')
        return self


class QuestionSet(BaseModel):
    """The questions made for one world (and optionally one bag of it)."""

    model_config = ConfigDict(extra='forbid')

    version: Literal[1] = 1
    world: str | None = None
    bag: str | None = None
    questions: list[Question]

    @model_validator(mode='after')
    def _unique_ids(self) -> QuestionSet:
        first: dict[str, int] = {}
        for index, question in enumerate(self.questions):
            if question.id in first:
                raise _field_error(
                    'id', f'duplicate of questions[{first[question.id]}]', index=index
                )
            first[question.id] = index
        return self


class _Loader(yaml.SafeLoader):
    """YAML 1.2 booleans (true/false only): under YAML 1.1 the field name `yes` is a bool."""


_BOOL = 'tag:yaml.org,2002:bool'
_Loader.yaml_implicit_resolvers = {
    first: [r for r in resolvers if r[0] != _BOOL]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(_BOOL, re.compile(r'^(?:true|True|TRUE|false|False|FALSE)$'), 'tTfF')


class QuestionFileError(ValueError):
    """A question file that cannot be read or does not match the schema."""


def load_questions(path: str | Path) -> QuestionSet:
    """Read a .json, .yaml or .yml question file; QuestionFileError says where it is wrong."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in ('.json', '.yaml', '.yml'):
        raise QuestionFileError(f'{path}: expected a .json, .yaml or .yml file')
    try:
        text = path.read_text(encoding='utf-8')
    except (OSError, UnicodeDecodeError) as exc:
        raise QuestionFileError(f'{path}: cannot read: {exc}') from exc
    data, nodes = _parse_json(path, text) if suffix == '.json' else _parse_yaml(path, text)
    try:
        return QuestionSet.model_validate(data)
    except ValidationError as exc:
        problems = [_describe(path, data, nodes, error) for error in exc.errors()]
        raise QuestionFileError('\n'.join(problems)) from exc


def save_questions(questions: QuestionSet, path: str | Path) -> None:
    """Write JSON with sorted keys so regenerated files diff cleanly."""
    data = questions.model_dump(mode='json', exclude_none=True)
    text = json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False, allow_nan=False)
    Path(path).write_text(text + '\n', encoding='utf-8')


def _parse_json(path: Path, text: str) -> tuple[Any, None]:
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        where = f'line {exc.lineno}, column {exc.colno}'
        raise QuestionFileError(f'{path}: {where}: invalid JSON: {exc.msg}') from exc


def _parse_yaml(path: Path, text: str) -> tuple[Any, yaml.Node | None]:
    """Parse keeping the node tree, whose marks give the line of a schema error."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f'line {mark.line + 1}, column {mark.column + 1}: ' if mark else ''
        raise QuestionFileError(f'{path}: {where}invalid YAML: {exc.problem}') from exc
    except yaml.YAMLError as exc:
        raise QuestionFileError(f'{path}: invalid YAML: {exc}') from exc
    finally:
        loader.dispose()
    return data, node


def _describe(path: Path, data: Any, root: yaml.Node | None, error: dict) -> str:
    """One line: file[, line], entry (index and id), field path, reason."""
    loc = list(error['loc'])
    reason = error['msg']
    context = error.get('ctx') or {}
    if error['type'] == _ANSWER_FIELD:
        if 'index' in context:  # raised by the set, whose location is the file itself
            loc += ['questions', context['index']]
        loc.append(context['field'])
        reason = context['why']
    where = ''
    for depth, step in enumerate(loc):
        if not isinstance(step, int):
            where += f'.{step}' if where else str(step)
            continue
        where += f'[{step}]'
        entry_id = _entry_id(data, step) if depth == 1 and loc[0] == 'questions' else None
        if entry_id is not None:
            where += f' (id {entry_id!r})'
    line = _line_of(root, loc)
    prefix = f'{path}:{line}' if line is not None else str(path)
    return f'{prefix}: {where or "file"}: {reason}'


def _entry_id(data: Any, index: int) -> Any:
    entries = data.get('questions') if isinstance(data, dict) else None
    if isinstance(entries, list) and index < len(entries) and isinstance(entries[index], dict):
        return entries[index].get('id')
    return None


def _line_of(node: yaml.Node | None, loc: list) -> int | None:
    """1-based line of the deepest YAML node on the error's location path."""
    if node is None:
        return None
    for step in loc:
        child = None
        if isinstance(node, yaml.MappingNode):
            child = next((v for k, v in node.value if k.value == step), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(step, int):
            child = node.value[step] if step < len(node.value) else None
        if child is None:
            break
        node = child
    return node.start_mark.line + 1
