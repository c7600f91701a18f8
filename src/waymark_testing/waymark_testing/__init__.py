# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Helpers and fixtures shared by the tests of the waymark packages (test doubles live here,
never in the packages they test)."""
