# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""reasoner_node and what it alone uses: answers, markers, free space, feedback and
reflection."""
