# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The content-addressed image store: layout, dedup, the size cap, a full disk, restarts,
and reading it from another process."""

from __future__ import annotations

import errno
import hashlib
import os
from dataclasses import replace

import pytest

from waymark.memory.entries import FrameRecord
from waymark.memory.storage.image_store import ImageStore, ImageStoreFullError, ImageStoreReader

T0 = 1_750_000_000 * 10**9


def _files(root) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob('*') if p.is_file())


def test_put_returns_a_content_addressed_reference(tmp_path):
    store = ImageStore(tmp_path / 'memory')
    digest = hashlib.sha256(b'\xff\xd8jpeg').hexdigest()

    jpeg_ref = store.put(b'\xff\xd8jpeg')
    png_ref = store.put(b'\x89PNGpng', fmt='PNG')

    assert jpeg_ref == f'images/{digest[:2]}/{digest}.jpg'
    assert png_ref.endswith('.png')
    assert store.get(jpeg_ref) == b'\xff\xd8jpeg'
    assert store.path(png_ref) == tmp_path / 'memory' / png_ref
    assert ImageStore(tmp_path / 'memory').get(png_ref) == b'\x89PNGpng'


def test_identical_content_is_stored_once(tmp_path, monkeypatch):
    store = ImageStore(tmp_path)
    ref = store.put(b'same', 'jpeg')
    assert store.used_bytes == 4

    def must_not_write(*args):
        raise AssertionError('a duplicate must not be written')

    monkeypatch.setattr(os, 'open', must_not_write)
    assert store.put(b'same', 'jpg') == ref
    assert store.used_bytes == 4
    assert _files(tmp_path) == [ref]


def test_put_refuses_empty_data_and_unknown_formats(tmp_path):
    store = ImageStore(tmp_path)
    with pytest.raises(ValueError, match='empty'):
        store.put(b'')
    with pytest.raises(ValueError, match='format'):
        store.put(b'data', fmt='exe')
    with pytest.raises(ValueError):
        ImageStore(tmp_path, max_bytes=-1)
    assert _files(tmp_path) == []


def test_cap_refuses_then_accepts_after_remove(tmp_path):
    store = ImageStore(tmp_path, max_bytes=10)
    first = store.put(b'123456')

    with pytest.raises(ImageStoreFullError) as raised:
        store.put(b'abcdef')
    assert raised.value.errno == errno.ENOSPC
    assert store.put(b'123456') == first  # a duplicate costs nothing, so it is not refused

    assert store.remove([first, first, 'images/00/missing.jpg']) == 6
    assert store.used_bytes == 0
    second = store.put(b'abcdef')
    assert store.get(second) == b'abcdef'
    assert store.used_bytes == 6
    assert _files(tmp_path) == [second]


@pytest.mark.parametrize('failing', ['write', 'fsync'])
def test_disk_full_raises_and_leaves_nothing_behind(tmp_path, monkeypatch, failing):
    store = ImageStore(tmp_path / 'memory')
    kept = store.put(b'first')

    def no_space(*args):
        raise OSError(errno.ENOSPC, 'No space left on device')

    with monkeypatch.context() as patch:
        patch.setattr(os, failing, no_space)
        with pytest.raises(ImageStoreFullError) as raised:
            store.put(b'second')

    assert raised.value.errno == errno.ENOSPC
    assert 'disk full' in str(raised.value)
    assert _files(tmp_path / 'memory') == [kept]
    assert sorted(p.name for p in (tmp_path / 'memory' / 'images').iterdir()) == [
        kept.split('/')[1]
    ]
    assert store.used_bytes == 5
    assert store.get(store.put(b'second')) == b'second'  # and works once there is room


def test_other_write_errors_are_not_reported_as_full(tmp_path, monkeypatch):
    store = ImageStore(tmp_path)

    def broken(*args):
        raise OSError(errno.EIO, 'I/O error')

    with monkeypatch.context() as patch:
        patch.setattr(os, 'write', broken)
        with pytest.raises(OSError) as raised:
            store.put(b'data')
    assert not isinstance(raised.value, ImageStoreFullError)
    assert _files(tmp_path) == []


def test_references_outside_the_root_are_refused(tmp_path):
    store = ImageStore(tmp_path / 'memory')
    (tmp_path / 'secret').write_bytes(b'x')
    outside = ('../secret', 'images/../../secret', str(tmp_path / 'secret'), '', '.')

    for ref in outside:
        with pytest.raises(ValueError):
            store.get(ref)
        with pytest.raises(ValueError):
            store.path(ref)
    with pytest.raises(ValueError):
        store.remove([store.put(b'kept'), '../secret'])  # checked before anything is deleted
    assert (tmp_path / 'secret').exists()
    assert store.used_bytes == 4


def test_used_bytes_survives_reopening(tmp_path):
    store = ImageStore(tmp_path, max_bytes=100)
    refs = [store.put(bytes([i]) * (i + 1)) for i in range(5)]
    store.remove(refs[:1])
    assert store.used_bytes == 2 + 3 + 4 + 5

    reopened = ImageStore(tmp_path, max_bytes=100)
    assert reopened.used_bytes == 14
    assert [reopened.get(ref) for ref in refs[1:]] == [bytes([i]) * (i + 1) for i in range(1, 5)]


def test_opening_deletes_temporary_files_of_a_killed_writer(tmp_path):
    ref = ImageStore(tmp_path).put(b'whole')
    shard = (tmp_path / ref).parent
    (shard / f'.{(tmp_path / ref).name}.1234.tmp').write_bytes(b'who')
    (tmp_path / 'images' / 'ab').mkdir()
    (tmp_path / 'images' / 'ab' / '.abcdef.jpg.0a1b2c3d.tmp').write_bytes(b'partial')

    store = ImageStore(tmp_path)

    assert _files(tmp_path) == [ref]
    assert store.used_bytes == 5


def _entry(image_ref: str) -> FrameRecord:
    return FrameRecord('tour', 0, T0, 0.0, 0.0, 0.0, 0.0, 0, True, image_ref)


def test_a_reader_reads_only_inside_the_memory_directory(tmp_path):
    (tmp_path / 'memory' / 'images' / 'ab').mkdir(parents=True)
    (tmp_path / 'memory' / 'images' / 'ab' / 'c.jpg').write_bytes(b'jpeg bytes')
    (tmp_path / 'secret.jpg').write_bytes(b'not for the model')
    images = ImageStoreReader(tmp_path / 'memory')
    record = _entry('images/ab/c.jpg')
    assert images.image_of(record) == b'jpeg bytes'
    for ref in ('', 'images/ab/missing.jpg', '../secret.jpg', str(tmp_path / 'secret.jpg')):
        assert images.image_of(replace(record, image_ref=ref)) is None


def test_a_reader_reads_what_the_store_wrote_and_writes_nothing(tmp_path):
    absent = ImageStoreReader(tmp_path / 'not yet')
    assert absent.image_of(_entry('images/ab/c.jpg')) is None
    assert not (tmp_path / 'not yet').exists()

    ref = ImageStore(tmp_path).put(b'x' * 100)
    leftover = tmp_path / 'images' / 'ab' / '.ab.0000.tmp'
    leftover.parent.mkdir(exist_ok=True)
    leftover.write_bytes(b'a writer is busy with this')
    assert ImageStoreReader(tmp_path, max_image_bytes=100).image_of(_entry(ref)) == b'x' * 100
    assert ImageStoreReader(tmp_path, max_image_bytes=99).image_of(_entry(ref)) is None
    assert leftover.exists()
