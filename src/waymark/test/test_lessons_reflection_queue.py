# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The queue of outcomes waiting for reflection: once per outcome, durable, bounded."""

from __future__ import annotations

import pytest

from waymark.lessons.reflect import ReflectionInput
from waymark.lessons.reflection_queue import (
    MAX_BACKOFF,
    MAX_NAMES,
    ReflectionJob,
    ReflectionQueue,
)


def job(key: str = 'query q1', **fields) -> ReflectionJob:
    item = ReflectionInput('where is the ladder?', 'search_text -> 1 hits', 'right: garage', 1.0)
    return ReflectionJob(key, item, known_names=('GARAGE',), answers=('the garage',), **fields)


def test_a_job_is_queued_once_and_a_finished_key_is_not_queued_again(tmp_path):
    queue = ReflectionQueue(tmp_path)
    assert queue.put(job()) == 'queued'
    assert queue.put(job()) == 'queued before'
    assert [j.key for j in queue.due()] == ['query q1']
    queue.finish('query q1', 'written')
    assert queue.put(job()) == 'reflected before' and len(queue) == 0
    assert queue.put(job('task t1')) == 'queued'
    assert queue.stats() == {'pending': 1, 'queued': 2, 'written': 1}


def test_jobs_and_finished_keys_survive_a_reopen_and_a_cut_write_is_dropped(tmp_path):
    queue = ReflectionQueue(tmp_path)
    queue.put(job('query a'))
    queue.put(job('query b'))
    queue.finish('query a', 'written')
    (tmp_path / '.x.json.1234abcd.tmp').write_bytes(b'{"key": "qu')  # killed mid-write
    again = ReflectionQueue(tmp_path)
    assert [j for j in again.due()] == [job('query b')]
    assert again.put(job('query a')) == 'reflected before'
    assert not list(tmp_path.glob('.*.tmp'))


def test_a_damaged_job_is_set_aside_and_counted_never_trusted(tmp_path):
    queue = ReflectionQueue(tmp_path)
    queue.put(job('query a'))
    [path] = [p for p in tmp_path.glob('*.json') if p.name != 'done-keys.json']
    path.write_bytes(b'{"key": "query a", "item": {')
    (tmp_path / '0123.json').write_bytes(job('query elsewhere').to_json())  # a wrong name
    again = ReflectionQueue(tmp_path)
    assert len(again) == 0 and again.stats()['damaged'] == 2 and len(again.damage) == 2
    assert sorted(p.name for p in tmp_path.glob('*.bad')) == sorted(
        [f'{path.name}.bad', '0123.json.bad']
    )


def test_a_full_queue_refuses_and_says_so(tmp_path):
    queue = ReflectionQueue(tmp_path, max_jobs=2)
    assert [queue.put(job(f'query {i}')) for i in range(3)] == ['queued', 'queued', 'full']
    assert len(queue) == 2 and queue.stats()['refused_full'] == 1


def test_a_postponed_job_waits_longer_each_time_and_is_given_up_after_its_attempts(tmp_path):
    queue = ReflectionQueue(tmp_path, max_attempts=3, retry_s=10.0)
    queue.put(job())
    assert queue.postpone('query q1', 'llm', now=100.0)
    assert queue.due(now=109.0) == [] and len(queue.due(now=110.0)) == 1
    assert queue.postpone('query q1', 'llm', now=110.0)
    assert queue.due(now=129.0) == [] and len(queue.due(now=130.0)) == 1
    assert ReflectionQueue(tmp_path).due(now=130.0)[0].attempts == 2  # durable
    assert not queue.postpone('query q1', 'memory', now=130.0)
    assert len(queue) == 0 and queue.put(job()) == 'reflected before'
    assert queue.stats()['retried_llm'] == 2 and queue.stats()['gave_up_memory'] == 1


def test_the_backoff_is_capped(tmp_path):
    queue = ReflectionQueue(tmp_path, max_attempts=100, retry_s=1.0)
    queue.put(job())
    for _ in range(20):
        queue.postpone('query q1', 'llm', now=0.0)
    assert queue.due(now=MAX_BACKOFF - 0.5) == [] and queue.due(now=MAX_BACKOFF)


def test_bad_jobs_and_bounds_are_refused_and_names_are_capped(tmp_path):
    with pytest.raises(ValueError, match='outcome key'):
        job('')
    with pytest.raises(ValueError, match='outcome key'):
        job('query \n')
    with pytest.raises(ValueError):
        ReflectionQueue(tmp_path, max_jobs=0)
    many = ReflectionJob('query q', job().item, known_names=tuple(f'n{i}' for i in range(100)))
    assert len(many.known_names) == MAX_NAMES
    assert ReflectionJob.from_json(many.to_json()) == many
