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
import json
import re
from collections.abc import Callable
from typing import Any

from support.scripted_llm import Policy, Step, text

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
