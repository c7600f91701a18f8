# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""One module per node: each a thin ROS adapter over a core object."""
