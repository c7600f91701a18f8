# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Test-only stand-ins of message packages (standins/ of this package): built once, then
made usable.

Nav2's and tf2's messages are not on PyPI, so the tests of the navigator's nav2 backend and
of poses from TF build stand-ins holding only what they use (NavigateToPose, TFMessage).
standins/ has a COLCON_IGNORE, so that no build of the repository ever finds them; each is
copied without it into its own workspace under build/, never into the workspace's
install/, so nothing but the tests that ask for it can ever see it.
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

# The source checkout: the workspace's symlink install resolves to it.
PACKAGE = Path(__file__).resolve().parents[1]
ROOT = PACKAGE.parents[1]
SOURCES = PACKAGE / 'standins'
WORKSPACES = ROOT / 'build' / 'test_standins'
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


def build(package: str) -> Path:
    """The stand-in `package`'s install prefix; built only when its sources or the Python
    changed."""
    source = SOURCES / package
    if not (source / 'package.xml').is_file():
        raise ValueError(f'no stand-in {package!r} in {SOURCES}')
    workspace = WORKSPACES / package
    prefix = workspace / 'install'
    workspace.mkdir(parents=True, exist_ok=True)
    with open(workspace / 'build.lock', 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # parallel test sessions build it once
        stamp = workspace / 'stamp'
        wanted = _fingerprint(source)
        if stamp.is_file() and stamp.read_text() == wanted and site_packages(prefix).is_dir():
            return prefix
        stamp.unlink(missing_ok=True)
        for stale in ('src', 'build', 'install'):
            shutil.rmtree(workspace / stale, ignore_errors=True)
        shutil.copytree(source, workspace / 'src' / package)  # away from COLCON_IGNORE
        log = workspace / 'colcon.log'
        env = _build_environment()
        colcon = shutil.which('colcon', path=env['PATH'])
        if colcon is None:
            raise RuntimeError('colcon not found: run scripts/bootstrap.sh')
        with open(log, 'wb') as output:
            done = subprocess.run(
                [
                    colcon,
                    '--log-base',
                    str(workspace / 'log'),
                    'build',
                    '--base-paths',
                    str(workspace / 'src'),
                    '--build-base',
                    str(workspace / 'build'),
                    '--install-base',
                    str(prefix),
                    '--merge-install',
                    '--event-handlers',
                    'console_direct-',
                    'console_cohesion-',
                    'status-',
                ],
                cwd=workspace,
                env=env,
                stdout=output,
                stderr=subprocess.STDOUT,
                timeout=900,
            )
        if done.returncode != 0:
            tail = '\n'.join(log.read_text(errors='replace').splitlines()[-30:])
            raise RuntimeError(f'building the {package} stand-in failed (log: {log}):\n{tail}')
        stamp.write_text(wanted)
    return prefix


def load(prefix: Path, package: str) -> None:
    """Make `package` importable and its typesupport loadable in this process."""
    for name in LIBRARIES:
        ctypes.CDLL(str(prefix / 'lib' / f'lib{package}__{name}.so'), mode=ctypes.RTLD_GLOBAL)
    if str(site_packages(prefix)) not in sys.path:
        sys.path.insert(0, str(site_packages(prefix)))


def child_environment(*prefixes: Path) -> dict[str, str]:
    """os.environ's search paths extended by the stand-ins, for node processes."""
    paths = {
        'AMENT_PREFIX_PATH': list(prefixes),
        'PYTHONPATH': [site_packages(prefix) for prefix in prefixes],
        'LD_LIBRARY_PATH': [prefix / 'lib' for prefix in prefixes],
    }
    return {
        key: os.pathsep.join(filter(None, [*map(str, extra), os.environ.get(key, '')]))
        for key, extra in paths.items()
    }


def site_packages(prefix: Path) -> Path:
    version = f'python{sys.version_info.major}.{sys.version_info.minor}'
    return prefix / 'lib' / version / 'site-packages'


def _fingerprint(source: Path) -> str:
    digest = hashlib.sha256(f'{sys.prefix}\n{sys.version}\n'.encode())
    for path in sorted(p for p in source.rglob('*') if p.is_file()):
        digest.update(str(path.relative_to(source)).encode() + b'\0' + path.read_bytes())
    return digest.hexdigest()


def _build_environment() -> dict[str, str]:
    """As scripts/bootstrap.sh builds: with the venv's ROS wheels unless ROS is sourced."""
    env = dict(os.environ)
    env['PATH'] = os.pathsep.join([str(Path(sys.prefix) / 'bin'), env.get('PATH', '')])
    if not env.get('ROS_DISTRO'):
        prefixes = [sys.prefix, *filter(None, env.get('AMENT_PREFIX_PATH', '').split(os.pathsep))]
        env['AMENT_PREFIX_PATH'] = os.pathsep.join(dict.fromkeys(prefixes))
    return env
