# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The workspace-level tests' own helpers (test/support). The fixtures every test shares
come from the waymark_testing package's pytest plugin."""

from __future__ import annotations

import sys
from pathlib import Path

# test/ shares its name with the standard library's `test` package, so its helpers are
# imported from inside it, as `support`.
ROOT = Path(__file__).resolve().parent
if str(ROOT / 'test') not in sys.path:
    sys.path.insert(0, str(ROOT / 'test'))
