# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""ingest_settled: when a replay's keyframes are all in memory, resends included."""

from __future__ import annotations

from waymark_ros.tools.stack import ingest_settled

CAPTURE = {
    'images_received': 80,
    'images_pending': 0,
    'outbox_pending': 0,
    'keyframes_published': 63,
}
MEMORY = {'queued': 0, 'frames': 63, 'keyframes_received': 63, 'keyframes_ingested': 63}


def test_every_keyframe_received_once_and_ingested_is_settled():
    assert ingest_settled(CAPTURE, MEMORY, 80)


def test_keyframes_sent_again_after_a_late_acknowledgement_still_settle():
    # A busy machine acknowledged two keyframes after capture_node's resend timer: memory
    # received them twice and counted the second receipts as repeats.
    memory = {**MEMORY, 'keyframes_received': 66, 'keyframes_resent_while_journaled': 2}
    assert ingest_settled(CAPTURE, {**memory, 'keyframes_duplicate': 1}, 80)
    assert not ingest_settled(CAPTURE, memory, 80)


def test_anything_missing_or_still_moving_is_not_settled():
    assert not ingest_settled(CAPTURE, MEMORY, 81)  # an image not placed
    assert not ingest_settled({**CAPTURE, 'outbox_pending': 1}, MEMORY, 80)
    assert not ingest_settled(CAPTURE, {**MEMORY, 'queued': 1}, 80)
    lost = {**MEMORY, 'keyframes_received': 62, 'keyframes_ingested': 62}
    assert not ingest_settled(CAPTURE, lost, 80)
    pending = {**MEMORY, 'keyframes_ingested': 61, 'keyframes_failed': 1}
    assert not ingest_settled(CAPTURE, pending, 80)
    assert ingest_settled(CAPTURE, {**pending, 'keyframes_rejected': 1}, 80)
    assert not ingest_settled(CAPTURE, {}, 80)
