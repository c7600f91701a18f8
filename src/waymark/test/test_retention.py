# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Retention: which old frames thinning drops, the plan's token, and the store keeping
records while their vectors go (Milvus Lite, through a restart)."""

from __future__ import annotations

import numpy as np
import pytest

from waymark.memory.entries import FrameRecord
from waymark.memory.retention import NS_PER_DAY, RetentionPolicy, dir_bytes, plan_thinning
from waymark.memory.service import MemoryService
from waymark.memory.storage.image_store import ImageStore
from waymark.memory.storage.session_owners import SessionOwnedError
from waymark.memory.storage.store import MemoryStore
from waymark.parameters.memory import RetentionParameters

NOW = 1_800_000_000 * 10**9
VIEWS = {'image': 4}


def frame(session: str, index: int, age_days: float) -> FrameRecord:
    stamp = NOW - int(age_days * NS_PER_DAY)
    return FrameRecord(
        session=session,
        index=index,
        stamp_ns=stamp,
        x=float(index),
        y=0.0,
        z=0.0,
        yaw=0.0,
        map_epoch=0,
        pose_valid=True,
        image_ref='',
        text='',
    )


def vector(i: int) -> np.ndarray:
    return np.array([1.0, 0.1 * i, 0.0, 0.0], np.float32)


def test_old_frames_are_thinned_but_one_in_keep_every_and_the_recent_ones_stay():
    frames = [frame('old', i, 40) for i in range(10)] + [frame('new', i, 1) for i in range(10)]
    ids = {f.id for f in frames} - {'old/7'}  # old/7 has no vectors left
    plan = plan_thinning(frames, ids, RetentionPolicy(thin_after_days=30, keep_every=5), NOW)
    assert plan.ids == tuple(sorted(f'old/{i}' for i in (1, 2, 3, 4, 6, 8, 9)))
    assert plan.sessions == {'old': 7}
    assert plan.cutoff_ns == NOW - 30 * NS_PER_DAY
    off = plan_thinning(frames, ids, RetentionPolicy(thin_after_days=0), NOW)
    assert off.ids == () and off.sessions == {}


def test_kept_sessions_are_never_thinned_by_name_or_pattern():
    names = ('survey-2026-11-01', 'survey-2026-11-02', 'office-map', 'patrol-1')
    frames = [frame(name, i, 40) for name in names for i in range(6)]
    ids = {f.id for f in frames}
    policy = RetentionPolicy(
        thin_after_days=30, keep_every=3, keep_sessions=('survey-*', 'office-map')
    )
    plan = plan_thinning(frames, ids, policy, NOW)
    assert plan.sessions == {'patrol-1': 4}
    assert plan.ids == tuple(f'patrol-1/{i}' for i in (1, 2, 4, 5))
    assert not policy.keeps('office-map-2') and policy.keeps('survey-')


@pytest.mark.parametrize('patterns', [('',), (' survey-*',), (3,)])
def test_kept_session_patterns_are_checked(patterns):
    with pytest.raises(ValueError, match='keep_sessions'):
        RetentionPolicy(keep_sessions=patterns)


def test_the_keep_sessions_parameter_is_a_comma_separated_list():
    policy = RetentionParameters(keep_sessions=' survey-*, office-map,,').policy()
    assert policy.keep_sessions == ('survey-*', 'office-map')
    assert RetentionParameters().policy().keep_sessions == ()


def test_a_plan_token_names_its_frames_not_the_time_it_was_made():
    frames = [frame('old', i, 40) for i in range(6)]
    ids = {f.id for f in frames}
    policy = RetentionPolicy(thin_after_days=30, keep_every=2)
    first = plan_thinning(frames, ids, policy, NOW)
    later = plan_thinning(frames, ids, policy, NOW + 3600 * 10**9)
    assert first.token == later.token and len(first.token) == 16
    fewer = plan_thinning(frames, ids - {'old/1'}, policy, NOW)
    assert fewer.token != first.token


@pytest.mark.parametrize(
    'bad',
    [
        {'thin_after_days': -1.0},
        {'thin_after_days': float('nan')},
        {'keep_every': 1},
        {'keep_every': True},
        {'budget_bytes': -5},
    ],
)
def test_a_bad_policy_is_refused(bad):
    with pytest.raises(ValueError):
        RetentionPolicy(**bad)


def test_thinned_frames_keep_their_records_and_lose_their_vectors_through_a_restart(tmp_path):
    db = str(tmp_path / 'memory.db')
    frames = [frame('old', i, 40) for i in range(6)]
    with MemoryStore(db, VIEWS, robot='go1') as store:
        store.add_many(frames, [{'image': vector(i)} for i in range(6)])
        before = store.disk_usage()
        assert before['database'] > 0 and 'snapshots' in before
        assert store.with_views('frame', ['old/1', 'old/9']) == {'old/1'}
        assert store.remove_views('frame', ['old/1', 'old/3']) == 2
        assert store.with_views('frame', [f.id for f in frames]) == {
            f'old/{i}' for i in (0, 2, 4, 5)
        }
    with MemoryStore(db, VIEWS, robot='go1') as store:
        assert store.count() == 6 and store.count(view='image') == 4
        found = {hit.record.id for hit in store.search_view('image', vector(1), 10)}
        assert found == {f'old/{i}' for i in (0, 2, 4, 5)}
        assert len(store.search_time(0, 10)) == 6  # still found by time
        assert [r.id for r in store.records_before(NOW)] == [f.id for f in frames]
    with MemoryStore(db, VIEWS, robot='other') as store:
        with pytest.raises(SessionOwnedError):
            store.remove_views('frame', ['old/0'])
        assert store.count(view='image') == 4


def test_a_robot_plans_and_thins_only_its_own_old_sessions(tmp_path):
    db = str(tmp_path / 'memory.db')
    with MemoryStore(db, VIEWS, robot='a') as store:
        store.add_many([frame('a-old', i, 40) for i in range(4)], [{'image': vector(1)}] * 4)
    with MemoryStore(db, VIEWS, robot='b') as store:
        store.add_many([frame('b-old', i, 40) for i in range(4)], [{'image': vector(1)}] * 4)
        service = MemoryService(store, ImageStore(tmp_path), [])
        policy = RetentionPolicy(thin_after_days=30, keep_every=2)
        plan = service.plan_thinning(policy, NOW)
        assert plan.ids == ('b-old/1', 'b-old/3') and plan.sessions == {'b-old': 2}
        assert service.thin(plan) == 2
        assert service.plan_thinning(policy, NOW).ids == ()
        assert store.count(view='image') == 6
        assert set(service.storage()) == {'database', 'snapshots', 'images'}


def test_dir_bytes_counts_files_below_a_folder(tmp_path):
    (tmp_path / 'a').mkdir()
    (tmp_path / 'a' / 'x').write_bytes(b'1234')
    (tmp_path / 'y').write_bytes(b'12')
    assert dir_bytes(tmp_path)['bytes'] == 6
    assert dir_bytes(tmp_path / 'y')['bytes'] == 2
