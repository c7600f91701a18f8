# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The reasoning agent: a tool-calling loop over memory on an OpenAI-compatible server."""
