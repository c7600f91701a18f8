# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Lessons that earn trust (SMA): short procedural notes from verified outcomes, retrieved
by task similarity and by how often they helped since."""
