# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""A synthetic world with readable signs, a scripted robot tour and a rosbag2 writer."""
