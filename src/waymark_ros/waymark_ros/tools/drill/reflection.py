# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Reflection under kill -9: reasoner_node dies with verified outcomes waiting for their
lessons, some reflected and some not, and every outcome it acknowledged must end as a card.

The model stands in on 127.0.0.1 (`LessonModel`): it answers questions at once and, while
it is up, reflects each outcome into the lesson of its question's kind; while it is away it
answers HTTP 503, so the outcomes wait in reasoner_node's queue when the kill lands. An
outcome in flight at a kill may be written twice: the second copy merges into the first."""

from __future__ import annotations

import json
import random
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from std_msgs.msg import String

from waymark_interfaces.srv import ExportLessons, Feedback, Query
from waymark_ros.ros import qos
from waymark_ros.tools.drill.drills import (
    Settings,
    finish,
    memory_params,
    reasoner_params,
    seed_memory,
)
from waymark_ros.tools.drill.llm_faults import completion
from waymark_ros.tools.drill.report import DrillResult
from waymark_ros.tools.drill.stack import Stack, wait_until

REQUEST_TIMEOUT_S = 30.0
SETTLE_TIMEOUT_S = 120.0
PER_ROUND = 3  # outcomes acknowledged per round, before the kill
REFLECT_S = 1.0  # how long the model takes over a reflection: a kill finds one in flight
# Questions of different kinds and the lesson each reflects into (none merges with another).
KINDS = (
    ('where did I last see the fire extinguisher?', 'When asked for the latest sighting, '
     'order the sightings by time, avoid the best match, and check none is newer.'),
    ('which shop is between the office and the station?', 'When asked what lies on a route, '
     'find the route first, avoid places off it, and check the order along it.'),
    ('how many chairs were in the meeting room?', 'When asked to count things, merge views '
     'of one place, avoid counting a thing twice, and check each view once.'),
    ('what was written on the sign by the lift?', 'When asked what a sign says, read it from '
     'its nearest view, avoid guessing cut words, and check another view agrees.'),
    ('is the kitchen door usually open?', 'When asked about a habit of a place, gather every '
     'visit, avoid judging from one, and check the visits span several days.'),
    ('what colour is the sofa in the lounge?', 'When asked about a colour, prefer views in '
     'daylight, avoid dim frames, and check two views agree.'),
    ('when did the delivery van arrive?', 'When asked for the moment of an arrival, find the '
     'first view of the thing, avoid later views, and check the one before lacks it.'),
    ('is there a bench near the fountain?', 'When asked whether two things are near, find each '
     'one first, avoid a single blurry view, and check their distance on the map.'),
    ('which way does the corridor turn after the lab?', 'When asked about a turn, follow the '
     'route in recording order, avoid the reverse pass, and check the heading change.'),
)  # fmt: skip
SYSTEM_START = 'You help a robot learn habits'  # how a reflection request is told apart


class LessonModel:
    """Answers every question at once; reflections with their kind's lesson after
    `REFLECT_S`, or HTTP 503 while `away` is set."""

    def __init__(self) -> None:
        self.away = threading.Event()
        self.reflections = 0
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(('127.0.0.1', 0), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.model = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.05,), name='lesson-model', daemon=True
        )
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f'http://127.0.0.1:{self._httpd.server_address[1]}/v1'

    def reply(self, body: dict) -> tuple[int, bytes]:
        messages = body.get('messages') or [{}]
        if not str(messages[0].get('content', '')).startswith(SYSTEM_START):
            answer = json.dumps({'kind': 'none', 'text': 'Not seen.', 'confidence': 0.2})
            return 200, completion(None, [('final_answer', answer)])
        if self.away.is_set():
            return 503, b'{"error": {"message": "loading", "type": "server_error"}}'
        time.sleep(REFLECT_S)
        shown = json.dumps(messages)
        lesson = next((lesson for task, lesson in KINDS if task in shown), KINDS[0][1])
        with self._lock:
            self.reflections += 1
        reply = {'summary': 'A checked answer of this kind.', 'transferable_lesson': lesson}
        return 200, completion(json.dumps(reply), [])

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5.0)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get('Content-Length', 0))) or b'{}')
        status, data = self.server.model.reply(body)  # type: ignore[attr-defined]
        self.send_response(status)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def kill_reasoner_mid_reflections(stack: Stack, settings: Settings) -> DrillResult:
    result = DrillResult('kill -9 reasoner_node mid-reflections')
    rng = random.Random(settings.seed)
    counts: dict = {}
    stack.node.create_subscription(
        String, 'lessons/reflections', lambda m: counts.update(json.loads(m.data)), qos.latched()
    )
    model = LessonModel()
    try:
        stack.start('memory_node', **memory_params(stack), **{'lessons.mode': 'acquire'})
        params = reasoner_params(stack, settings, model.base_url) | {
            'lessons.reflect': True,
            'lessons.reflect_dir': str(stack.root / 'reflections'),
            'lessons.reflect_retry_s': 0.5,
            'lessons.reflect_max_attempts': 100,
            'llm.max_retries': 0,
        }
        stack.start('reasoner_node', **params)
        stack.wait_ready('memory_node')
        stack.wait_ready('reasoner_node')
        seed_memory(stack)
        acknowledged: list[str] = []  # the questions whose outcome was queued
        for kill in range(settings.kills):
            model.away.set()
            for i in range(PER_ROUND):
                question = KINDS[(kill * PER_ROUND + i) % len(KINDS)][0]
                if acknowledge(stack, question, result):
                    acknowledged.append(question)
            # The model is back: the kill lands as the first reflection of the round is
            # written, with the next in flight or waiting.
            model.away.clear()
            written = sum(counts.get(k, 0) for k in ('written', 'merged'))
            wait_until(
                lambda w=written: (
                    sum(counts.get(k, 0) for k in ('written', 'merged')) > w
                    or counts.get('pending') == 0
                ),
                SETTLE_TIMEOUT_S,
                'a reflection to land',
            )
            time.sleep(rng.uniform(0.0, REFLECT_S))
            stack.kill('reasoner_node')
            result.injected += 1
            result.note(f'kill {kill + 1}: {counts.get("pending", "?")} pending just before')
            counts.clear()
            stack.start('reasoner_node')
            stack.wait_ready('reasoner_node')
        wait_until(lambda: counts.get('pending') == 0, SETTLE_TIMEOUT_S, 'the queue to empty')
        check_cards(stack, acknowledged, result)
        result.note(f'model reflections {model.reflections}; last counts {counts}')
    finally:
        model.close()
    finish(stack, result)
    return result


def acknowledge(stack: Stack, question: str, result: DrillResult) -> bool:
    """Ask, then say the answer was wrong (the drill's memory cannot answer these): True
    when the outcome was queued for its lesson."""
    result.requests += 2
    asked = stack.call(Query, 'query', Query.Request(question=question), REQUEST_TIMEOUT_S)
    if asked is None or not asked.answer.trace_id:
        result.note(f'{question!r}: no answer with a trace')
        return False
    result.answered += 1
    said = stack.call(
        Feedback,
        'feedback',
        Feedback.Request(query_id=asked.answer.trace_id, correct=False),
        REQUEST_TIMEOUT_S,
    )
    if said is None:
        result.note(f'feedback on {question!r}: no answer')
        return False
    result.answered += 1
    if not said.reflection_queued:
        result.wrong += 1
        result.note(f'feedback on {question!r} queued no reflection: {said.message}')
    return said.reflection_queued


def check_cards(stack: Stack, acknowledged: list[str], result: DrillResult) -> None:
    """Each acknowledged outcome's lesson is in the bank exactly once."""
    path = stack.root / 'lessons.json'
    result.requests += 1
    exported = stack.call(
        ExportLessons, 'lessons/export', ExportLessons.Request(path=str(path)), REQUEST_TIMEOUT_S
    )
    if exported is None or not exported.success:
        result.lost += len(acknowledged)
        result.note(f'no export: {exported.message if exported else "no answer"}')
        return
    result.answered += 1
    lessons = [card['lesson'] for card in json.loads(path.read_text())['cards']]
    for question in acknowledged:
        lesson = dict(KINDS)[question]
        if lesson not in lessons:
            result.lost += 1
            result.note(f'no card for {question!r}')
    duplicates = len(lessons) - len(set(lessons))
    result.wrong += duplicates
    result.note(f'{len(acknowledged)} outcomes acknowledged; the bank holds {len(lessons)} cards')
