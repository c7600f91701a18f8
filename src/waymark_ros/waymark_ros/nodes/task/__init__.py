# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""task_node and what it alone uses: the task runner's protocols (waymark.tasks.attempts)
over ROS actions and topics, task messages and reflection requests."""
