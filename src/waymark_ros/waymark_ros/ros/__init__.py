# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""ROS plumbing shared by several nodes and tools: message conversions, QoS, parameters,
spinning, clients of other nodes. What one node alone uses lives in its room (nodes/)."""
