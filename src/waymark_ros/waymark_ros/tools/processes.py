# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Start and stop waymark nodes as processes, where `ros2 launch` is not available.

Used by the demo and the tests; on a full ROS 2 install the launch files do this job.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ament_index_python.packages import get_package_prefix

from waymark_ros.ros.spin import EXIT_WITH_PARENT


@dataclass
class NodeProcess:
    name: str
    process: subprocess.Popen
    log_path: Path

    def running(self) -> bool:
        return self.process.poll() is None

    def log_tail(self, lines: int = 30) -> str:
        try:
            return '\n'.join(self.log_path.read_text(errors='replace').splitlines()[-lines:])
        except OSError:
            return ''


def executable(name: str, package: str = 'waymark_ros') -> Path:
    path = Path(get_package_prefix(package)) / 'lib' / package / name
    if not path.exists():
        raise FileNotFoundError(f'{path} not found: build the workspace (make build)')
    return path


def ros_arguments(
    parameters: Mapping[str, object],
    remappings: Mapping[str, str] = {},
    params_file: Path | None = None,
) -> list[str]:
    """Command-line ROS arguments; single parameters override the file's values."""
    args = ['--ros-args']
    if params_file is not None:
        args += ['--params-file', str(params_file)]
    for key, value in parameters.items():
        args += ['-p', f'{key}:={_yaml_value(value)}']
    for source, target in remappings.items():
        args += ['-r', f'{source}:={target}']
    return args


def _yaml_value(value: object) -> str:
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, (list, tuple)):
        return '[' + ','.join(_yaml_value(v) for v in value) + ']'
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return repr(value)


def start_node(
    name: str,
    log_dir: Path,
    parameters: Mapping[str, object] = {},
    remappings: Mapping[str, str] = {},
    env: Mapping[str, str] | None = None,
    params_file: Path | None = None,
) -> NodeProcess:
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f'{name}.log'
    if params_file is not None and not params_file.is_file():
        raise FileNotFoundError(f'parameter file {params_file} not found')
    command = [str(executable(name)), *ros_arguments(parameters, remappings, params_file)]
    with open(log_path, 'wb') as log:
        process = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            # No preexec_fn: running Python in a child forked from a process with gRPC
            # threads (Milvus) can hang it before exec. The node arranges to stop with
            # its parent itself (waymark_ros.ros.spin).
            env={
                **os.environ,
                'PYTHONUNBUFFERED': '1',
                EXIT_WITH_PARENT: str(os.getpid()),
                **(env or {}),
            },
        )
    return NodeProcess(name, process, log_path)


def stop_node(node: NodeProcess, timeout_s: float = 30.0) -> int:
    """SIGINT first, so the node shuts down cleanly (memory_node closes its database)."""
    if node.running():
        node.process.send_signal(signal.SIGINT)
        try:
            node.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            node.process.kill()
            node.process.wait(timeout=10.0)
    return node.process.returncode
