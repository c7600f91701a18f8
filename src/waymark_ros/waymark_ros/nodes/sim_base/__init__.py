# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""sim_base_node, the simulated base."""
