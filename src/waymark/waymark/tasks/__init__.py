# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The robot's task layer (NavHarness): a task is done when a check at the stop says so,
not when the base arrives; its record outlives the node that ran it."""
