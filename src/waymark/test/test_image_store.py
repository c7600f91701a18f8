# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The content-addressed image store: layout, dedup, the size cap, a full disk, restarts."""

from __future__ import annotations

import errno
import hashlib
import os

import pytest

from waymark.memory.storage.image_store import ImageStore, ImageStoreFullError


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
