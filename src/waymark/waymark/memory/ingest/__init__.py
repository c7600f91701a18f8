# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Getting keyframes into memory: capture, selection, admission, journaling, segments."""
