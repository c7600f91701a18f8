# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The View interface: one way entries become searchable, one vector collection each.

MemoryService, SegmentMemory and the factory loop over views and know none by name, so
a new view is its module and one line in `registry.VIEWS`. A view says what a keyframe
gives it (a vector, and text it read), what a closed segment gives it, and how a query
is embedded. Views of one `family` are embedded by one model: a query is embedded once
for them and their cosines compare, so they merge by each entry's best cosine; families
are fused by reciprocal rank (see fusion).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from waymark.memory.entries import FRAME, SEGMENT, TextBox


@dataclass(frozen=True)
class Reading:
    """What a view made of one decoded keyframe: its vector (None: no content for this
    view), and the text it read there with the height of its largest line (share of the
    image height), which become the entry's text, and where each line was read (for
    target localisation)."""

    vector: np.ndarray | None
    text: str = ''
    text_size: float = 0.0
    text_boxes: tuple[TextBox, ...] = ()


class View(ABC):
    """One embedding view. Subclasses set the class attributes and `dim`."""

    name: str
    # Views embedded by one model (one query vector, one cosine scale).
    family: str
    levels: ClassVar[tuple[str, ...]] = (FRAME, SEGMENT)
    # Its vectors embed text: equal cosines mean equal words, and of those the entry that
    # saw them largest ranks first (see fusion.nearest_reading_first).
    ranks_text: ClassVar[bool] = False
    # Search this many times k, so that among many entries with the same content the
    # nearest ones are still found.
    oversampling: ClassVar[int] = 1
    # A segment's vector is made from its frames' vectors of this view (kept until the
    # segment closes) rather than from the segment's text.
    pools_frames: ClassVar[bool] = False
    # It embeds a query photo (`embed_image`).
    image_queries: ClassVar[bool] = False
    # It embeds a description (`embed_text`): a text search with no views named uses it.
    text_queries: ClassVar[bool] = True

    @property
    @abstractmethod
    def dim(self) -> int:
        """Length of its vectors."""

    @abstractmethod
    def embed_text(self, text: str) -> np.ndarray:
        """The unit vector of a text query (or of text stored in this view)."""

    def embed_image(self, image: np.ndarray) -> np.ndarray:
        """The unit vector of an RGB uint8 query photo (views with `image_queries`)."""
        raise ValueError(f'the {self.name!r} view cannot embed an image')

    def read_frame(self, image: np.ndarray) -> Reading:
        """What a decoded RGB keyframe gives this view (frame-level views)."""
        return Reading(None)

    def segment_vector(self, frame_vectors: Sequence[np.ndarray], text: str) -> np.ndarray | None:
        """A closed segment's vector from its frames' vectors of this view (`pools_frames`)
        and the text its frames read; None: the segment has none (yet)."""
        return None


def level_dims(views: Iterable[View], level: str) -> dict[str, int]:
    """The views kept at `level` with their vector sizes (MemoryStore's `views` for
    frames, `segment_views` for segments)."""
    if level not in (FRAME, SEGMENT):
        raise ValueError(f'unknown level {level!r}')
    return {view.name: view.dim for view in views if level in view.levels}


@dataclass(frozen=True)
class ViewKind:
    """A view as memory_node offers it: its settings (a `waymark.settings` dataclass whose
    settings become memory_node parameters) and how they make the view (None: off). `load`
    receives an object holding every view's settings (a subclass of `settings`)."""

    settings: type
    load: Callable[[Any], View | None]
