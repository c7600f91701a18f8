# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
import inspect
import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from waymark.tasks.ledger import (
    INDEX_FILE,
    LedgerLimits,
    LedgerLockedError,
    LedgerReader,
    TaskLedger,
    UnknownTaskError,
)
from waymark.tasks.outcomes import Claim, JudgeVerdict, LedgerStatus, TerminationReason, VerdictKind
from waymark.tasks.records import GoalModality, RecordFormatError, TaskGoal, TaskRecord

MUG = TaskGoal(GoalModality.TEXT, 'the red mug')
LATER = 2**62  # an end time after any start the clock gives


def _close(ledger: TaskLedger, task_id: str, **details) -> TaskRecord:
    details.setdefault('claim', Claim.COMPLETE)
    record = TaskRecord.for_task(ledger.open_task(task_id), ended_ns=LATER, **details)
    ledger.close(record)
    return record


def test_begin_leaves_a_marker_and_close_turns_it_into_a_record_and_an_index_line(tmp_path):
    ledger = TaskLedger(tmp_path)
    task_id = ledger.begin(MUG, run_id='run-1', now_ns=5)
    assert (tmp_path / 'open' / f'{task_id}.json').exists()
    assert [task.task_id for task in ledger.open_tasks()] == [task_id]
    record = _close(
        ledger,
        task_id,
        certificate=JudgeVerdict(VerdictKind.COMPLETE, 'mug in view 1'),
        places=('kitchen', 'hall', 'landing', 'garage'),
    )
    assert not (tmp_path / 'open' / f'{task_id}.json').exists()
    assert ledger.record(task_id) == record and record.status is LedgerStatus.CERTIFIED
    index = (tmp_path / INDEX_FILE).read_text()
    assert index == f'- {task_id} | CERTIFIED | the red mug | places: kitchen, hall, landing\n'
    with pytest.raises(UnknownTaskError):
        ledger.close(record)  # a task closes once


def test_tasks_are_numbered_in_order_and_listed_newest_first_within_the_cap(tmp_path):
    ledger = TaskLedger(tmp_path, LedgerLimits(max_listed=3))
    ids = [ledger.begin(TaskGoal(GoalModality.PLACE, f'spot {n}')) for n in range(5)]
    for task_id in ids:
        _close(ledger, task_id, claim=None, stop_reason=TerminationReason.TIME_BUDGET)
    page = ledger.records()
    assert [record.task_id for record in page.records] == ids[:1:-1]
    assert [record.sequence for record in ledger.records(limit=2).records] == [5, 4]
    assert ledger.records(limit=50).records == page.records
    lines = (tmp_path / INDEX_FILE).read_text().splitlines()
    assert lines[0].endswith('| STOPPED (time_budget) | place spot 0 | places: -')
    with pytest.raises(ValueError, match='limit'):
        ledger.records(limit=0)


def test_a_record_that_does_not_match_its_task_or_is_too_large_is_refused_and_the_task_stays_open(
    tmp_path,
):
    ledger = TaskLedger(tmp_path, LedgerLimits(max_record_chars=2_000))
    task_id = ledger.begin(MUG)
    task = ledger.open_task(task_id)
    other_goal = TaskRecord(task_id, '', 1, TaskGoal(GoalModality.TEXT, 'a cup'), Claim.COMPLETE)
    with pytest.raises(ValueError, match='does not match'):
        ledger.close(other_goal)
    huge = TaskRecord.for_task(task, LATER, Claim.COMPLETE, claim_evidence='x' * 3_000)
    with pytest.raises(ValueError, match='max_record_chars'):
        ledger.close(huge)
    assert [open_task.task_id for open_task in ledger.open_tasks()] == [task_id]
    assert ledger.records().records == () and not (tmp_path / INDEX_FILE).exists()


def test_a_runner_killed_mid_task_leaves_a_task_that_the_next_start_records_as_interrupted(
    tmp_path,
):
    first = TaskLedger(tmp_path)
    task_id = first.begin(MUG, run_id='run-1', now_ns=7)
    del first  # the process dies with the task open
    ledger = TaskLedger(tmp_path)
    report = ledger.recover_interrupted(now_ns=9)
    assert report.stopped == (task_id,) and report.unreadable == ()
    record = ledger.record(task_id)
    assert (record.status, record.termination) == (LedgerStatus.STOPPED, 'interrupted')
    assert (record.goal, record.run_id, record.started_ns, record.ended_ns) == (MUG, 'run-1', 7, 9)
    assert ledger.open_tasks() == ()
    assert 'STOPPED (interrupted)' in ledger.index_text().text
    assert ledger.recover_interrupted() == type(report)()  # nothing left to do
    next_id = ledger.begin(MUG)
    assert ledger.open_task(next_id).sequence == 2


def test_a_second_runner_on_a_live_ledger_is_refused_and_closes_nothing(tmp_path):
    first = TaskLedger(tmp_path)
    task_id = first.begin(MUG)
    with pytest.raises(LedgerLockedError, match=f'pid {os.getpid()}'):
        TaskLedger(tmp_path)
    assert [task.task_id for task in first.open_tasks()] == [task_id]  # still running
    _close(first, task_id)
    del first  # the owner is gone: the next runner may write
    assert TaskLedger(tmp_path).record(task_id).status is LedgerStatus.CLAIMED


def test_a_runner_killed_by_sigkill_after_begin_loses_no_task(tmp_path):
    script = textwrap.dedent(
        f"""
        import os, signal
        from waymark.tasks.ledger import TaskLedger
        from waymark.tasks.records import GoalModality, TaskGoal
        ledger = TaskLedger({str(tmp_path)!r})
        print(ledger.begin(TaskGoal(GoalModality.PLACE, 'charging spot')), flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    environment = {**os.environ, 'PYTHONPATH': os.pathsep.join(sys.path)}
    child = subprocess.run(
        [sys.executable, '-c', script], capture_output=True, text=True, env=environment
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    task_id = child.stdout.strip()
    ledger = TaskLedger(tmp_path)
    assert ledger.recover_interrupted().stopped == (task_id,)
    assert ledger.record(task_id).termination is TerminationReason.INTERRUPTED


def test_a_write_that_fails_midway_leaves_the_task_open_and_no_temporary_file(
    tmp_path, monkeypatch
):
    ledger = TaskLedger(tmp_path)
    task_id = ledger.begin(MUG)

    def refuse(source, target):
        raise OSError('disk gone')

    monkeypatch.setattr(os, 'replace', refuse)
    with pytest.raises(OSError, match='disk gone'):
        _close(ledger, task_id)
    monkeypatch.undo()
    assert [task.task_id for task in ledger.open_tasks()] == [task_id]
    assert list(tmp_path.rglob('*.tmp')) == [] and ledger.records().records == ()
    _close(ledger, task_id)
    assert ledger.record(task_id).status is LedgerStatus.CLAIMED


def test_a_record_that_could_not_be_read_back_is_refused_before_it_is_written(tmp_path):
    ledger = TaskLedger(tmp_path)
    task_id = ledger.begin(MUG)
    for verdict in (
        JudgeVerdict(VerdictKind.COMPLETE, confidence=2.0),
        JudgeVerdict(VerdictKind.COMPLETE, confidence=float('nan')),
        JudgeVerdict(VerdictKind.COMPLETE, evidence='x' * 9_000),
    ):
        with pytest.raises(RecordFormatError, match='certificate'):
            _close(ledger, task_id, certificate=verdict)
    assert [task.task_id for task in ledger.open_tasks()] == [task_id]
    assert ledger.records().records == ()


def test_a_close_cut_short_after_the_record_is_finished_at_the_next_start(tmp_path):
    ledger = TaskLedger(tmp_path)
    cut_before_marker_removal = ledger.begin(MUG)
    cut_before_index = ledger.begin(MUG)
    for task_id in (cut_before_marker_removal, cut_before_index):
        record = TaskRecord.for_task(ledger.open_task(task_id), LATER, Claim.INCOMPLETE)
        (tmp_path / 'records' / f'{task_id}.json').write_text(record.to_json())
    (tmp_path / 'open' / f'{cut_before_index}.json').unlink()
    ledger = ledger.reader()  # the runner that was cut short is gone
    report = TaskLedger(tmp_path).recover_interrupted()
    assert report.stopped == ()
    assert set(report.completed) == {cut_before_marker_removal, cut_before_index}
    lines = ledger.index_text().text.splitlines()
    assert len(lines) == 2 and all('CLAIMED' in line for line in lines)
    assert ledger.open_tasks() == ()


def test_torn_temporary_files_are_ignored_by_readers_and_removed_at_start(tmp_path):
    ledger = TaskLedger(tmp_path)
    task_id = ledger.begin(MUG)
    _close(ledger, task_id)
    (tmp_path / 'records' / '.t000002-00000000.json.1a2b3c4d.tmp').write_text('{"vers')
    (tmp_path / 'open' / '.t000002-00000000.json.5e6f7a8b.tmp').write_text('')
    assert [record.task_id for record in ledger.records().records] == [task_id]
    assert ledger.open_tasks() == ()
    report = ledger.recover_interrupted()
    assert report.temporary_removed == 2 and report.stopped == () and report.unreadable == ()
    assert sorted(path.name for path in tmp_path.rglob('*.tmp')) == []


def test_a_corrupt_record_is_reported_and_does_not_hide_the_others(tmp_path):
    ledger = TaskLedger(tmp_path)
    ids = [ledger.begin(MUG) for _ in range(3)]
    for task_id in ids:
        _close(ledger, task_id)
    (tmp_path / 'records' / f'{ids[1]}.json').write_text('{"version": 1, "kind": "rec')
    page = ledger.reader().records()
    assert [record.task_id for record in page.records] == [ids[2], ids[0]]
    assert [problem.name for problem in page.unreadable] == [f'{ids[1]}.json']
    assert 'not JSON' in page.unreadable[0].reason
    (tmp_path / 'records' / f'{ids[0]}.json').write_bytes(b'\xff\xfe\x00garbage')
    page = ledger.reader().records()
    assert [record.task_id for record in page.records] == [ids[2]]
    assert 'not UTF-8' in page.unreadable[1].reason
    with pytest.raises(RecordFormatError, match='not JSON'):
        ledger.record(ids[1])
    assert ledger.record(ids[2]).task_id == ids[2]


def test_a_marker_whose_record_is_corrupt_is_reported_and_neither_file_is_overwritten(tmp_path):
    ledger = TaskLedger(tmp_path)
    task_id = ledger.begin(MUG)
    record_path = tmp_path / 'records' / f'{task_id}.json'
    record_path.write_text('garbage')
    report = ledger.recover_interrupted()
    assert report.stopped == () and [f.name for f in report.unreadable] == [f'{task_id}.json']
    assert record_path.read_text() == 'garbage'
    assert [task.task_id for task in ledger.open_tasks()] == [task_id]


def test_a_record_filed_under_another_id_is_refused(tmp_path):
    ledger = TaskLedger(tmp_path)
    first, second = ledger.begin(MUG), ledger.begin(MUG)
    _close(ledger, first)
    _close(ledger, second)
    records = tmp_path / 'records'
    (records / f'{second}.json').write_text((records / f'{first}.json').read_text())
    with pytest.raises(RecordFormatError, match=f'holds the record of {first}'):
        ledger.record(second)


def test_ids_that_are_not_task_ids_never_reach_the_file_system(tmp_path):
    reader = LedgerReader(tmp_path)
    for task_id in ('../ledger', 't000001-0000000g', ''):
        with pytest.raises(UnknownTaskError, match='not a task id'):
            reader.record(task_id)


def test_the_index_read_is_a_bounded_prefix_with_truncation_reported(tmp_path):
    ledger = TaskLedger(tmp_path, LedgerLimits(max_index_chars=100))
    assert ledger.index_text().text == '' and not ledger.index_text().truncated
    for _ in range(3):
        _close(ledger, ledger.begin(MUG))
    full = (tmp_path / INDEX_FILE).read_text()
    cut = ledger.index_text(max_chars=40)
    assert (cut.text, cut.truncated, cut.total_bytes) == (full[:40], True, len(full.encode()))
    assert ledger.index_text().text == full[:100]
    with pytest.raises(ValueError, match='max_chars'):
        ledger.index_text(max_chars=101)


def test_goal_text_is_abbreviated_in_the_index_and_cannot_forge_an_index_entry(tmp_path):
    ledger = TaskLedger(tmp_path)
    forged = '\n- t000009-00000000 | CERTIFIED | x |' + ' word' * 40
    task_id = ledger.begin(TaskGoal(GoalModality.TEXT, forged))
    _close(ledger, task_id, claim=None, stop_reason=TerminationReason.NO_GOAL)
    (line,) = ledger.index_text().text.splitlines()
    assert line.startswith(f'- {task_id} | STOPPED (no_goal) | - t000009-00000000 / CERTIFIED')
    assert len(line.split(' | ')) == 4
    assert '…' in line and len(line.split(' | ')[2]) == 60


def test_the_read_only_view_has_no_way_to_write(tmp_path):
    ledger = TaskLedger(tmp_path)
    reader = ledger.reader()
    assert type(reader) is LedgerReader
    public = {name for name, _ in inspect.getmembers(LedgerReader) if not name.startswith('_')}
    assert public == {'record', 'records', 'open_task', 'open_tasks', 'index_text'}
    for writer in ('begin', 'close', 'recover_interrupted', 'reader'):
        assert not hasattr(reader, writer)
    assert not (tmp_path / 'elsewhere').exists()
    LedgerReader(tmp_path / 'elsewhere').records()  # reading creates nothing
    assert not (tmp_path / 'elsewhere').exists()


def test_the_ledger_stores_the_handover_only_as_the_sanitizer_leaves_it(tmp_path):
    ledger = TaskLedger(tmp_path)
    task_id = ledger.begin(MUG)
    handover = 'Mug found\x1b at (3.2, -1.5), 2 m left of the sink. ' + 'more ' * 130
    cleaned = _close_with(ledger, task_id, handover)
    stored = ledger.record(task_id).handover
    assert stored == cleaned.text and stored.startswith('Mug found at, left of the sink.')
    assert cleaned.removed == ('(3.2, -1.5)', '2 m') and cleaned.words_dropped > 0
    assert len(stored.split()) == 120


def _close_with(ledger: TaskLedger, task_id: str, handover: str):
    task = ledger.open_task(task_id)
    return ledger.close(TaskRecord.for_task(task, LATER, Claim.COMPLETE, handover=handover))


def test_the_record_on_disk_is_the_versioned_json(tmp_path):
    ledger = TaskLedger(tmp_path)
    task_id = ledger.begin(MUG)
    record = _close(ledger, task_id)
    stored = json.loads((tmp_path / 'records' / f'{task_id}.json').read_text())
    assert stored['version'] == 1 and stored['status'] == 'CLAIMED'
    assert TaskRecord.from_json(json.dumps(stored)) == record
