# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Files saved whole or not at all, that prove on reading they are what was written.

Layout: a magic line naming the kind of file, the body, then the body's byte count and
CRC-32. Saved indexes and tables are derived from Milvus, so a file that fails any check
is rebuilt from there rather than trusted; the writer streams (a 1M-row body is never
held twice in memory) and renames only a complete, synced file over the old one.
"""

from __future__ import annotations

import contextlib
import io
import os
import struct
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from waymark.durable import write_atomically

_TRAILER = struct.Struct('<QI')
_READ_CHUNK = 1 << 24


class CheckedWriter:
    """Writes through to a stream while counting bytes and their CRC-32."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        self.size = 0
        self.crc = 0

    def write(self, data: bytes | memoryview) -> int:
        # pickle hands large buffers over as PickleBuffer: count them in bytes.
        view = memoryview(data)
        self.stream.write(view)
        self.size += view.nbytes
        self.crc = zlib.crc32(view, self.crc)
        return view.nbytes


def write_checked(path: Path, magic: bytes, write_body: Callable[[CheckedWriter], None]) -> None:
    """Write magic, the body `write_body` streams, and the trailer to a temporary sibling,
    sync it and rename it over `path`; on failure `path` is as it was."""

    def write(stream: BinaryIO) -> None:
        stream.write(magic)
        checked = CheckedWriter(stream)
        write_body(checked)
        stream.write(_TRAILER.pack(checked.size, checked.crc))

    write_atomically(Path(path), write)


@contextlib.contextmanager
def checked_body(path: Path, magic: bytes) -> Iterator[tuple[io.BufferedReader, int]]:
    """The stream at the start of a verified body, and the body's length.

    Raises FileNotFoundError when there is no file and ValueError when it is not a whole,
    undamaged file of this kind."""
    with open(path, 'rb') as stream:
        size = os.fstat(stream.fileno()).st_size
        if size < len(magic) + _TRAILER.size:
            raise ValueError('file too short')
        if stream.read(len(magic)) != magic:
            raise ValueError(f'not a {magic.decode(errors="replace").strip()} file')
        body = size - len(magic) - _TRAILER.size
        stream.seek(len(magic) + body)
        length, crc = _TRAILER.unpack(stream.read(_TRAILER.size))
        if length != body:
            raise ValueError(f'truncated or extended: {body} bytes, trailer says {length}')
        stream.seek(len(magic))
        if _crc_of(stream, body) != crc:
            raise ValueError('checksum mismatch')
        stream.seek(len(magic))
        yield stream, body


def _crc_of(stream: io.BufferedReader, size: int) -> int:
    crc = 0
    left = size
    while left > 0:
        chunk = stream.read(min(left, _READ_CHUNK))
        if not chunk:
            raise ValueError('file ended early')
        crc = zlib.crc32(chunk, crc)
        left -= len(chunk)
    return crc
