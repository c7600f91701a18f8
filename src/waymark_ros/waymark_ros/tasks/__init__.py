# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The task runner's protocols (waymark.tasks.attempts) over ROS actions and topics."""
