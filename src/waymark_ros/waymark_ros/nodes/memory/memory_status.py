# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""What memory_node reports about itself: its start (the log line), its counts (the JSON
of `memory/stats`) and its health (`/diagnostics`)."""

from __future__ import annotations

from collections import Counter

from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

from waymark.lessons.service import LessonService
from waymark.memory.entries import FRAME, SEGMENT
from waymark.memory.ingest.worker import IngestWorker
from waymark.memory.service import MemoryService


def startup_report(memory: MemoryService, journaled: int, recaptioning: int) -> str:
    """What memory holds at start and what a previous run left unfinished."""
    store = memory.store
    load = store.load_report
    return (
        f'memory at {store.uri}: {load.entries.get(FRAME, 0)} frames, '
        f'{load.entries.get(SEGMENT, 0)} segments in {len(store.sessions())} sessions, '
        f'{len(memory.places.places())} named places '
        f'(indexes ready in {load.seconds:.1f} s: {len(load.loaded)} loaded from the last '
        f'snapshot with {load.caught_up} later ids refetched and {load.caught_up_others} '
        f'other robots wrote since, {len(load.rebuilt)} rebuilt '
        'as out of step with Milvus); '
        f'views {store.views(FRAME)} / segments {store.views(SEGMENT)}; '
        f'{journaled} keyframes recovered from the journal; {recaptioning} segments queued '
        'for captions'
    )


def memory_stats(
    counts: Counter[str],
    memory: MemoryService,
    worker: IngestWorker,
    lessons: LessonService | None = None,
) -> dict:
    """The node's counts with memory's own, how full the queues and disks are, and the
    lesson bank's size and writes (`lessons_*`)."""
    held = memory.stats()
    stats = dict(counts)
    for key, count in held.counts.items():  # both count duplicates: at arrival, at commit
        stats[key] = stats.get(key, 0) + count
    stats.update(
        frames=held.frames,
        segments=held.segments,
        sessions=len(held.sessions),
        queued=worker.queued,
        backlog=worker.backlog,
        journal_bytes=worker.journal.used_bytes,
        images_bytes=memory.image_store.used_bytes,
        mean_ingest_ms=round(held.mean_ingest_ms, 1),
        robot_id=memory.store.owners.robot,
    )
    snapshot = memory.store.snapshot_state
    if snapshot is not None:
        stats['snapshot_generation'], stats['snapshot_pending_ids'] = snapshot
    captions = memory.segments.captions if memory.segments is not None else None
    if captions is not None:
        stats['captions_pending'] = captions.pending
        stats.update({f'captioner_{k}': v for k, v in captions.counts.items()})
    if lessons is not None:
        stats.update({f'lessons_{k}': v for k, v in lessons.stats().items()})
    return stats


def storage_stats(storage: dict[str, int], stats: dict, budget_bytes: int) -> dict:
    """Disk use on this robot by part, in all, per entry, and against the budget."""
    total = sum(storage.values())
    entries = stats.get('frames', 0) + stats.get('segments', 0)
    found = {f'storage_{part}_bytes': size for part, size in sorted(storage.items())}
    found['storage_bytes'] = total
    found['storage_bytes_per_entry'] = round(total / entries) if entries else 0
    if budget_bytes:
        found['storage_budget_bytes'] = budget_bytes
    return found


def diagnostic(
    stats: dict, worker: IngestWorker, stamp: Time, node_name: str = 'memory_node'
) -> DiagnosticArray:
    status = DiagnosticStatus(name=f'{node_name}: memory', hardware_id='memory')
    status.level, status.message = DiagnosticStatus.OK, 'ok'
    if stats.get('store_retries', 0) and worker.queued:
        status.level, status.message = DiagnosticStatus.ERROR, 'database unavailable'
    elif worker.queued > worker.queue_size // 2 or worker.backlog:
        status.level, status.message = DiagnosticStatus.WARN, 'ingest falling behind'
    elif stats.get('storage_bytes', 0) > stats.get('storage_budget_bytes', float('inf')):
        status.level = DiagnosticStatus.WARN
        status.message = (
            f'over the storage budget: {stats["storage_bytes"] / 1e9:.2f} of '
            f'{stats["storage_budget_bytes"] / 1e9:.2f} GB (thin_memory, or a larger budget)'
        )
    status.values = [KeyValue(key=key, value=str(value)) for key, value in sorted(stats.items())]
    array = DiagnosticArray(status=[status])
    if 'lessons_mode' in stats:
        array.status.append(_lessons_status(stats, node_name))
    array.header.stamp = stamp
    return array


def _lessons_status(stats: dict, node_name: str) -> DiagnosticStatus:
    """The bank's own line: its size, merges (redundancy caught), evictions, and refused or
    failed requests; a bank that did not open or a failed write is an error."""
    status = DiagnosticStatus(name=f'{node_name}: lessons', hardware_id='memory')
    failed = sum(stats.get(k, 0) for k in ('calibrations_failed', 'lessons_add_failed'))
    broken = failed or 'lessons_error' in stats
    status.level = DiagnosticStatus.ERROR if broken else DiagnosticStatus.OK
    if 'lessons_error' in stats:
        status.message = f'lesson bank off: {stats["lessons_error"]}'
    elif failed:
        status.message = f'{failed} bank writes failed'
    else:
        status.message = f'{stats["lessons_cards"]} lessons ({stats["lessons_mode"]})'
    keys = sorted(k for k in stats if k.startswith(('lessons_', 'calibrations')))
    status.values = [KeyValue(key=k, value=str(stats[k])) for k in keys]
    return status
