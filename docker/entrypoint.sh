#!/usr/bin/env bash
# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
# Entry point of the waymark images: source ROS 2, then the workspace (scripts/env.sh:
# the venv and the colcon overlay), then run the command in place of this shell so that
# it receives the container's signals (docker stop -> SIGTERM -> ros2 launch stops the
# nodes cleanly). Without a command it opens a shell.
set -eo pipefail  # no -u: the ROS setup scripts read unset variables

root="${WAYMARK_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
# The ROS setup file: /opt/ros/jazzy/setup.bash from apt, install/setup.bash under it in
# the Jetson images (ROS built from source); the Dockerfiles set ROS_SETUP.
ros_setup="${ROS_SETUP:-/opt/ros/${ROS_DISTRO:-jazzy}/setup.bash}"
if [[ ! -f "$ros_setup" ]]; then
  echo "entrypoint: no ROS 2 setup file at $ros_setup (set ROS_SETUP)" >&2
  exit 1
fi

# Sourced files see the caller's positional parameters: keep the command aside so that
# no setup script reads it as its own arguments.
command=("$@")
set --
# shellcheck disable=SC1090
source "$ros_setup"
# shellcheck disable=SC1091
source "$root/scripts/env.sh"

if (( ${#command[@]} == 0 )); then
  command=(bash)
fi
exec "${command[@]}"
