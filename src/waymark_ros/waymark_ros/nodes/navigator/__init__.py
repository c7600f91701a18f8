# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""navigator_node and what it alone uses: the backends that drive checked goals, the map
inputs, exploration."""
