# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The lesson bank under kill -9: memory_node dies in the middle of a stream of
calibrations, is restarted, and the bank must hold every card and count it acknowledged.

A calibration acknowledged (success came back) is a promise; the one in flight at the kill
may or may not have been counted, so it may add one visit, never take one away."""

from __future__ import annotations

import json
import random
import threading
from collections import Counter
from dataclasses import dataclass, field

from waymark_interfaces.srv import AddLesson, CalibrateLessons, ExportLessons
from waymark_ros.tools.drill.drills import Settings, finish, memory_params
from waymark_ros.tools.drill.report import DrillResult
from waymark_ros.tools.drill.stack import Stack, wait_until

REQUEST_TIMEOUT_S = 10.0
# Questions of different kinds, so that no lesson is merged into another.
LESSONS = (
    ('where did I last see the fire extinguisher?', 'Order the sightings by time first.'),
    ('which shop is between the office and the station?', 'Find the route before the place.'),
    ('how many chairs were in the meeting room?', 'Count each chair once across views.'),
    ('what was written on the sign by the lift?', 'Read the sign from its nearest view.'),
)


@dataclass
class Ledger:
    """What the drill was promised: acknowledged visits and rewards per card, and what
    may have been counted without an answer (in flight at a kill)."""

    visits: Counter[str] = field(default_factory=Counter)
    rewards: Counter[str] = field(default_factory=Counter)
    unsure_visits: Counter[str] = field(default_factory=Counter)
    unsure_rewards: Counter[str] = field(default_factory=Counter)


def add_request(index: int) -> AddLesson.Request:
    task, lesson = LESSONS[index % len(LESSONS)]
    return AddLesson.Request(
        task=task,
        summary='A checked answer of this kind.',
        lesson=lesson,
        run='drill',
        task_id=f'q{index}',
        model='drill',
    )


def calibrate_until_killed(
    stack: Stack, cards: list[str], ledger: Ledger, result: DrillResult, stop: threading.Event
) -> None:
    """One calibration at a time over every card so far, until one goes unanswered."""
    number = 0
    while not stop.is_set():
        reward = float(number % 2)
        request = CalibrateLessons.Request(
            lesson_ids=list(cards), reward=reward, outcome=f'drill-{number}'
        )
        response = stack.call(CalibrateLessons, 'lessons/calibrate', request, REQUEST_TIMEOUT_S)
        number += 1
        if response is None:  # in flight at the kill: counted or not
            for card in cards:
                ledger.unsure_visits[card] += 1
                ledger.unsure_rewards[card] += reward
            return
        result.requests += 1
        result.answered += 1
        if not response.success or response.calibrated != len(cards):
            result.wrong += 1
            result.note(f'calibration refused: {response.message}')
            continue
        for card in cards:
            ledger.visits[card] += 1
            ledger.rewards[card] += reward


def kill_memory_mid_lessons(stack: Stack, settings: Settings) -> DrillResult:
    result = DrillResult('kill -9 memory_node mid-lessons')
    rng = random.Random(settings.seed)
    stack.start('memory_node', **memory_params(stack), **{'lessons.mode': 'acquire'})
    stack.wait_ready('memory_node')
    cards: list[str] = []
    ledger = Ledger()
    for kill in range(settings.kills):
        result.requests += 1
        added = stack.call(AddLesson, 'lessons/add', add_request(kill), REQUEST_TIMEOUT_S)
        if added is not None:
            result.answered += 1
            if added.success and not added.merged:
                cards.append(added.id)
            else:
                result.wrong += 1
                result.note(f'lesson {kill} not written: {added.message}')
        stop = threading.Event()
        before = sum(ledger.visits.values())
        sender = threading.Thread(
            target=calibrate_until_killed, args=(stack, list(cards), ledger, result, stop)
        )
        sender.start()
        enough = before + rng.randint(20, 60) * max(1, len(cards))
        wait_until(lambda n=enough: sum(ledger.visits.values()) >= n, 120, 'calibrations answered')
        stack.kill('memory_node')
        result.injected += 1
        sender.join(timeout=REQUEST_TIMEOUT_S + 5)
        stop.set()
        stack.start('memory_node')
        stack.wait_ready('memory_node')
    check_bank(stack, cards, ledger, result)
    finish(stack, result)
    return result


def check_bank(stack: Stack, cards: list[str], ledger: Ledger, result: DrillResult) -> None:
    """Every acknowledged card and count is in the bank after the last restart."""
    path = stack.root / 'lessons.json'
    result.requests += 1
    exported = stack.call(
        ExportLessons, 'lessons/export', ExportLessons.Request(path=str(path)), REQUEST_TIMEOUT_S
    )
    if exported is None or not exported.success:
        result.note(f'no export: {exported.message if exported else "no answer"}')
        result.lost += len(cards)
        return
    result.answered += 1
    kept = {card['card_id']: card for card in json.loads(path.read_text())['cards']}
    for card in cards:
        held = kept.get(card)
        if held is None:
            result.lost += 1
            result.note(f'card {card} is gone')
            continue
        visits, rewards = held['visits'], held['reward_sum']
        missing = ledger.visits[card] - visits
        extra = visits - ledger.visits[card] - ledger.unsure_visits[card]
        reward_low = rewards < ledger.rewards[card] - 1e-9
        reward_high = rewards > ledger.rewards[card] + ledger.unsure_rewards[card] + 1e-9
        result.lost += max(0, missing) + reward_low
        result.wrong += max(0, extra) + reward_high
    acknowledged = sum(ledger.visits.values())
    result.note(
        f'{len(cards)} cards, {acknowledged} acknowledged card visits, '
        f'{sum(ledger.unsure_visits.values())} in flight at the kills; bank holds '
        f'{sum(kept[c]["visits"] for c in cards if c in kept)}'
    )
