# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The views memory_node offers. A new view is its module and one entry in `VIEWS`: its
settings then become memory_node parameters (and rows of docs/parameters.md) and the
factory loads it, with no other edit."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from waymark.memory.views import image, photo_descriptor, text
from waymark.memory.views.view import ViewKind

VIEWS: tuple[ViewKind, ...] = (image.KIND, text.KIND, photo_descriptor.KIND)


def settings_of(kinds: Sequence[ViewKind]) -> type:
    """One frozen settings dataclass holding every kind's settings, in the order given
    (each kind's `load` accepts it: it subclasses each kind's settings)."""
    # A dataclass collects the fields of its bases last base first.
    bases = tuple(kind.settings for kind in reversed(kinds))
    return dataclasses.make_dataclass('ViewSettings', [], bases=bases, frozen=True)


ViewSettings = settings_of(VIEWS)
