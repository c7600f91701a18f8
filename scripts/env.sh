# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
# Source this file to use the built workspace: `source scripts/env.sh`.
_waymark_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck disable=SC1091
source "${WAYMARK_VENV:-$_waymark_root/.venv}/bin/activate"
if [[ -z "${ROS_DISTRO:-}" ]]; then
  export AMENT_PREFIX_PATH="$VIRTUAL_ENV${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}"
fi
# shellcheck disable=SC1091
source "$_waymark_root/install/setup.bash"
export RMW_IMPLEMENTATION="${RMW_IMPLEMENTATION:-rmw_fastrtps_cpp}"
unset _waymark_root
