# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The task runner's relocation over memory_node: the views of a turn in place searched by
image through `search_memory`, verified on memory's own pictures (read from its data_dir,
as the reasoner reads them), and aligned in the core (waymark.tasks.view_relocation).

Memory away, or without a view that embeds photos, is a relocation that cannot be made:
the runner then refuses remembered goals from another map epoch rather than guess.
"""

from __future__ import annotations

import numpy as np
from rclpy.node import Node

from waymark.agent.memory_api import MemoryUnavailableError
from waymark.memory.entries import FrameRecord
from waymark.memory.search_query import Mode, SearchQuery
from waymark.memory.storage.image_store import ImageStoreReader
from waymark.parameters.tasks import RelocationParameters
from waymark.tasks.view_relocation import MemoryRelocator, RelocationUnavailableError
from waymark_ros.ros.memory_client import MemoryClient


def memory_relocator(node: Node, params: RelocationParameters) -> MemoryRelocator | None:
    """None when relocation is switched off (no search service named)."""
    if not params.search_service:
        return None
    client = MemoryClient(node, params.timeout_s, params.search_service)

    def similar(image: np.ndarray, k: int) -> list[FrameRecord]:
        try:
            hits = client.search(SearchQuery(Mode.IMAGE, k, image=image))
        except MemoryUnavailableError as error:
            raise RelocationUnavailableError(str(error)) from None
        except ValueError as error:  # memory refused: no view that embeds photos
            raise RelocationUnavailableError(f'memory refused the image search: {error}') from None
        return [hit.record for hit in hits]

    pictures = ImageStoreReader(params.memory_data_dir).image_of
    return MemoryRelocator(similar, pictures, params.view_relocation())
