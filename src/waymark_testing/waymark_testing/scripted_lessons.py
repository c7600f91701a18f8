# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The scripted planner with a reflection policy, for the lessons evaluation's mechanics.

A reflection request (its system prompt asks for a `transferable_lesson`) gets a lesson
chosen by the kind of question the planner reads in it; `leak` puts the question's
target in the lesson, which the anti-leakage check must refuse. Every other request goes
to `ScriptedPlanner`, which ignores lessons: rows made with it test the loop, not lessons.
"""

from __future__ import annotations

import json
import re
from typing import Any

from waymark_testing.scripted_llm import Reply, text
from waymark_testing.scripted_planner import ScriptedPlanner, plan

LESSONS = {
    'position': 'When a place is asked for, search for its sign text first, avoid answering '
    'from a different sign, and check that the cited sighting shows the target.',
    'time': 'When a moment is asked for, search for the target and pick the sighting the '
    'question names, avoid the other end of the record, and check the clock read back.',
    'yes_no': 'When asked whether something was seen, search once for it, avoid saying yes '
    'on a weak match, and check how similar the best hit really is.',
}
_ASKED = re.compile(r'^Question: "(?P<text>.*)"$', re.M)


class ReflectingPlanner:
    def __init__(self, leak: bool = False) -> None:
        self.planner = ScriptedPlanner()
        self.leak = leak
        self.reflections = 0

    def __call__(self, body: dict[str, Any]) -> Reply:
        messages = body.get('messages') or []
        system = messages[0].get('content', '') if messages else ''
        if 'transferable_lesson' not in str(system):
            return self.planner(body)
        self.reflections += 1
        asked = _ASKED.search(str(messages[1].get('content', '')))
        the_plan = plan(asked['text'] if asked else '')
        lesson = LESSONS.get(the_plan.kind, LESSONS['position'])
        if self.leak:
            lesson = f'{lesson} The {the_plan.target} is the answer.'
        summary = f'A {the_plan.kind} question answered by one search.'
        return text(json.dumps({'summary': summary, 'transferable_lesson': lesson}))
