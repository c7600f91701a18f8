# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""waymark core: spatio-temporal memory for robots, free of any ROS dependency."""

__version__ = '0.1.0'
