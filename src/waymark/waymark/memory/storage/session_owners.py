# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Which robot each session belongs to, kept in Milvus next to the entries.

Several robots (or several memory_node instances) may share one Milvus server. Entry ids
are "<session>/<index>", so two writers putting entries into the same session would
overwrite each other. Each session is therefore claimed by the robot that first writes it
(one row per session in a small collection), and a store refuses to write into or delete a
session another robot claimed. A query limited to some robots searches their sessions.

Milvus has no compare-and-set, so two writers claiming the same new session in the same
instant could both succeed; capture_node puts the robot id into the session names it
makes, so that needs two robots given the same session name by hand at once.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Sequence

from pymilvus import MilvusClient

from waymark.memory.entries import check_robot_id
from waymark.memory.storage.scan import read_rows, scan_collection

_ID_BATCH = 1024


class SessionOwnedError(ValueError):
    """A write or delete named a session that another robot owns; nothing was changed."""

    def __init__(self, session: str, owner: str, robot: str) -> None:
        super().__init__(
            f'session {session!r} belongs to robot {owner or "(none)"!r}, not to '
            f'{robot or "(none)"!r}: a writer changes only its own sessions'
        )
        self.session, self.owner, self.robot = session, owner, robot


class SessionOwners:
    """The owner of every session in one memory, cached per process.

    Owners never change once claimed (only deleting the session frees its name), so a
    cached owner stays right; a session not in the cache is looked up in Milvus.
    """

    def __init__(self, client: MilvusClient, collection: str, robot: str) -> None:
        self.client = client
        self.collection = collection
        self.robot = check_robot_id(robot)
        self._owners: dict[str, str] = {}
        self._lock = threading.Lock()

    def claim(self, sessions: Iterable[str]) -> None:
        """Make sure this robot owns `sessions`, claiming those nobody owns yet; raises
        SessionOwnedError, claiming nothing, when another robot owns one of them."""
        with self._lock:
            owners = self._lookup(sessions)
            for session, owner in owners.items():
                self._refuse_others(session, owner)
            self._write_claims([session for session, owner in owners.items() if owner is None])

    def check(self, session: str) -> None:
        """SessionOwnedError when another robot owns `session` (unowned passes)."""
        with self._lock:
            self._refuse_others(session, self._lookup([session])[session])

    def release(self, session: str) -> None:
        """Forget `session`'s owner (its entries are gone): the name is free again."""
        with self._lock:
            self.client.delete(self.collection, ids=[session])
            self._owners.pop(session, None)

    def owners(self) -> dict[str, str]:
        """Every claimed session and its robot."""
        rows = read_rows(self.client, self.collection, ['id', 'robot'])
        found = {row['id']: row['robot'] for row in rows}
        with self._lock:
            self._owners.update(found)
        return found

    def sessions_of(self, robots: Sequence[str]) -> list[str]:
        """The sessions the given robots own, sorted."""
        for robot in robots:
            check_robot_id(robot)
        expression = f'robot in {json.dumps(sorted(set(robots)))}'
        rows = scan_collection(self.client, self.collection, ['id', 'robot'], expression)
        return sorted(row['id'] for row in rows)

    def adopt(self, sessions: Iterable[str]) -> list[str]:
        """Claim, for this robot, those of `sessions` nobody owns (entries written before
        sessions had owners); returns them."""
        with self._lock:
            owners = self._lookup(sessions)
            unowned = [session for session, owner in owners.items() if owner is None]
            self._write_claims(unowned)
        return unowned

    def _refuse_others(self, session: str, owner: str | None) -> None:
        if owner is not None and owner != self.robot:
            raise SessionOwnedError(session, owner, self.robot)

    def _write_claims(self, sessions: list[str]) -> None:
        """Record this robot as the owner of `sessions` (the caller holds the lock)."""
        if not sessions:
            return
        stamp = time.time_ns()
        rows = [
            {'id': s, 'robot': self.robot, 'claimed_ns': stamp, 'planar': [0.0, 0.0]}
            for s in sessions
        ]
        self.client.upsert(self.collection, rows)
        self._owners.update((s, self.robot) for s in sessions)

    def _lookup(self, sessions: Iterable[str]) -> dict[str, str | None]:
        """Owner of each session (None: unclaimed), from the cache or Milvus."""
        wanted = list(dict.fromkeys(sessions))
        missing = [session for session in wanted if session not in self._owners]
        for start in range(0, len(missing), _ID_BATCH):
            batch = missing[start : start + _ID_BATCH]
            rows = self.client.get(self.collection, ids=batch, output_fields=['id', 'robot'])
            self._owners.update((row['id'], row['robot']) for row in rows)
        return {session: self._owners.get(session) for session in wanted}
