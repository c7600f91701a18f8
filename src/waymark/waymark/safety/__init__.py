# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""What stands between a velocity command and the base: limits, a watchdog, an e-stop and
a stop for obstacles just ahead. Pure logic, run by safety_node."""
