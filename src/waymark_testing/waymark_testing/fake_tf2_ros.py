# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""A stand-in tf2_ros (not installed here) for node processes started by a test: one
transform, given in JSON by WAYMARK_FAKE_TF, that becomes available 0.5 s after the buffer
is made, as a late /tf_static would. `install` puts it first on the nodes' PYTHONPATH."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

MODULE = """
import json
import os
import time

from geometry_msgs.msg import TransformStamped

_TF = json.loads(os.environ['WAYMARK_FAKE_TF'])


class Buffer:
    def __init__(self):
        self._ready = time.monotonic() + 0.5

    def can_transform(self, target, source, when):
        return time.monotonic() >= self._ready and [target, source] == _TF['frames']

    def lookup_transform(self, target, source, when):
        if not self.can_transform(target, source, when):
            raise LookupError(f'{target} -> {source}')
        msg = TransformStamped()
        msg.header.frame_id, msg.child_frame_id = target, source
        t, r = msg.transform.translation, msg.transform.rotation
        t.x, t.y, t.z = _TF['xyz']
        r.x, r.y, r.z, r.w = _TF['xyzw']
        return msg


class TransformListener:
    def __init__(self, buffer, node, *, spin_thread=False):
        assert not spin_thread, 'the node spins the listener itself'
        self._node = node

    def unregister(self):
        pass
"""


def install(
    folder: Path,
    monkeypatch,
    target: str,
    source: str,
    xyz: Sequence[float],
    xyzw: Sequence[float] = (0.0, 0.0, 0.0, 1.0),
) -> None:
    """Make `source`'s pose in `target` the one transform nodes started after this find."""
    package = folder / 'fake' / 'tf2_ros'
    package.mkdir(parents=True)
    (package / '__init__.py').write_text(MODULE)
    path = os.environ.get('PYTHONPATH', '')
    monkeypatch.setenv('PYTHONPATH', f'{package.parent}:{path}' if path else str(package.parent))
    transform = {'frames': [target, source], 'xyz': list(xyz), 'xyzw': list(xyzw)}
    monkeypatch.setenv('WAYMARK_FAKE_TF', json.dumps(transform))
