#!/usr/bin/env bash
# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
# Health check of the waymark images: healthy while each node executable named in
# WAYMARK_HEALTH_NODES runs (default: the five nodes robot.launch.py and replay.launch.py
# start). ros2 launch keeps going when one node dies, so checking the launch process alone
# would miss it; checking processes needs no DDS discovery and answers at once.
set -euo pipefail

nodes="${WAYMARK_HEALTH_NODES:-capture_node memory_node reasoner_node navigator_node safety_node}"
for node in $nodes; do
  # A node runs as `python3 .../lib/waymark_ros/<node> --ros-args ...`; this script's own
  # command line does not contain that path, so it never matches itself.
  if ! pgrep -f "lib/waymark_ros/${node}( |$)" >/dev/null; then
    echo "unhealthy: ${node} is not running"
    exit 1
  fi
done
echo "healthy: ${nodes}"
