# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The launch files, checked where ROS 2 `launch` is not installed: read, never run.

Each launch file and waymark_ros/launch_support/launching.py is parsed with `ast`; every
argument used is declared, every executable is installed by setup.py, every file named
exists, argument defaults and choices name real presets and backends, and setup.py installs
all of it where the launch files look. What the launches start (files, per-node
parameters) is worked out by launch_plan.py, which runs here: its parameters must be ones
the nodes declare. test_launch_testing.py runs the launch files themselves where `launch`
is installed.
"""

from __future__ import annotations

import ast
import importlib
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from waymark_ros.launch_support import launch_plan

ROOT = Path(__file__).resolve().parents[1]
LAUNCH = ROOT / 'launch'
CONFIG = ROOT / 'config'
LAUNCHING = ROOT / 'src' / 'waymark_ros' / 'waymark_ros' / 'launch_support' / 'launching.py'
SETUP = ROOT / 'src' / 'waymark_ros' / 'setup.py'
EXTERNAL_EXECUTABLES = {'rviz2'}  # from other packages, installed with ROS
LAUNCH_FILES = ('robot.launch.py', 'replay.launch.py', 'demo.launch.py')


@dataclass
class LaunchSource:
    """What a launch source declares and uses, as written."""

    declared: dict[str, dict[str, ast.expr]] = field(default_factory=dict)  # name: keywords
    used: set[str] = field(default_factory=set)
    executables: set[str] = field(default_factory=set)
    file_names: set[str] = field(default_factory=set)  # '*.yaml' and '*.rviz' literals
    calls: set[str] = field(default_factory=set)
    imports: dict[str, str] = field(default_factory=dict)  # name: module


def read(path: Path) -> LaunchSource:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = LaunchSource()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.imports.update({alias.name: node.module for alias in node.names})
        is_text = isinstance(node, ast.Constant) and isinstance(node.value, str)
        if is_text and re.fullmatch(r'[\w./-]+\.(yaml|rviz)', node.value):
            found.file_names.add(node.value)
        if not isinstance(node, ast.Call):
            continue
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if name is None:
            continue
        found.calls.add(name)
        first = node.args[0] if node.args else None
        text = first.value if isinstance(first, ast.Constant) else None
        if name == 'DeclareLaunchArgument' and isinstance(text, str):
            found.declared[text] = {k.arg: k.value for k in node.keywords if k.arg}
        if name == 'LaunchConfiguration' and isinstance(text, str):
            found.used.add(text)
        for keyword in node.keywords:
            if keyword.arg == 'executable' and isinstance(keyword.value, ast.Constant):
                found.executables.add(keyword.value.value)
    return found


def launching_arguments() -> tuple[str, ...]:
    """launching.ARGUMENTS, read from its source: the names stack_nodes performs."""
    tree = ast.parse(LAUNCHING.read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and node.targets[0].id == 'ARGUMENTS':
            return ast.literal_eval(node.value)
    raise AssertionError('launching.py has no ARGUMENTS')


def declared_of(name: str) -> LaunchSource:
    """A launch file with what it takes from launching.py when it calls stack_arguments."""
    source = read(LAUNCH / name)
    if 'stack_arguments' in source.calls:
        shared = read(LAUNCHING)
        source.declared |= shared.declared
        source.used |= shared.used | set(launching_arguments())
        source.executables |= shared.executables | set(launch_plan.NODES)
        source.file_names |= shared.file_names
        source.imports |= shared.imports
    return source


def console_scripts() -> set[str]:
    return set(re.findall(r"'(\w+) = waymark_ros\.[\w.]+:main'", SETUP.read_text()))


def choices(source: LaunchSource, argument: str) -> list[str] | None:
    """An argument's choices: a literal, or list(NAME) of a name imported from a module."""
    expression = source.declared[argument].get('choices')
    if expression is None:
        return None
    if isinstance(expression, ast.Call) and expression.args:
        expression = expression.args[0]
    if isinstance(expression, ast.Name):
        module = importlib.import_module(source.imports[expression.id])
        return list(getattr(module, expression.id))
    return list(ast.literal_eval(expression))


def default(source: LaunchSource, argument: str) -> str | None:
    expression = source.declared[argument].get('default_value')
    return expression.value if isinstance(expression, ast.Constant) else None


def flatten(tree: dict, prefix: str = '') -> set[str]:
    names = set()
    for key, value in tree.items():
        names |= flatten(value, f'{prefix}{key}.') if isinstance(value, dict) else {prefix + key}
    return names


def configured_parameters(node: str) -> set[str]:
    """The node's parameters in robot.yaml: test_config.py shows the node declares them."""
    sections = yaml.safe_load((CONFIG / 'robot.yaml').read_text())
    return flatten(sections[f'/**/{node}']['ros__parameters'])


@pytest.mark.parametrize('name', LAUNCH_FILES)
def test_a_launch_file_uses_only_declared_arguments(name):
    source = declared_of(name)
    assert 'generate_launch_description' in (LAUNCH / name).read_text()
    assert source.used, name
    assert source.used <= set(source.declared), source.used - set(source.declared)


@pytest.mark.parametrize('name', LAUNCH_FILES)
def test_a_launch_file_starts_only_installed_executables(name):
    source = declared_of(name)
    assert source.executables
    assert source.executables <= console_scripts() | EXTERNAL_EXECUTABLES


@pytest.mark.parametrize('name', LAUNCH_FILES)
def test_every_file_a_launch_file_names_exists(name):
    for file_name in declared_of(name).file_names:
        folder = 'rviz' if file_name.endswith('.rviz') else 'config'
        assert (ROOT / folder / file_name).is_file(), file_name


def test_the_robot_and_replay_launches_take_the_arguments_the_issue_asks_for():
    wanted = {
        'namespace',
        'camera',
        'odometry',
        'models',
        'memory_uri',
        'llm_base_url',
        'llm_model',
        'image_model',
        'backend',
        'rviz',
    }
    for name in ('robot.launch.py', 'replay.launch.py'):
        assert wanted <= set(declared_of(name).declared), name
    assert {'bag', 'rate'} <= set(declared_of('replay.launch.py').declared)
    assert 'default_value' not in declared_of('replay.launch.py').declared['bag']


def test_defaults_and_choices_name_real_presets_and_backends():
    from waymark_ros.nodes.navigator.registry import BACKENDS

    source = declared_of('robot.launch.py')
    assert (CONFIG / 'sensors' / f'{default(source, "camera")}.yaml').is_file()
    assert (CONFIG / 'sensors' / f'{default(source, "odometry")}.yaml').is_file()
    models = {path.stem for path in (CONFIG / 'models').glob('*.yaml')}
    assert set(choices(source, 'models')) == models
    assert default(source, 'models') in models
    assert choices(source, 'backend') == list(BACKENDS)
    assert default(source, 'backend') in BACKENDS


def test_choices_are_read_not_guessed():
    """The reader must see a wrong choice list: a launch source with a stale one fails."""
    source = read(LAUNCHING)
    source.declared['models']['choices'] = ast.parse("['workstation']", mode='eval').body
    models = {path.stem for path in (CONFIG / 'models').glob('*.yaml')}
    assert set(choices(source, 'models')) != models


def test_an_undeclared_argument_is_caught(tmp_path):
    broken = tmp_path / 'broken.launch.py'
    broken.write_text(
        'from launch.actions import DeclareLaunchArgument\n'
        'from launch.substitutions import LaunchConfiguration\n'
        "DeclareLaunchArgument('rate')\n"
        "LaunchConfiguration('rates')\n"
    )
    source = read(broken)
    assert source.used - set(source.declared) == {'rates'}


def test_setup_installs_the_launch_files_configs_and_rviz_next_to_each_other():
    text = SETUP.read_text()
    for folder, pattern in [
        ('launch', '/launch/*.launch.py'),
        ('config', '/config/*.yaml'),
        ('config/sensors', '/config/sensors/*.yaml'),
        ('config/models', '/config/models/*.yaml'),
        ('rviz', '/rviz/*.rviz'),
    ]:
        assert f"(share + '/{folder}', sorted(glob(ROOT + '{pattern}')))" in text, folder
    for name in LAUNCH_FILES:
        source = (LAUNCH / name).read_text()
        assert 'SHARE = Path(__file__).resolve().parent.parent' in source


def arguments(**given: str) -> dict[str, str]:
    values = {
        'camera': 'zed2i',
        'odometry': 'fast_lio_mid360',
        'models': 'workstation',
        'memory_uri': '',
        'llm_base_url': '',
        'llm_model': '',
        'image_model': launch_plan.FROM_PRESET,
        'backend': 'internal',
        'params_file': str(CONFIG / 'robot.yaml'),
        'ros_domain_id': launch_plan.DEFAULT_DOMAIN_ID,
        'discovery_range': launch_plan.DEFAULT_DISCOVERY_RANGE,
        'use_sim_time': 'false',
    }
    return values | given


def test_parameter_files_layer_the_presets_in_order():
    files = launch_plan.parameter_files(
        CONFIG, arguments(models='orin_nx', params_file=str(CONFIG / 'replay.yaml'))
    )
    assert [p.relative_to(CONFIG).as_posix() for p in files] == [
        'robot.yaml',
        'sensors/zed2i.yaml',
        'sensors/fast_lio_mid360.yaml',
        'models/orin_nx.yaml',
        'replay.yaml',
    ]
    assert len(launch_plan.parameter_files(CONFIG, arguments(odometry='none'))) == 3


@pytest.mark.parametrize('argument', ['camera', 'odometry', 'models'])
def test_an_unknown_preset_is_refused_with_the_known_ones(argument):
    with pytest.raises(ValueError, match=r'available: .+') as error:
        launch_plan.parameter_files(CONFIG, arguments(**{argument: 'nope'}))
    assert "'nope'" in str(error.value)


def test_every_override_is_a_parameter_the_node_declares():
    given = arguments(
        memory_uri='http://127.0.0.1:19530',
        llm_base_url='http://127.0.0.1:8000/v1',
        llm_model='Qwen/Qwen2.5-VL-7B-Instruct',
        image_model='google/siglip-base-patch16-224',
        backend='nav2',
    )
    overrides = launch_plan.node_overrides(given, use_sim_time=True)
    assert set(overrides) == set(launch_plan.NODES)
    for node, parameters in overrides.items():
        assert parameters.pop('use_sim_time') is True
        assert set(parameters) <= configured_parameters(node), node
    assert overrides['memory_node']['uri'] == 'http://127.0.0.1:19530'
    assert overrides['reasoner_node']['llm.model'] == overrides['memory_node']['captioner.model']
    assert overrides['navigator_node'] == {'backend': 'nav2', 'autostart': False}


def test_empty_arguments_leave_the_files_values():
    overrides = launch_plan.node_overrides(arguments(), use_sim_time=False)
    assert overrides['memory_node'] == {'use_sim_time': False, 'autostart': False}
    assert overrides['reasoner_node'] == {'use_sim_time': False}


def test_the_launch_drives_the_lifecycle_nodes_and_only_them():
    """The managed nodes start with autostart false (a plain start keeps the default, true)
    and every other node has no autostart to set."""
    assert set(launch_plan.MANAGED) == {'memory_node', 'navigator_node'}
    overrides = launch_plan.node_overrides(arguments(), use_sim_time=False)
    for node in launch_plan.NODES:
        if node in launch_plan.MANAGED:
            assert overrides[node]['autostart'] is False, node
            assert 'LifecycleNode' in node_source(node).read_text(), node
        else:
            assert 'autostart' not in overrides[node], node
    robot = yaml.safe_load((CONFIG / 'robot.yaml').read_text())
    for node in launch_plan.MANAGED:
        assert robot[f'/**/{node}']['ros__parameters']['autostart'] is True, node


def node_source(node: str) -> Path:
    folder = node.removesuffix('_node')
    return ROOT / 'src' / 'waymark_ros' / 'waymark_ros' / 'nodes' / folder / f'{node}.py'


def test_stack_nodes_starts_the_managed_nodes_as_lifecycle_nodes_and_drives_them():
    """Read, not run: stack_nodes makes a launch_ros LifecycleNode for each MANAGED node
    and adds managed_bring_up after it, which requests configure at start, activate once
    configured, and shuts the launch down on a failed transition or an early exit."""
    tree = ast.parse(LAUNCHING.read_text())
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    stack = ast.unparse(functions['stack_nodes'])
    assert 'kind = LifecycleNode if name in MANAGED else Node' in stack
    assert 'nodes += managed_bring_up(node, name)' in stack
    bring_up = ast.unparse(functions['managed_bring_up'])
    for text in (
        'change(Transition.TRANSITION_CONFIGURE)',
        "start_state='configuring', goal_state='inactive', "
        'entities=[change(Transition.TRANSITION_ACTIVATE)]',
        'lifecycle_node_matcher=matches_action(node)',
        'Shutdown(reason=reason)',
        'OnProcessExit(target_action=node',
    ):
        assert text in bring_up, text
    assert bring_up.index('RegisterEventHandler') < bring_up.rindex(
        'change(Transition.TRANSITION_CONFIGURE)'
    )


def test_an_empty_image_model_turns_the_image_view_off_as_the_parameter_does():
    off = launch_plan.node_overrides(arguments(image_model=''), use_sim_time=False)
    assert off['memory_node']['image_model'] == ''
    kept = launch_plan.expected_parameters(CONFIG, arguments(models='orin_nx'), False)
    preset = yaml.safe_load((CONFIG / 'models' / 'orin_nx.yaml').read_text())
    wanted = preset['/**/memory_node']['ros__parameters']['image_model']
    assert kept['memory_node']['image_model'] == wanted != ''
    plan = launch_plan.expected_parameters(CONFIG, arguments(image_model=''), False)
    assert plan['memory_node']['image_model'] == ''


def test_the_expected_parameters_layer_files_then_arguments():
    plan = launch_plan.expected_parameters(
        CONFIG, arguments(camera='realsense_d455', backend='goal_pose'), use_sim_time=True
    )
    assert set(plan) == set(launch_plan.NODES)
    camera = yaml.safe_load((CONFIG / 'sensors' / 'realsense_d455.yaml').read_text())
    preset = camera['/**/capture_node']['ros__parameters']
    for key in flatten(preset):
        assert plan['capture_node'][key] == _lookup(preset, key), key
    assert plan['navigator_node']['backend'] == 'goal_pose'
    assert all(parameters['use_sim_time'] is True for parameters in plan.values())


def test_the_nodes_default_to_a_non_zero_domain_seen_only_on_this_machine():
    assert launch_plan.dds_environment(arguments()) == {
        'ROS_DOMAIN_ID': launch_plan.DEFAULT_DOMAIN_ID,
        'ROS_AUTOMATIC_DISCOVERY_RANGE': 'LOCALHOST',
    }
    assert launch_plan.DEFAULT_DOMAIN_ID != '0'
    wider = launch_plan.dds_environment(arguments(ros_domain_id='5', discovery_range='subnet'))
    assert wider == {'ROS_DOMAIN_ID': '5', 'ROS_AUTOMATIC_DISCOVERY_RANGE': 'SUBNET'}


@pytest.mark.parametrize(
    ('argument', 'value'),
    [
        ('ros_domain_id', '-1'),
        ('ros_domain_id', '102'),
        ('ros_domain_id', 'x'),
        ('ros_domain_id', '\u00b2'),
        ('discovery_range', 'EVERYWHERE'),
    ],
)
def test_a_bad_domain_or_discovery_range_is_refused_before_any_node_starts(argument, value):
    with pytest.raises(ValueError, match=argument):
        launch_plan.dds_environment(arguments(**{argument: value}))


def test_compose_defaults_to_the_same_domain_and_range_as_the_launch():
    compose = yaml.safe_load((ROOT / 'docker' / 'compose.yaml').read_text())
    for service in ('waymark', 'rviz'):
        environment = compose['services'][service]['environment']
        assert environment['ROS_DOMAIN_ID'] == (
            f'${{ROS_DOMAIN_ID:-{launch_plan.DEFAULT_DOMAIN_ID}}}'
        )
        assert environment['ROS_AUTOMATIC_DISCOVERY_RANGE'] == (
            f'${{ROS_AUTOMATIC_DISCOVERY_RANGE:-{launch_plan.DEFAULT_DISCOVERY_RANGE}}}'
        )


def _lookup(tree: dict, dotted: str) -> object:
    for part in dotted.split('.'):
        tree = tree[part]
    return tree


def published_topics() -> set[str]:
    """Topics the nodes publish, absolute, as written in their create_publisher (or
    create_lifecycle_publisher) calls."""
    sources = (ROOT / 'src' / 'waymark_ros' / 'waymark_ros').rglob('*.py')
    call = re.compile(r"create_(?:lifecycle_)?publisher\(\s*\w+,\s*'([\w/]+)'")
    topics = set()
    for path in sources:
        for topic in call.findall(path.read_text()):
            topics.add(topic if topic.startswith('/') else '/' + topic)
    return topics


def test_rviz_shows_what_the_nodes_publish_and_the_robots_inputs():
    layout = yaml.safe_load((ROOT / 'rviz' / 'waymark.rviz').read_text())
    displays = layout['Visualization Manager']['Displays']
    shown = {d['Topic']['Value'] for d in displays if 'Topic' in d}
    inputs = {'/map', '/odom', '/camera/image/compressed'}  # SLAM map, pose, camera
    assert shown - inputs <= published_topics(), shown - inputs - published_topics()
    wanted = {'/memory/markers', '/memory/hits', '/answer/markers', '/plan'}
    assert wanted | {'/navigation_markers', '/map'} <= shown


def stack_call_keywords(name: str) -> dict[str, object]:
    """The literal keywords a launch file gives stack_arguments."""
    tree = ast.parse((LAUNCH / name).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, 'id', '') == 'stack_arguments':
            return {k.arg: ast.literal_eval(k.value) for k in node.keywords}
    raise AssertionError(f'{name} does not call stack_arguments')


@pytest.mark.parametrize(
    ('name', 'default'), [('robot.launch.py', False), ('replay.launch.py', True)]
)
def test_use_sim_time_is_an_argument_whose_default_fits_the_launch(name, default):
    source = declared_of(name)
    assert 'use_sim_time' in source.declared and 'use_sim_time' in source.used
    assert choices(source, 'use_sim_time') == ['true', 'false']
    assert stack_call_keywords(name) == {'use_sim_time': default}


@pytest.mark.parametrize(('text', 'value'), [('true', True), ('False', False), (' TRUE ', True)])
def test_use_sim_time_reaches_every_node(text, value):
    given = arguments(use_sim_time=text)
    assert launch_plan.sim_time(given) is value
    plan = launch_plan.expected_parameters(CONFIG, given, launch_plan.sim_time(given))
    assert set(plan) == set(launch_plan.NODES)
    assert all(parameters['use_sim_time'] is value for parameters in plan.values())


def test_a_use_sim_time_that_is_not_a_boolean_is_refused():
    with pytest.raises(ValueError, match="use_sim_time must be true or false, got 'yes'"):
        launch_plan.sim_time(arguments(use_sim_time='yes'))


def test_the_launch_passes_its_use_sim_time_to_the_four_nodes_and_rviz():
    """stack_nodes reads the argument once, and every Node it makes gets it: the four
    through their overrides (checked above), RViz directly."""
    tree = ast.parse(LAUNCHING.read_text())
    [stack] = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == 'stack_nodes']
    assert 'use_sim_time' not in [a.arg for a in stack.args.args]  # no fixed value
    source = ast.unparse(stack)
    assert 'use_sim_time = sim_time(arguments)' in source
    assert 'overrides = node_overrides(arguments, use_sim_time)' in source
    nodes = [
        n
        for n in ast.walk(stack)
        if isinstance(n, ast.Call) and getattr(n.func, 'id', '') in ('Node', 'kind')
    ]
    assert len(nodes) == 2  # the stack's (one loop, Node or LifecycleNode) and RViz
    for node in nodes:
        parameters = ast.unparse(next(k.value for k in node.keywords if k.arg == 'parameters'))
        assert 'overrides[name]' in parameters or "{'use_sim_time': use_sim_time}" in parameters
