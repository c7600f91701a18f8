# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Questions about where the robot itself was.

"Where was I at 20:27?", "What was my position when I saw the bakery?" and "Where did I
start?" ask for the robot's own pose at a keyframe, not for a thing the keyframe's camera
saw: the answer is where the keyframe was taken, not a target placed in front of it.
"Where did I see the bakery?" asks for the bakery.
"""

from __future__ import annotations

import re

_WHO = r"(?:i|we|the\s+robot(?!'s))"
_ABOUT_THE_ROBOT = re.compile(
    r'\b(?:'
    rf'where\s+(?:was|were|am|are|is)\s+{_WHO}\b'
    r"|(?:what|where)\s+(?:was|is|were)\s+(?:my|our|the\s+robot's)\s+(?:position|location|pose)\b"
    rf'|where\s+did\s+{_WHO}\s+(?:start|begin|stop|end|finish)\b'
    r')',
    re.IGNORECASE,
)


def about_the_robot(question: str) -> bool:
    """Whether `question` asks where the robot itself was (or is)."""
    return _ABOUT_THE_ROBOT.search(question) is not None
