# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""load_concurrently: every loader runs once, results by key, failures surface."""

from __future__ import annotations

import threading

import pytest

from waymark.memory.storage import concurrent_load
from waymark.memory.storage.concurrent_load import load_concurrently


def test_every_loader_runs_once_and_results_keep_their_keys(monkeypatch):
    monkeypatch.setattr(concurrent_load.os, 'cpu_count', lambda: 2)
    threads = set()
    calls = []

    def loader(value):
        def load():
            calls.append(value)
            threads.add(threading.get_ident())
            return value * 10

        return load

    results = load_concurrently({f'k{i}': loader(i) for i in range(6)})
    assert results == {f'k{i}': i * 10 for i in range(6)}
    assert sorted(calls) == list(range(6))
    assert threading.get_ident() not in threads  # ran on the pool


def test_a_failing_loader_raises_after_the_others_finish(monkeypatch):
    monkeypatch.setattr(concurrent_load.os, 'cpu_count', lambda: 2)
    finished = []

    def fail():
        raise OSError('disk gone')

    def slow():
        finished.append(True)
        return 1

    with pytest.raises(OSError, match='disk gone'):
        load_concurrently({'bad': fail, 'good': slow, 'other': slow})
    assert finished == [True, True]


def test_one_core_loads_in_this_thread(monkeypatch):
    monkeypatch.setattr(concurrent_load.os, 'cpu_count', lambda: 1)
    assert load_concurrently({'a': threading.get_ident}) == {'a': threading.get_ident()}
