# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Keyframe images on disk, next to the database that refers to them by relative path.

Images stay out of Milvus: the database holds vectors and scalars, and a relative reference
keeps the memory directory movable between machines.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from waymark.memory.entries import check_session_name

_EXTENSIONS = {'jpeg': 'jpg', 'jpg': 'jpg', 'png': 'png'}


class ImageStoreFullError(OSError):
    """The disk is full; the image was not stored and no partial file was left behind."""


class ImageStore:
    """Write-once image files under `root/images/<session>/`, replaced atomically."""

    def __init__(self, root: str | os.PathLike, fsync: bool = True) -> None:
        self.root = Path(root).resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        self.fsync = fsync

    def put(self, session: str, index: int, data: bytes, fmt: str = 'jpeg') -> str:
        """Store one image and return its reference, relative to `root`."""
        check_session_name(session)
        if index < 0:
            raise ValueError(f'keyframe index must be >= 0, got {index}')
        extension = _EXTENSIONS.get(fmt.lower())
        if extension is None:
            raise ValueError(
                f'unsupported image format {fmt!r}; expected one of {sorted(_EXTENSIONS)}'
            )
        ref = f'images/{session}/{index:08d}.{extension}'
        target = self.path(ref)
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.with_name(f'.{target.name}.{os.getpid()}.tmp')
        try:
            with open(temporary, 'wb') as stream:
                stream.write(data)
                stream.flush()
                if self.fsync:
                    os.fsync(stream.fileno())
            os.replace(temporary, target)
        except OSError as error:
            temporary.unlink(missing_ok=True)
            if error.errno == errno.ENOSPC:
                raise ImageStoreFullError(
                    errno.ENOSPC, f'disk full: could not store image {ref} under {self.root}'
                ) from error
            raise
        return ref

    def get(self, ref: str) -> bytes:
        return self.path(ref).read_bytes()

    def path(self, ref: str) -> Path:
        """The absolute path of a reference; refuses references that leave `root`."""
        candidate = (self.root / ref).resolve()
        if Path(ref).is_absolute() or self.root not in candidate.parents:
            raise ValueError(f'image reference {ref!r} points outside {self.root}')
        return candidate
