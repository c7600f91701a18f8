# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Whether a goal photo can be a goal at all, checked before anything is stored or moves.

A photo that does not decode, whose header claims more pixels than the limits allow (it
is refused before decoding, so a small file cannot expand to gigabytes), or with a side
under `MIN_SIDE_PX` (too little to search memory or match a stop view by) is one clear
ValueError. task_node refuses such a goal before it opens a task; the runner checks again
for callers that skip the node.
"""

from __future__ import annotations

from waymark.memory.storage.image_codec import ImageLimits, decode_image

MIN_SIDE_PX = 32  # the photo matcher's smallest image as well


def check_goal_photo(photo: bytes, limits: ImageLimits, min_side_px: int = MIN_SIDE_PX) -> None:
    image = decode_image(photo, limits)
    height, width = image.shape[:2]
    if min(height, width) < min_side_px:
        raise ValueError(
            f'the goal photo is {width}x{height} px: a side under {min_side_px} px shows too '
            'little to look for'
        )
