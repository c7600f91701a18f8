# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Command-line tools over a running stack: demo, replay, evaluate, fault drills."""
