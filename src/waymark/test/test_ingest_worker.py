# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The ingest worker without ROS or a database: what is acknowledged is journaled, stored
once, in order, through retries, stops and restarts."""

from __future__ import annotations

import threading
import time

import pytest

from waymark.geometry import Pose
from waymark.memory.entries import Keyframe
from waymark.memory.ingest.admission import RefusedError
from waymark.memory.ingest.journal import KeyframeJournal
from waymark.memory.ingest.worker import IngestWorker


def keyframe(stamp_ns: int, image: bytes = b'\xff\xd8jpeg') -> Keyframe:
    return Keyframe(
        session='tour',
        index=stamp_ns,
        stamp_ns=stamp_ns,
        pose=Pose.from_xyz_yaw(1.0, 2.0, 0.0, 0.0),
        pose_valid=True,
        map_epoch=0,
        image=image,
        image_format='jpeg',
        frame_id='map',
    )


class FakeMemory:
    """Stores keyframes by stamp; `away` commits fail as a database that is away does;
    `blocked` holds every commit until it is set."""

    def __init__(self) -> None:
        self.stored: list[Keyframe] = []
        self.away = 0
        self.blocked = threading.Event()
        self.blocked.set()

    def stored_as(self, keyframe: Keyframe) -> Keyframe | None:
        for stored in self.stored:
            if stored.stamp_ns == keyframe.stamp_ns:
                if stored != keyframe:
                    raise RefusedError('conflicting', 'another keyframe is stored at its stamp')
                return stored
        return None

    def prepare(self, keyframe: Keyframe) -> Keyframe:
        if keyframe.image == b'broken':
            raise ValueError('not an image')
        if keyframe.image == b'model crash':
            raise RuntimeError('the model failed')
        return keyframe

    def commit(self, prepared: Keyframe) -> Keyframe:
        self.blocked.wait()
        if self.away:
            self.away -= 1
            raise ConnectionError('the database is away')
        self.stored.append(prepared)
        return prepared


class Log:
    def __init__(self) -> None:
        self.lines: list[tuple[str, str]] = []

    def info(self, message: str) -> None:
        self.lines.append(('info', message))

    def warning(self, message: str) -> None:
        self.lines.append(('warning', message))

    def error(self, message: str) -> None:
        self.lines.append(('error', message))


@pytest.fixture
def make(tmp_path):
    workers: list[IngestWorker] = []

    def build(
        memory: FakeMemory, log: Log | None = None, **options
    ) -> tuple[IngestWorker, list[tuple[int, bool]]]:
        acks: list[tuple[int, bool]] = []
        options.setdefault('queue_size', 100)
        worker = IngestWorker(
            memory,
            KeyframeJournal(tmp_path / 'journal', max_bytes=1 << 20, fsync=False),
            lambda k, refused: acks.append((k.index, refused)),
            log or Log(),
            **options,
        )
        workers.append(worker)
        return worker, acks

    yield build
    for worker in workers:
        worker.stop(wait_s=1.0)


def wait_for(predicate, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, 'condition not met in time'
        time.sleep(0.01)


def test_acknowledged_keyframes_are_stored_in_arrival_order_and_leave_the_journal(make):
    memory = FakeMemory()
    worker, acks = make(memory, prepare_workers=3)
    worker.start()
    for stamp in (5, 3, 9, 1):
        worker.accept(keyframe(stamp))
    wait_for(lambda: len(memory.stored) == 4 and not worker.journal.paths())
    assert [k.stamp_ns for k in memory.stored] == [5, 3, 9, 1]
    assert acks == [(5, False), (3, False), (9, False), (1, False)]
    assert worker.counts['keyframes_ingested'] == 4


def test_a_resend_is_acknowledged_again_and_stored_once(make):
    memory = FakeMemory()
    worker, acks = make(memory)
    worker.accept(keyframe(1))
    worker.accept(keyframe(1))  # our acknowledgement was lost: journaled, not queued twice
    assert worker.queued == 1 and worker.counts['keyframes_resent_while_journaled'] == 1
    worker.start()
    wait_for(lambda: len(memory.stored) == 1)
    worker.accept(keyframe(1))  # after it was stored: nothing to write
    assert acks == [(1, False)] * 3
    assert worker.counts['keyframes_duplicate'] == 1 and worker.queued == 0


def test_other_content_at_a_stored_or_journaled_stamp_is_refused_for_good(make):
    memory = FakeMemory()
    worker, acks = make(memory)
    memory.stored.append(keyframe(1))
    worker.accept(keyframe(1, image=b'\xff\xd8other'))
    worker.accept(keyframe(2))
    worker.accept(keyframe(2, image=b'\xff\xd8other'))
    assert acks == [(1, True), (2, False), (2, True)]
    assert worker.counts['keyframes_conflicting'] == 2 and worker.queued == 1


def test_keyframes_beyond_the_queue_wait_in_the_backlog_and_are_stored_in_stamp_order(make):
    memory = FakeMemory()
    worker, acks = make(memory, queue_size=1, put_timeout_s=0.0)
    for stamp in (1, 2, 3, 4):
        worker.accept(keyframe(stamp))
    assert (worker.queued, worker.backlog) == (1, 3)
    assert worker.counts['keyframes_deferred_queue_full'] == 1
    assert worker.counts['keyframes_behind_backlog'] == 2
    assert len(acks) == 4  # all journaled, so all acknowledged
    worker.start()
    wait_for(lambda: len(memory.stored) == 4)
    assert [k.stamp_ns for k in memory.stored] == [1, 2, 3, 4]


def test_a_database_that_is_away_is_retried_and_logged_once_per_period(make):
    memory = FakeMemory()
    memory.away = 3
    log = Log()
    worker, _ = make(memory, log, retry_max_s=0.1)
    worker.start()
    worker.accept(keyframe(1))
    wait_for(lambda: len(memory.stored) == 1, timeout_s=20.0)
    assert worker.counts['store_retries'] == 3
    assert [level for level, _ in log.lines] == ['error']


def test_undecodable_keyframes_are_dropped_and_failed_preparations_kept_for_later(make):
    memory = FakeMemory()
    worker, _ = make(memory)
    worker.start()
    worker.accept(keyframe(1, image=b'broken'))
    worker.accept(keyframe(2, image=b'model crash'))
    worker.accept(keyframe(3))
    wait_for(lambda: len(memory.stored) == 1)
    wait_for(lambda: worker.counts['keyframes_prepare_failed'] == 1)
    assert worker.counts['keyframes_undecodable'] == 1
    assert [p.name for p in worker.journal.paths()] == ['tour-00000000000000000002.keyframe']


def test_a_stop_keeps_what_is_not_stored_and_the_next_start_stores_it(make):
    memory = FakeMemory()
    memory.blocked.clear()
    worker, _ = make(memory, queue_size=2, put_timeout_s=0.0)
    worker.start()
    for stamp in range(1, 6):
        worker.accept(keyframe(stamp))
    assert worker.stop(wait_s=0.2) > 0
    assert worker.running  # still inside a commit: it cannot be started again yet
    with pytest.raises(RuntimeError, match='still storing'):
        worker.start()
    memory.blocked.set()
    wait_for(lambda: not worker.running)
    left = len(worker.journal.paths())
    assert left == 4  # the keyframe inside the commit was stored
    assert worker.start() == left
    wait_for(lambda: not worker.journal.paths())
    assert sorted(k.stamp_ns for k in memory.stored) == [1, 2, 3, 4, 5]
    assert len(memory.stored) == 5  # each once
