# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""capture_node and what it alone uses."""
