# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""memory_node on a shared Milvus server: a restart loads its snapshot of the records and
reads only what another robot wrote since, through the open benchmark's own steps."""

from __future__ import annotations

import os

import pytest

from waymark.memory.storage.view_index import AUTO
from waymark_ros.tools import memory_open

pytestmark = pytest.mark.milvus_server


def test_memory_node_restarts_from_its_snapshot_and_reads_only_the_other_robots_rows(
    milvus_uri, tmp_path
):
    result = memory_open.run(
        entries=200,
        backends=[AUTO],  # milvus is the store tests'; auto holds hot sessions too
        out=tmp_path / 'out',
        server_uri=milvus_uri,
        other_writes=40,
        settle_s=1.0,
        domain=int(os.environ['ROS_DOMAIN_ID']),
    )
    first, clean, after_other = result['opens']
    assert [opened['case'] for opened in result['opens']] == list(memory_open.CASES)
    # No snapshot yet: the tables are read from the server, nothing loaded.
    assert (first['loaded'], first['others'], first['rebuilt']) == (0, 0, 0)
    # Its clean close saved the record tables (frames, segments, places): all loaded.
    assert (clean['loaded'], clean['others'], clean['rebuilt']) == (3, 0, 0)
    # The other robot's 40 rows are read by their stamps; nothing is read again whole.
    assert (after_other['loaded'], after_other['others'], after_other['rebuilt']) == (3, 40, 0)
    assert all(opened['rss_mib'] > 0 for opened in result['opens'])
    assert 'memory_node opening 200 entries' in memory_open.render(result)
