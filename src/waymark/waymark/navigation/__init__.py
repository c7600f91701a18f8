# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Navigation on 2D occupancy maps: grids, goal checks, planning, exploration, following."""
