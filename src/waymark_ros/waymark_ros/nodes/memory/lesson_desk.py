# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""memory_node's lesson bank: opened in memory's database when memory configures, closed
with it, and served on `lessons/get`, `lessons/calibrate`, `lessons/add` and
`lessons/export` while memory_node is active.

The bank lives beside memory, not inside it: a bank that cannot open is reported (in the
log, in memory/stats and on /diagnostics) and left off, and memory serves without it.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from rclpy.node import Node

from waymark.lessons.service import LessonService, TaskEmbedder, open_lessons
from waymark.lessons.store import LessonStoreError
from waymark.memory.views.text import TEXT_VIEW
from waymark.parameters.memory import MemoryParameters
from waymark_interfaces.srv import AddLesson, CalibrateLessons, ExportLessons, GetLessons
from waymark_ros.nodes.memory.lesson_requests import (
    answer_add,
    answer_calibrate,
    answer_export,
    answer_get_lessons,
)

SERVICES = (
    (GetLessons, 'lessons/get', answer_get_lessons),
    (CalibrateLessons, 'lessons/calibrate', answer_calibrate),
    (AddLesson, 'lessons/add', answer_add),
    (ExportLessons, 'lessons/export', answer_export),
)


class LessonDesk:
    def __init__(self, node: Node, counts: Counter[str], refused: Callable[[Any], bool]) -> None:
        """`refused(response)` fills and says yes to a request memory_node cannot serve now
        (not active). The services share the node's default group, as memory's own do, so
        that no request is served while a transition opens or closes the bank."""
        self._logger = node.get_logger()
        self._counts = counts
        self._refused = refused
        self.bank: LessonService | None = None
        self.problem = ''  # why a bank asked for did not open
        for kind, name, answer in SERVICES:
            node.create_service(kind, name, functools.partial(self._answer, answer))

    def open(self, params: MemoryParameters, store_uri: str, models: Iterable) -> None:
        """The bank in memory's database, its tasks embedded by memory's text model. A
        bank that cannot open is logged and kept in `problem`; the bank stays off."""
        config = params.lessons
        self.problem = ''
        if not config.enabled:
            return
        text = next((view for view in models if view.name == TEXT_VIEW), None)
        if text is None:  # a memory without text: a choice, not a fault
            self._logger.warning('lesson bank off: it embeds tasks with text_model, off here')
            return
        snapshot = Path(config.snapshot).expanduser() if config.snapshot else None
        try:
            model = text.embedder
            embedder = TaskEmbedder(model.name, model.dim, model.embed_texts)
            bank = open_lessons(
                store_uri,
                params.collection_prefix,
                embedder,
                config.bank_mode,
                config.retrieval(),
                config.limits(),
                snapshot,
            )
        except (ValueError, LessonStoreError) as error:  # SnapshotError is a ValueError
            self.problem = ' '.join(str(error).split())
            self._logger.error(f'lesson bank off: {self.problem}')
            return
        seeded = f', {bank.imported} from {snapshot.name}' if bank.imported else ''
        self._logger.info(f'lesson bank ({config.mode}): {len(bank.bank)} cards{seeded}')
        self.bank = bank

    def use(self, params: MemoryParameters) -> None:
        """Live parameters: retrieval from the next request on."""
        if self.bank is not None:
            self.bank.bank.params = params.lessons.retrieval()

    def close(self) -> None:
        bank, self.bank = self.bank, None
        if bank is not None:
            bank.close()

    def report(self, stats: dict) -> None:
        """A bank that did not open, in memory's stats (the bank's own counts are added
        by memory_status.memory_stats)."""
        if self.problem:
            stats['lessons_mode'], stats['lessons_error'] = 'off', self.problem

    def _answer(self, answer, request, response):
        """One lesson service's answer; a change to the bank is logged."""
        if self._refused(response):
            return response
        if answer(self.bank, request, response, self._counts, self.problem):
            self._logger.info(response.message)
        return response
