# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Keyframe images on disk, next to the database that refers to them by relative path.

Images stay out of Milvus: the database holds vectors and scalars, and a relative reference
keeps the memory directory movable between machines. Files are named by the SHA-256 of
their content, so a robot standing still (or a segment grid reusing a frame) costs the
disk once, and a file never changes once written: a reference is valid until removed.

memory_node owns the store (`ImageStore`); other processes, such as the reasoner showing
pictures to its model, read it through `ImageStoreReader`, which writes nothing.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import secrets
import threading
from collections.abc import Iterable
from pathlib import Path

from waymark.durable import fsync_directory
from waymark.memory.entries import FrameRecord

_EXTENSIONS = {'jpeg': 'jpg', 'jpg': 'jpg', 'png': 'png'}
_IMAGES = 'images'
_TEMP_SUFFIX = '.tmp'
# Errors that mean "no room": a full disk, or a full user quota.
_FULL = (errno.ENOSPC, errno.EDQUOT)
# Larger files are not read: memory stores camera frames and 2x2 grids of them.
MAX_READ_BYTES = 32 << 20


class ImageStoreFullError(OSError):
    """The disk is full or the cap is reached; nothing partial was left behind."""


class ImageStoreReader:
    """Reads the images of a store that another process may own; never writes.

    The directory need not exist yet (memory_node creates it when it first starts).
    """

    def __init__(self, root: str | os.PathLike, max_image_bytes: int = MAX_READ_BYTES) -> None:
        self.root = Path(root).expanduser().resolve()
        self.max_image_bytes = max_image_bytes

    def get(self, ref: str) -> bytes:
        return self.path(ref).read_bytes()

    def path(self, ref: str) -> Path:
        """The absolute path of a reference; refuses references that leave `root`."""
        candidate = (self.root / ref).resolve()
        if Path(ref).is_absolute() or self.root not in candidate.parents:
            raise ValueError(f'image reference {ref!r} points outside {self.root}')
        return candidate

    def image_of(self, record: FrameRecord) -> bytes | None:
        """The stored picture of an entry (an agent `ImageLoader`). None when the entry has
        none, its reference leaves `root`, or its file is missing, unreadable, empty or
        larger than `max_image_bytes`."""
        try:
            path = self.path(record.image_ref) if record.image_ref else None
            if path is None or path.stat().st_size > self.max_image_bytes:
                return None
            return path.read_bytes() or None
        except (OSError, ValueError):
            return None


class ImageStore(ImageStoreReader):
    """Content-addressed, write-once image files under `root/images/<aa>/<sha256>.<ext>`.

    Writes are atomic (temporary file, fsync, rename), so a killed process leaves either
    the whole image or a temporary file, which the next open deletes. One process owns a
    store at a time: opening it deletes temporary files that another live writer may
    still be using.
    """

    def __init__(self, root: str | os.PathLike, max_bytes: int = 0, fsync: bool = True) -> None:
        """Open (creating) the store; `max_bytes` caps the total image size, 0 for none.

        Opening walks `images/` once, with one stat per file (about a second per 100k
        images on an SSD), to delete stale temporary files and learn `used_bytes`; after
        that the total is tracked by put and remove.
        """
        if max_bytes < 0:
            raise ValueError(f'max_bytes must be >= 0 (0: no cap), got {max_bytes}')
        super().__init__(root)
        self.max_bytes = max_bytes
        self.fsync = fsync
        # One lock over check, write and count: concurrent puts of the same content would
        # otherwise both count it, and the cap check would race.
        self._lock = threading.Lock()
        (self.root / _IMAGES).mkdir(parents=True, exist_ok=True)
        self._used = self._scan()

    @property
    def used_bytes(self) -> int:
        """Total size of the stored images (file sizes, not disk blocks)."""
        return self._used

    def put(self, data: bytes, fmt: str = 'jpeg') -> str:
        """Store an image and return its reference, relative to `root`.

        Identical content (and format) gives the same reference and is written once.
        Raises ImageStoreFullError (errno ENOSPC) if the cap would be exceeded or the disk
        is full, ValueError for empty data or an unknown format.
        """
        ref = self.reference(data, fmt)
        target = self.path(ref)
        with self._lock:
            if target.exists():
                return ref
            if self.max_bytes and self._used + len(data) > self.max_bytes:
                raise ImageStoreFullError(
                    errno.ENOSPC,
                    f'image store cap reached: {self._used} + {len(data)} bytes > '
                    f'max_bytes={self.max_bytes} under {self.root}',
                )
            self._write(target, data, ref)
            self._used += len(data)
            if self.fsync:
                # The rename is durable only once its directory is: the database will
                # refer to this file.
                fsync_directory(target.parent)
        return ref

    @staticmethod
    def reference(data: bytes, fmt: str = 'jpeg') -> str:
        """The reference `put` gives these bytes, computed without writing anything."""
        extension = _EXTENSIONS.get(fmt.lower())
        if extension is None:
            raise ValueError(
                f'unsupported image format {fmt!r}; expected one of {sorted(_EXTENSIONS)}'
            )
        if not data:
            raise ValueError('refusing to store an empty image')
        digest = hashlib.sha256(data).hexdigest()
        return f'{_IMAGES}/{digest[:2]}/{digest}.{extension}'

    def remove(self, refs: Iterable[str]) -> int:
        """Delete images and return the bytes freed; missing files are ignored.

        Every reference is checked before anything is deleted, so a bad one deletes nothing.
        """
        paths = {self.path(ref) for ref in refs}
        freed = 0
        with self._lock:
            for path in paths:
                try:
                    size = path.stat().st_size
                    path.unlink()
                except FileNotFoundError:
                    continue
                freed += size
            self._used -= freed
        return freed

    def _write(self, target: Path, data: bytes, ref: str) -> None:
        new_directory = not target.parent.exists()
        temporary = target.with_name(f'.{target.name}.{secrets.token_hex(4)}{_TEMP_SUFFIX}')
        try:
            target.parent.mkdir(exist_ok=True)
            if new_directory and self.fsync:
                fsync_directory(target.parent.parent)
            descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(descriptor, view) :]
                if self.fsync:
                    os.fsync(descriptor)
            finally:
                os.close(descriptor)
            os.replace(temporary, target)
        except BaseException as error:
            temporary.unlink(missing_ok=True)
            if new_directory:
                # Leave the tree as it was; fails harmlessly if the directory is not empty.
                with contextlib.suppress(OSError):
                    target.parent.rmdir()
            if isinstance(error, OSError) and error.errno in _FULL:
                raise ImageStoreFullError(
                    errno.ENOSPC, f'disk full: could not store image {ref} under {self.root}'
                ) from error
            raise

    def _scan(self) -> int:
        """Delete temporary files left by a killed writer and sum the sizes of the rest."""
        used = 0
        for directory, _, names in os.walk(self.root / _IMAGES):
            for name in names:
                file = os.path.join(directory, name)
                if name.startswith('.') and name.endswith(_TEMP_SUFFIX):
                    Path(file).unlink(missing_ok=True)
                else:
                    used += os.lstat(file).st_size
        return used
