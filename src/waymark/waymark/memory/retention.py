# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Keeping a memory that runs for months within its disk: what it uses, and thinning.

Frame-level view vectors are most of a memory's size in Milvus, and old ones matter
least: a question about last month is answered as well by one frame in a few, and the
segments (BinTrack's multi-frame summaries), named places and every frame's record (time,
pose, text) stay. Thinning drops the view rows of old frames but one in `keep_every` per
session. It is planned first and applied only when the plan's token is repeated: until
then nothing changes.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from waymark.memory.entries import FrameRecord

NS_PER_DAY = 86_400 * 10**9


@dataclass(frozen=True)
class RetentionPolicy:
    """`thin_after_days`: frames older than this (by their stamp) are thinned, 0: never;
    `keep_every`: per session, frames whose index is a multiple of it keep their vectors;
    `budget_bytes`: what the memory may use on disk before it is reported over, 0: none;
    `keep_sessions`: session names or shell patterns (`survey-*`) never thinned, such as
    a mapping run or one a team wants kept whole."""

    thin_after_days: float = 30.0
    keep_every: int = 5
    budget_bytes: int = 0
    keep_sessions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not 0.0 <= self.thin_after_days <= 36_500.0:
            raise ValueError(f'thin_after_days must be in [0, 36500], got {self.thin_after_days}')
        if isinstance(self.keep_every, bool) or not 2 <= int(self.keep_every) <= 10_000:
            raise ValueError(f'keep_every must be in [2, 10000], got {self.keep_every}')
        if self.budget_bytes < 0:
            raise ValueError(f'budget_bytes must be >= 0, got {self.budget_bytes}')
        for pattern in self.keep_sessions:
            if not isinstance(pattern, str) or not pattern or pattern != pattern.strip():
                raise ValueError(f'keep_sessions holds names or patterns, got {pattern!r}')

    def keeps(self, session: str) -> bool:
        """Whether `session` is one never thinned."""
        return any(fnmatch.fnmatchcase(session, pattern) for pattern in self.keep_sessions)


@dataclass(frozen=True)
class ThinningPlan:
    """The frames whose view vectors thinning would drop, and the token that applies it."""

    cutoff_ns: int
    ids: tuple[str, ...]
    sessions: dict[str, int]  # frames to thin per session

    @property
    def token(self) -> str:
        """Names the frames the plan drops: a later plan over the same frames has the
        same token, one over other frames (time moved on, entries came) another."""
        digest = hashlib.sha256(b'thin')
        for key in self.ids:
            digest.update(b'\0' + key.encode())
        return digest.hexdigest()[:16]


def plan_thinning(
    frames: Iterable[FrameRecord], with_vectors: set[str], policy: RetentionPolicy, now_ns: int
) -> ThinningPlan:
    """What thinning `frames` (those stamped before the cutoff are enough) under `policy`
    at `now_ns` drops: frames older than the cutoff that still have vectors
    (`with_vectors`), but one in `keep_every` of each session and none of a kept session."""
    if policy.thin_after_days <= 0:
        return ThinningPlan(now_ns, (), {})
    cutoff = now_ns - int(policy.thin_after_days * NS_PER_DAY)
    chosen: list[str] = []
    sessions: dict[str, int] = {}
    for record in frames:
        if record.stamp_ns >= cutoff or record.index % policy.keep_every == 0:
            continue
        if policy.keeps(record.session):
            continue
        if record.id in with_vectors:
            chosen.append(record.id)
            sessions[record.session] = sessions.get(record.session, 0) + 1
    return ThinningPlan(cutoff, tuple(sorted(chosen)), sessions)


def dir_bytes(path: Path) -> dict[str, int]:
    """Bytes of the files under `path`: their sizes, and what the disk allocates for them
    (blocks: small files round up; sparse files count what they hold)."""
    path = Path(path)
    if path.is_file():
        stat = path.lstat()
        return {'bytes': stat.st_size, 'disk_bytes': stat.st_blocks * 512}
    size = disk = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                stat = os.lstat(os.path.join(root, name))
            except FileNotFoundError:  # removed while walking (a compaction)
                continue
            size += stat.st_size
            disk += stat.st_blocks * 512
    return {'bytes': size, 'disk_bytes': disk}
