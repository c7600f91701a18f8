# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The parameters of each ROS node, as settings (waymark.settings): one definition gives the
node its declarations, docs/parameters.md its tables and the config files their check.
Groups reuse the core config dataclasses where their names and units are the parameters'."""
