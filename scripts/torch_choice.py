# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Which torch build scripts/bootstrap.sh installs.

The plain `torch` pin resolves to the multi-GB CUDA build on Linux. A machine without an
NVIDIA GPU only needs the CPU build, which PyTorch publishes on its own wheel index; the
bootstrap takes it from there when that index answers, and falls back to the plain pin
when it does not (an offline mirror, a firewall), so that an install never hangs on it.

    python scripts/torch_choice.py build             # prints cpu or cuda
    python scripts/torch_choice.py reachable [URL]   # exit 0 when the index answers

Environment: WAYMARK_TORCH (cpu, cuda or auto: cuda when `nvidia-smi -L` lists a GPU;
default auto), WAYMARK_TORCH_CPU_INDEX (the CPU wheel index), WAYMARK_TORCH_INDEX_TIMEOUT_S
(how long the reachability check may take, default 5 s).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable

CPU_INDEX = 'https://download.pytorch.org/whl/cpu'
REQUESTS = ('auto', 'cpu', 'cuda')
INDEX_TIMEOUT_S = 5.0
NVIDIA_SMI_TIMEOUT_S = 10.0


def gpu_present(timeout_s: float = NVIDIA_SMI_TIMEOUT_S) -> bool:
    """An NVIDIA GPU is there when `nvidia-smi -L` runs and lists one."""
    program = shutil.which('nvidia-smi')
    if program is None:
        return False
    try:
        result = subprocess.run(
            [program, '-L'], capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return result.returncode == 0 and 'GPU' in result.stdout


def wanted_build(request: str, has_gpu: Callable[[], bool] = gpu_present) -> str:
    """'cpu' or 'cuda' for a WAYMARK_TORCH value; `has_gpu` is asked only for 'auto'."""
    request = request.strip().lower() or 'auto'
    if request not in REQUESTS:
        raise ValueError(f'WAYMARK_TORCH must be one of {", ".join(REQUESTS)}, got {request!r}')
    if request == 'auto':
        return 'cuda' if has_gpu() else 'cpu'
    return request


def index_reachable(url: str, timeout_s: float = INDEX_TIMEOUT_S) -> bool:
    """The wheel index answers a HEAD request for torch's page within `timeout_s`."""
    request = urllib.request.Request(url.rstrip('/') + '/torch/', method='HEAD')
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            return response.status < 400
    except (urllib.error.URLError, OSError, ValueError):
        return False


def main(argv: list[str]) -> int:
    if argv[:1] == ['build'] and len(argv) == 1:
        try:
            print(wanted_build(os.environ.get('WAYMARK_TORCH', 'auto')))
        except ValueError as error:
            print(error, file=sys.stderr)
            return 2
        return 0
    if argv[:1] == ['reachable'] and len(argv) <= 2:
        url = argv[1] if len(argv) == 2 else os.environ.get('WAYMARK_TORCH_CPU_INDEX', CPU_INDEX)
        timeout_s = float(os.environ.get('WAYMARK_TORCH_INDEX_TIMEOUT_S', INDEX_TIMEOUT_S))
        return 0 if index_reachable(url, timeout_s) else 1
    print('usage: torch_choice.py build | reachable [URL]', file=sys.stderr)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
