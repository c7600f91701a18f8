# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Where a remembered thing is, not only where the camera stood when it saw it."""
