# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The test-only nav2_msgs stand-in (test/nav2_standin): built once, then made usable.

Nav2's messages are not on PyPI, so tests of the navigator's nav2 backend build a stand-in
holding only NavigateToPose. It goes into its own workspace under build/, never into the
workspace's install/, so nothing but the tests that ask for it can ever see it.
"""

from __future__ import annotations

import ctypes
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / 'test' / 'nav2_standin'
WORKSPACE = ROOT / 'build' / 'test_nav2_standin'
PREFIX = WORKSPACE / 'install'
# In dependency order. This process's library path was fixed when it started, so the
# libraries are loaded by path; later lookups by name (the Python extensions' links, the
# rmw's typesupport dispatch) then find them already loaded.
LIBRARIES = (
    'rosidl_generator_c',
    'rosidl_typesupport_c',
    'rosidl_typesupport_cpp',
    'rosidl_typesupport_fastrtps_c',
    'rosidl_typesupport_fastrtps_cpp',
    'rosidl_typesupport_introspection_c',
    'rosidl_typesupport_introspection_cpp',
    'rosidl_generator_py',
)


def build() -> Path:
    """The stand-in's install prefix; built only when its sources or the Python changed."""
    WORKSPACE.mkdir(parents=True, exist_ok=True)
    with open(WORKSPACE / 'build.lock', 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # parallel test sessions build it once
        stamp = WORKSPACE / 'stamp'
        wanted = _fingerprint()
        if stamp.is_file() and stamp.read_text() == wanted and site_packages(PREFIX).is_dir():
            return PREFIX
        stamp.unlink(missing_ok=True)
        for stale in ('build', 'install'):
            shutil.rmtree(WORKSPACE / stale, ignore_errors=True)
        log = WORKSPACE / 'colcon.log'
        env = _build_environment()
        colcon = shutil.which('colcon', path=env['PATH'])
        if colcon is None:
            raise RuntimeError('colcon not found: run scripts/bootstrap.sh')
        with open(log, 'wb') as output:
            done = subprocess.run(
                [
                    colcon,
                    '--log-base',
                    str(WORKSPACE / 'log'),
                    'build',
                    '--base-paths',
                    str(SOURCE),
                    '--build-base',
                    str(WORKSPACE / 'build'),
                    '--install-base',
                    str(PREFIX),
                    '--merge-install',
                    '--event-handlers',
                    'console_direct-',
                    'console_cohesion-',
                    'status-',
                ],
                cwd=WORKSPACE,
                env=env,
                stdout=output,
                stderr=subprocess.STDOUT,
                timeout=900,
            )
        if done.returncode != 0:
            tail = '\n'.join(log.read_text(errors='replace').splitlines()[-30:])
            raise RuntimeError(f'building the nav2_msgs stand-in failed (log: {log}):\n{tail}')
        stamp.write_text(wanted)
    return PREFIX


def load(prefix: Path) -> None:
    """Make nav2_msgs importable and its typesupport loadable in this process."""
    for name in LIBRARIES:
        ctypes.CDLL(str(prefix / 'lib' / f'libnav2_msgs__{name}.so'), mode=ctypes.RTLD_GLOBAL)
    if str(site_packages(prefix)) not in sys.path:
        sys.path.insert(0, str(site_packages(prefix)))


def child_environment(prefix: Path) -> dict[str, str]:
    """os.environ's search paths extended by the stand-in, for node processes."""
    paths = {
        'AMENT_PREFIX_PATH': prefix,
        'PYTHONPATH': site_packages(prefix),
        'LD_LIBRARY_PATH': prefix / 'lib',
    }
    return {
        key: os.pathsep.join(filter(None, [str(path), os.environ.get(key, '')]))
        for key, path in paths.items()
    }


def site_packages(prefix: Path) -> Path:
    version = f'python{sys.version_info.major}.{sys.version_info.minor}'
    return prefix / 'lib' / version / 'site-packages'


def _fingerprint() -> str:
    digest = hashlib.sha256(f'{sys.prefix}\n{sys.version}\n'.encode())
    for path in sorted(p for p in SOURCE.rglob('*') if p.is_file()):
        digest.update(str(path.relative_to(SOURCE)).encode() + b'\0' + path.read_bytes())
    return digest.hexdigest()


def _build_environment() -> dict[str, str]:
    """As scripts/bootstrap.sh builds: with the venv's ROS wheels unless ROS is sourced."""
    env = dict(os.environ)
    env['PATH'] = os.pathsep.join([str(Path(sys.prefix) / 'bin'), env.get('PATH', '')])
    if not env.get('ROS_DISTRO'):
        prefixes = [sys.prefix, *filter(None, env.get('AMENT_PREFIX_PATH', '').split(os.pathsep))]
        env['AMENT_PREFIX_PATH'] = os.pathsep.join(dict.fromkeys(prefixes))
    return env
