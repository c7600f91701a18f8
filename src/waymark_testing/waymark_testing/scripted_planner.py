# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""A deterministic, rule-based planner behind the scripted LLM server: the "scripted"
agent of the evaluation.

It plays the model's part from the chat request alone, as a model would: the question
is read from the user message, hits from the tool results as the agent renders them
(evidence.py), the tools from those offered. It never sees ground truth. One search,
chosen by the question's form, then one answer citing what the search showed:

- "... between X and Y?" / "... on the way from X to Y?": search_between(Z, X, Y) when it
  is offered, else retrieve_from_text(Z);
- "Where was I at HH:MM[:SS]?": retrieve_from_time, answering with the pose of the hit
  recorded nearest that moment (when nothing came after it, a minute before it);
- "Where was I five minutes ago / a minute and a half after I started / this morning at
  ten?": retrieve_from_time with the time as said (the tool reads it), answering with the
  pose of the first hit, the one recorded nearest after that moment;
- "When did I first/last see X?" (or pass, visit, go by/past/through X):
  retrieve_from_text(X), answering with the time of the earliest (first) or latest (last)
  of the hits about as similar as the best;
- "Did I see X?": retrieve_from_text(X), yes when the best similarity passes a threshold;
- a question with a photo: retrieve_from_image;
- anything else: retrieve_from_text with the target phrase.

A search that fails or finds nothing gets one more while searches are left: a plain text
search for the target (for a moment, see above; for a photo none, its words say
nothing). Position answers copy the cited hit's pose as the goal; an answer the agent
refuses is given again by citation alone.
"""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from waymark.agent.spoken_time import find
from waymark_testing.scripted_llm import Reply, ScriptedLLMServer, tool_call

FINAL = 'final_answer'
# Hits within this much similarity of the best count as seeing the same thing.
SAME_THING_MARGIN = 0.05
# Nothing recorded from a moment on: look this far before it.
CLOCK_LOOKBACK_S = 60

_QUESTION = re.compile(r'^Question:\s*(?P<text>.+)$', re.M)
_PHOTO = 'A photo of the target comes with the question.'
_REJECTED = 'That answer cannot be used'
_TRAILING = re.compile(r'[\s?.!]+$')
_LEAD = re.compile(
    r'^(?:where\s+(?:is|are|was|were)|where\s+did\s+i\s+(?:see|leave|pass)|take\s+me\s+to|'
    r'find|show\s+me)\s+',
    re.I,
)
_ARTICLE = re.compile(r'^(?:the|a|an|some)\s+', re.I)
_SIGN_SAYING = re.compile(r'^sign\s+saying\s+(?P<text>.+)$', re.I)
_BETWEEN = re.compile(r'^(?P<head>.+?)\s+between\s+(?P<start>.+?)\s+and\s+(?P<end>.+)$', re.I)
_ON_THE_WAY = re.compile(
    r'^(?P<head>.+?)\s+on\s+the\s+way\s+from\s+(?P<start>.+?)\s+to\s+(?P<end>.+)$', re.I
)
_WHERE_WAS_I = re.compile(
    r'^where\s+was\s+i\s+at\s+(?P<clock>\d{1,2}:\d{2}(?::\d{2})?)(?:\s*utc)?$', re.I
)
_WHEN = re.compile(
    r'^when\s+did\s+i\s+(?:(?P<which>first|last)\s+)?'
    r'(?:see|pass|visit|(?:go|walk|drive)\s+(?:by|past|through))\s+(?P<target>.+)$',
    re.I,
)
_WHERE_WAS_I_SPOKEN = re.compile(r'^where\s+was\s+i\s+(?P<when>.+)$', re.I)
_DID_I_SEE = re.compile(r'^(?:did|have)\s+i\s+(?:see|seen|pass|passed)\s+(?P<target>.+)$', re.I)
_HIT = re.compile(
    r'^\[(?P<id>[^\]\s]+)\]\s+(?P<score>[^;]*);\s+seen\s+'
    r'(?P<when>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})(?P<zone> UTC| [+-]\d{2}:\d{2})[^;]*;\s+'
    r'(?:at x=(?P<x>-?\d+(?:\.\d+)?) y=(?P<y>-?\d+(?:\.\d+)?) z=(?P<z>-?\d+(?:\.\d+)?) m, '
    r'heading (?P<heading>-?\d+) deg|position unknown)',
    re.M,
)
_SIMILARITY = re.compile(r'similarity (?P<value>-?\d+(?:\.\d+)?)')


@dataclass(frozen=True)
class Hit:
    """A memory as the model was shown it."""

    id: str
    similarity: float | None  # None for time, position and route-order hits
    when: str  # 'YYYY-MM-DD HH:MM:SS', sorts as time (one session's zone throughout)
    pose: tuple[float, float, float, float] | None  # x, y, z, yaw (rad); None: unknown


@dataclass(frozen=True)
class Plan:
    """What the question asks, read from its words."""

    kind: str  # 'position', 'time' or 'yes_no'
    target: str  # what to look for
    route: tuple[str, str] | None = None  # (from, to) of a route question
    clock: str | None = None  # of a "where was I at" question
    spoken: str | None = None  # of a "where was I five minutes ago" question, as said
    which: str = 'first'  # of a "when did I see" question
    photo: bool = False


def parse_hits(content: str) -> list[Hit]:
    """The hits of a tool result, in the order shown."""
    hits = []
    for match in _HIT.finditer(content):
        similarity = _SIMILARITY.search(match['score'])
        pose = None
        if match['x'] is not None:
            yaw = math.radians(float(match['heading']))
            pose = (float(match['x']), float(match['y']), float(match['z']), yaw)
        score = float(similarity['value']) if similarity else None
        hits.append(Hit(match['id'], score, match['when'], pose))
    return hits


def phrase(text: str) -> str:
    """A search phrase from a noun phrase: no article, 'sign saying X' as 'X sign'."""
    text = _ARTICLE.sub('', _TRAILING.sub('', text.strip()))
    saying = _SIGN_SAYING.match(text)
    return f'{saying["text"]} sign' if saying else text


def plan(question: str, photo: bool = False) -> Plan:
    """How to go about a question, from its form alone."""
    text = _TRAILING.sub('', ' '.join(question.split()))
    if match := _WHERE_WAS_I.match(text):
        return Plan('position', text, clock=match['clock'])
    if (match := _WHERE_WAS_I_SPOKEN.match(text)) and (found := find(match['when'])):
        return Plan('position', text, spoken=found[0])
    if match := _WHEN.match(text):
        return Plan('time', phrase(match['target']), which=(match['which'] or 'first').lower())
    if match := _DID_I_SEE.match(text):
        return Plan('yes_no', phrase(match['target']))
    if photo:
        return Plan('position', phrase(_LEAD.sub('', text)), photo=True)
    for pattern in (_BETWEEN, _ON_THE_WAY):
        if match := pattern.match(text):
            head = phrase(_LEAD.sub('', match['head']))
            return Plan('position', head, route=(phrase(match['start']), phrase(match['end'])))
    return Plan('position', phrase(_LEAD.sub('', text)))


class ScriptedPlanner:
    """The policy for ScriptedLLMServer; stateless, so it answers concurrent questions."""

    def __init__(self, yes_threshold: float = 0.5) -> None:
        self.yes_threshold = yes_threshold

    def __call__(self, body: dict[str, Any]) -> Reply:
        messages = body.get('messages') or []
        offered = [tool['function']['name'] for tool in body.get('tools') or []]
        start, question = _last_question(messages)
        if question is None:
            return _final('text', 'I was not asked a question.')
        photo = any(_PHOTO in _text(m) for m in messages[start:] if m.get('role') == 'user')
        the_plan = plan(question, photo and 'retrieve_from_image' in offered)
        results = _tool_results(messages[start:])
        searches = [(name, content) for name, content in results if name != FINAL]
        found = next((parse_hits(c) for _, c in reversed(searches) if parse_hits(c)), [])
        can_search = any(name != FINAL for name in offered)
        if results and results[-1][0] == FINAL and _REJECTED in results[-1][1]:
            return self._answer(the_plan, found, cite_only=True)
        if not searches and can_search:
            return self._first_search(the_plan, offered)
        if not found and can_search and len(searches) < 2 and not the_plan.photo:
            return self._second_search(the_plan, offered)
        return self._answer(the_plan, found)

    def _first_search(self, the_plan: Plan, offered: list[str]) -> Reply:
        if the_plan.clock is not None and 'retrieve_from_time' in offered:
            return tool_call('retrieve_from_time', {'time': the_plan.clock})
        if the_plan.spoken is not None and 'retrieve_from_time' in offered:
            return tool_call('retrieve_from_time', {'time': the_plan.spoken})
        if the_plan.photo:
            return tool_call('retrieve_from_image', {})
        if the_plan.route is not None and 'search_between' in offered:
            start, end = the_plan.route
            arguments = {'target': the_plan.target, 'from_place': start, 'to_place': end}
            return tool_call('search_between', arguments)
        return tool_call('retrieve_from_text', {'query': the_plan.target})

    def _second_search(self, the_plan: Plan, offered: list[str]) -> Reply:
        """After a search that showed nothing: for a moment, what came shortly before it
        (nothing was recorded from then on); otherwise the target in plain words."""
        if the_plan.clock is not None and 'retrieve_from_time' in offered:
            earlier = (_seconds(the_plan.clock) - CLOCK_LOOKBACK_S) % 86400
            clock = f'{earlier // 3600:02d}:{earlier // 60 % 60:02d}:{earlier % 60:02d}'
            return tool_call('retrieve_from_time', {'time': clock})
        return tool_call('retrieve_from_text', {'query': the_plan.target})

    def _answer(self, the_plan: Plan, hits: list[Hit], cite_only: bool = False) -> Reply:
        if the_plan.kind == 'yes_no':
            best = hits[0] if hits else None
            yes = bool(
                best and best.similarity is not None and best.similarity > self.yes_threshold
            )
            cited = [best.id] if yes else []
            return _final('yes_no', 'Yes.' if yes else 'No.', evidence_ids=cited, yes=yes)
        if the_plan.kind == 'time':
            chosen = _first_or_last(hits, the_plan.which)
            if chosen is None:
                return _final('text', f'I found no memory of {the_plan.target}.', confidence=0.0)
            return _final('time', f'At {chosen.when}.', evidence_ids=[chosen.id])
        placed = [hit for hit in hits if hit.pose is not None]
        if the_plan.clock is not None:  # the memory recorded nearest the moment asked about
            asked = _seconds(the_plan.clock)
            placed.sort(key=lambda hit: abs(_seconds(hit.when[11:]) - asked))
        placed = placed[0] if placed else None
        if placed is None:
            return _final('text', f'I found no memory of {the_plan.target}.', confidence=0.0)
        x, y, z, yaw = placed.pose
        goal = None if cite_only else {'x': x, 'y': y, 'z': z, 'yaw': yaw}
        return _final(
            'position',
            f'Seen from x={x:.2f} y={y:.2f}.',
            evidence_ids=[placed.id],
            goal=goal,
            confidence=placed.similarity if placed.similarity is not None else 0.5,
        )


@contextlib.contextmanager
def planner_server(
    yes_threshold: float = 0.5, model: str = 'scripted/planner'
) -> Iterator[ScriptedLLMServer]:
    """A started ScriptedLLMServer answering with `ScriptedPlanner`; closed on exit."""
    server = ScriptedLLMServer(ScriptedPlanner(yes_threshold), model=model)
    try:
        yield server
    finally:
        server.close()


def _seconds(clock: str) -> int:
    """Seconds into the day of 'HH:MM' or 'HH:MM:SS'."""
    hours, minutes, *seconds = (int(part) for part in clock.split(':'))
    return hours * 3600 + minutes * 60 + (seconds[0] if seconds else 0)


def _first_or_last(hits: list[Hit], which: str) -> Hit | None:
    """Of the hits about as similar as the best, the earliest or the latest."""
    if not hits:
        return None
    scores = [hit.similarity for hit in hits if hit.similarity is not None]
    top = max(scores, default=None)
    close = [
        hit
        for hit in hits
        if top is None or (hit.similarity is not None and hit.similarity >= top - SAME_THING_MARGIN)
    ]
    pick = max if which == 'last' else min
    return pick(close, key=lambda hit: hit.when)


def _final(kind: str, text: str, **fields: Any) -> Reply:
    arguments = {'kind': kind, 'text': text, **{k: v for k, v in fields.items() if v is not None}}
    arguments.setdefault('confidence', 0.5)
    arguments['confidence'] = max(0.0, min(1.0, float(arguments['confidence'])))
    return tool_call(FINAL, arguments)


def _last_question(messages: list[dict[str, Any]]) -> tuple[int, str | None]:
    """Index and text of the last user message asking a question."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.get('role') == 'user':
            match = _QUESTION.search(_text(message))
            if match:
                return index, match['text'].strip()
    return 0, None


def _text(message: dict[str, Any]) -> str:
    content = message.get('content')
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: keep the text ones
        return '\n'.join(p.get('text', '') for p in content if isinstance(p, dict))
    return ''


def _tool_results(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(tool name, result text) for each tool result, in order."""
    names = {}
    for message in messages:
        for call in message.get('tool_calls') or []:
            names[call.get('id')] = call.get('function', {}).get('name', '')
    results = [m for m in messages if m.get('role') == 'tool']
    return [(names.get(m.get('tool_call_id'), ''), _text(m)) for m in results]
