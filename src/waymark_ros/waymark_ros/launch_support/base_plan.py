# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The robot base a launch may start beside the stack: none (the default), or the Go1.

The Go1's driver is `unitree_ros`, a ROS 2 (Humble, Jazzy) package that talks to the robot
over unitree_legged_sdk's high-level mode: it walks at the `geometry_msgs/Twist` it reads on
`cmd_vel` and publishes leg odometry and IMU. In front of it, one command path:

    teleop (joy_vel) and navigator_node (cmd_vel_nav) -> twist_mux -> cmd_vel_mux
        -> safety_node -> cmd_vel -> driver

so teleop too is limited, e-stopped and stopped for obstacles by safety_node, whose
parameters on the Go1 (its input, the first walk's speed cap) are `go1_safety_params_file`.
Neither package is part of this workspace, so a launch asking for them checks that both are
installed before anything starts and says what to do when one is not. Kept apart from
launching.py so that tests check it where `launch` is missing.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ament_index_python.packages import PackageNotFoundError, get_package_prefix

NO_BASE = 'none'
GO1 = 'go1'
BASES = (NO_BASE, GO1)  # nothing that moves a robot starts unless asked

GO1_PACKAGE = 'unitree_ros'
GO1_EXECUTABLE = 'unitree_driver'
GO1_NODE = 'unitree_ros_node'  # the name the driver's source gives its node
GO1_PARAMS = 'go1.yaml'
GO1_SAFETY_PARAMS = 'go1_safety.yaml'  # safety_node on the Go1: input from the mux, speed cap
MUX_PACKAGE = 'twist_mux'
MUX_PARAMS = 'twist_mux.yaml'
MUX_OUTPUT = 'cmd_vel_mux'  # twist_mux's cmd_vel_out, safety_node's input on the Go1
FROM_FILE = ''  # a go1_robot_ip that leaves the parameter file's address


class DriverMissingError(RuntimeError):
    """The base's driver is not installed where the launch looks (AMENT_PREFIX_PATH)."""


@dataclass(frozen=True)
class Driver:
    """What a launch starts for the base: one node, its parameter file, then overrides."""

    package: str
    executable: str
    name: str
    parameter_file: Path
    overrides: dict[str, object] = field(default_factory=dict)
    remappings: tuple[tuple[str, str], ...] = ()


def base_driver(arguments: Mapping[str, str]) -> Driver | None:
    """The driver the `base` argument asks for, checked; None for no base."""
    base = arguments['base'].strip()
    if base == NO_BASE:
        return None
    if base != GO1:
        raise ValueError(f'base must be one of {", ".join(BASES)}, got {base!r}')
    parameter_file = Path(arguments['go1_params_file']).expanduser()
    if not parameter_file.is_file():
        raise ValueError(f'go1_params_file {parameter_file} does not exist')
    overrides: dict[str, object] = {}
    address = arguments['go1_robot_ip'].strip()
    if address != FROM_FILE:
        try:
            overrides['robot_ip'] = str(ipaddress.IPv4Address(address))
        except ValueError:
            raise ValueError(
                f'go1_robot_ip must be an IPv4 address such as 192.168.123.161, got {address!r}'
            ) from None
    return Driver(GO1_PACKAGE, GO1_EXECUTABLE, GO1_NODE, parameter_file, overrides)


def base_mux(arguments: Mapping[str, str], config: Path) -> Driver | None:
    """twist_mux in front of safety_node, for a base that has a driver; else None."""
    if base_driver(arguments) is None:
        return None
    return Driver(
        MUX_PACKAGE,
        MUX_PACKAGE,
        MUX_PACKAGE,
        config / MUX_PARAMS,
        remappings=(('cmd_vel_out', MUX_OUTPUT),),
    )


def base_safety_file(arguments: Mapping[str, str]) -> Path | None:
    """safety_node's parameter file for the base (after the presets), or None."""
    if arguments.get('base', NO_BASE).strip() != GO1:
        return None
    path = Path(arguments['go1_safety_params_file']).expanduser()
    if not path.is_file():
        raise ValueError(f'go1_safety_params_file {path} does not exist')
    return path


def require_installed(
    driver: Driver, find_prefix: Callable[[str], str] = get_package_prefix
) -> Path:
    """The driver's executable; DriverMissingError, saying how to get it, when it is not there."""
    try:
        prefix = Path(find_prefix(driver.package))
    except PackageNotFoundError:
        raise DriverMissingError(
            f"base:={GO1} starts ROS 2 package '{driver.package}', which is not installed "
            'here (not on AMENT_PREFIX_PATH). Install it (twist_mux: apt install '
            'ros-$ROS_DISTRO-twist-mux; unitree_ros: build it in a workspace and source that '
            "workspace's install/setup.bash) before launching (docs/go1.md), or launch with "
            f'base:={NO_BASE}.'
        ) from None
    executable = prefix / 'lib' / driver.package / driver.executable
    if not executable.is_file():
        raise DriverMissingError(
            f"package '{driver.package}' at {prefix} has no executable "
            f"'{driver.executable}' ({executable}): rebuild it (docs/go1.md)"
        )
    return executable
