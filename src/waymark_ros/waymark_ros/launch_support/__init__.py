# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""What the launch files share: the stack's arguments, the parameters each node gets, the
base drivers, the frames and the RViz layout."""
