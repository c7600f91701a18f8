# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The nodes, one room (package) each: a node module and the helpers only it uses."""
