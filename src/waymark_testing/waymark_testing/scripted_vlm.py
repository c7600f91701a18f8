# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""A scripted stand-in for the verifier's VLM behind the scripted OpenAI-compatible server.

It answers verification requests (`waymark.agent.verifier`, one target or several in one
call) from the pictures themselves: `words_of` says which words a JPEG shows (a test's
own decoding: brightness, a lookup by content hash), and a candidate shows a target when
it shows every word of it, stop words aside. Nothing else is read, so it is as right or as
wrong as what the pictures hold.
"""

from __future__ import annotations

import base64
import bisect
import hashlib
import json
import re
from collections.abc import Callable
from typing import Any

from waymark.memory.entries import FRAME, SEGMENT
from waymark.memory.search_query import Mode, SearchQuery
from waymark_testing.scripted_llm import Policy, Step, text

# How a one-target request names its target, and how a several-target one numbers them.
TARGET = re.compile(r'looking for this: (".*?")\. ')
NUMBERED_TARGET = re.compile(r'target \d+: ("(?:[^"\\]|\\.)*")')
STOP_WORDS = frozenset({'the', 'a', 'an', 'sign'})


def verification_targets(body: dict[str, Any]) -> list[str]:
    """What a verification request asks to find: one target, or several in one call."""
    first = body['messages'][0]['content'][0]['text']
    single = TARGET.search(first)
    if single is not None:
        return [json.loads(single.group(1))]
    return [json.loads(quoted) for quoted in NUMBERED_TARGET.findall(first)]


def jpeg_of(part: dict[str, Any]) -> bytes:
    prefix, data = part['image_url']['url'].split(',', 1)
    assert prefix == 'data:image/jpeg;base64'
    return base64.b64decode(data)


def verifier_policy(words_of: Callable[[bytes], set[str]]) -> Policy:
    """A verifier that picks, per target, the candidates showing all of its words, in the
    order shown."""

    def policy(body: dict[str, Any]) -> Step:
        content = body['messages'][0]['content']
        seen = [words_of(jpeg_of(part)) for part in content if part['type'] == 'image_url']
        answers = []
        for target in verification_targets(body):
            wanted = set(re.findall(r'[a-z0-9]+', target.lower())) - STOP_WORDS
            matches = [n for n, words in enumerate(seen, start=1) if wanted and wanted <= words]
            answers.append({'matches': matches, 'best': matches[0] if matches else None})
        if TARGET.search(content[0]['text']):
            return text(json.dumps(answers[0]))
        return text(json.dumps({'targets': answers}))

    return policy


def ground_truth_words(memory: Any, truth: dict[str, Any]) -> Callable[[bytes], set[str]]:
    """What each picture stored in `memory` (a MemoryService) shows, by a generated
    world's ground truth: the words of the landmarks visible in the frames it covers (a
    frame: the ground-truth image nearest its stamp; a segment: every image in its
    window); label, category and colour, lower case. Pictures found nowhere show nothing.
    """
    landmarks = {item['id']: item for item in truth['landmarks']}
    images = sorted(truth['images'], key=lambda image: image['stamp_ns'])
    stamps = [image['stamp_ns'] for image in images]

    def words_of_landmark(key: str) -> set[str]:
        item = landmarks.get(key, {})
        phrase = ' '.join(str(item.get(f) or '') for f in ('label', 'category', 'color'))
        return set(re.findall(r'[a-z0-9]+', phrase.lower()))

    def visible(first_ns: int, last_ns: int) -> set[str]:
        low = bisect.bisect_left(stamps, first_ns)
        high = bisect.bisect_right(stamps, last_ns)
        if low == high:  # a frame between two images: the nearest one
            nearest = min(
                (i for i in (low - 1, low) if 0 <= i < len(stamps)),
                key=lambda i: abs(stamps[i] - first_ns),
                default=None,
            )
            chosen = [] if nearest is None else [images[nearest]]
        else:
            chosen = images[low:high]
        return {key for image in chosen for key in image['visible']}

    table: dict[str, set[str]] = {}
    store = memory.store
    for level in (FRAME, SEGMENT):
        for session in store.sessions():
            count = store.count(session, level=level)
            if not count:
                continue
            for hit in memory.search(
                SearchQuery(
                    Mode.INDEX_RANGE, count, sessions=[session], level=level, last_index=10**9
                )
            ):
                record = hit.record
                jpeg = memory.image_store.image_of(record)
                if not jpeg:
                    continue
                end = record.end_ns or record.stamp_ns
                seen = visible(record.stamp_ns, end)
                words = set().union(*(words_of_landmark(key) for key in seen)) if seen else set()
                table[hashlib.sha1(jpeg).hexdigest()] = words
    return lambda jpeg: table.get(hashlib.sha1(jpeg).hexdigest(), set())
