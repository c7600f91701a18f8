# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""ROS plumbing the nodes share: message conversions, QoS, parameters, clients of other nodes."""
