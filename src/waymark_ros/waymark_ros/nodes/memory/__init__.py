# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""memory_node and what it alone uses: its request answers, status, markers and the lesson
bank."""
