# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Fault drills: kill nodes, break the model, flood the services, send bad input, and
count what the stack loses, answers wrongly or leaves unanswered
(`python -m waymark_ros.tools.drill`)."""
