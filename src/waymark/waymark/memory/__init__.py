# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Visuo-spatio-temporal memory: `service` (the facade) over entries, `ingest/` (how
keyframes arrive), `views/` (how they become searchable) and `storage/` (where they live)."""
