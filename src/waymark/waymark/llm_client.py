# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The one place an OpenAI-compatible client is made (vLLM, llama.cpp, a hosted API).

Callers state their own time limits: the agent retries within its deadline itself (so the
client must not), the captioner lets the client retry, a probe asks once.
"""

from __future__ import annotations

import os

import openai

# Local servers (vLLM, llama.cpp) accept any key but the client insists on one.
NO_KEY = 'EMPTY'


def openai_client(
    base_url: str, api_key: str = NO_KEY, timeout_s: float = 60.0, max_retries: int = 0
) -> openai.OpenAI:
    """A client for the server at `base_url`; each request gives up after `timeout_s` and
    is retried by the client at most `max_retries` times."""
    return openai.OpenAI(
        api_key=api_key, base_url=base_url, timeout=timeout_s, max_retries=max_retries
    )


def api_key_from_env(variable: str) -> str:
    """The key in environment variable `variable`, NO_KEY when it is unset or empty."""
    key = os.environ.get(variable, '') if variable else ''
    return key or NO_KEY
