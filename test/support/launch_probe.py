# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""What a launch file would start, read from its LaunchDescription without starting it.

    python test/support/launch_probe.py [--run] LAUNCH_FILE [name:=value ...]

prints, as JSON, one object per node the launch would start (package, executable, name,
namespace, parameters as the node would get them, remappings, additional environment,
whether its exit ends the launch), or
{"error": "..."} when the launch refuses before starting anything. Needs ROS 2 `launch`
and `launch_ros` (installed, or vendored: test_launch_testing.py's activate.sh); run in a
subprocess by the tests, which read the JSON back. With --run, the launch runs for real
(LaunchService, as `ros2 launch` runs it) and the exit code is the launch's.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import yaml
from launch import LaunchContext, LaunchDescription, LaunchService
from launch.actions import IncludeLaunchDescription, TimerAction
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.utilities import normalize_to_list_of_substitutions, perform_substitutions
from launch_ros.actions import Node


def load(path: Path) -> LaunchDescription:
    spec = importlib.util.spec_from_file_location(path.stem.replace('.', '_'), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.generate_launch_description()


def parameters_of(node: Node) -> dict:
    """The node's parameters, later files winning, as a dict of dotted names."""
    values: dict = {}
    for argument, is_file in node._Node__expanded_parameter_arguments or []:
        if not is_file:
            name, _, value = argument.partition(':=')
            values[name] = yaml.safe_load(value)
            continue
        for key, section in (yaml.safe_load(Path(argument).read_text()) or {}).items():
            if key in ('/**', f'/**/{node.node_name.rsplit("/", 1)[-1]}', node.node_name):
                values |= flat(section.get('ros__parameters', {}))
    return values


def flat(tree: dict, prefix: str = '') -> dict:
    out: dict = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            out |= flat(value, f'{prefix}{key}.')
        else:
            out[prefix + key] = value
    return out


def text(value, context: LaunchContext) -> str:
    """A plain string, or substitutions performed."""
    if isinstance(value, str):
        return value
    return perform_substitutions(context, normalize_to_list_of_substitutions(value))


def describe(node: Node, context: LaunchContext) -> dict:
    node._perform_substitutions(context)
    env = {text(key, context): text(value, context) for key, value in node.additional_env or []}
    return {
        'package': text(node.node_package, context),
        'executable': text(node.node_executable, context),
        'name': node.node_name,
        'namespace': node.expanded_node_namespace,
        'parameters': parameters_of(node),
        'remappings': [list(rule) for rule in node.expanded_remapping_rules or []],
        'env': env,
        # the launch ends when it exits (on_exit=Shutdown)
        'required': type(node._ExecuteLocal__on_exit).__name__ == 'Shutdown',
    }


def walk(entities, context: LaunchContext, found: list) -> None:
    """Visit every action as the launch would, except that nodes are described, not run."""
    for entity in entities:
        if isinstance(entity, Node):
            if entity.condition is None or entity.condition.evaluate(context):
                found.append(describe(entity, context))
            continue
        if isinstance(entity, TimerAction):
            # It acts later, in a running launch (the bring-up's resend checks): only the
            # nodes it would start are described.
            walk([a for a in entity.actions if isinstance(a, Node)], context, found)
            continue
        walk(entity.visit(context) or [], context, found)


def main(argv: list[str]) -> int:
    if argv[0] == '--run':
        # as `ros2 launch FILE name:=value` does it
        arguments = [tuple(word.split(':=', 1)) for word in argv[2:]]
        service = LaunchService(argv=argv[2:])
        source = PythonLaunchDescriptionSource(argv[1])
        service.include_launch_description(
            LaunchDescription([IncludeLaunchDescription(source, launch_arguments=arguments)])
        )
        return service.run()
    path, given = Path(argv[0]), argv[1:]
    context = LaunchContext()
    for word in given:
        name, _, value = word.partition(':=')
        context.launch_configurations[name] = value
    found: list = []
    try:
        walk([load(path)], context, found)
    except Exception as error:  # the launch's refusal, as `ros2 launch` would print it
        print(json.dumps({'error': f'{type(error).__name__}: {error}'}))
        return 0
    print(json.dumps({'nodes': found}, default=str))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
