# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""navigator_node's parts: the backends that drive checked goals, and exploration."""
