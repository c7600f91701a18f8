# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""safety_node and what it alone uses."""
