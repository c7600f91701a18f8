# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""ROS 2 nodes of waymark: thin adapters between messages and the waymark core."""
