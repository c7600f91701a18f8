# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The shell commands of the docs, run for real where this machine allows, else checked.

Every fenced line of docs/deployment.md, docs/go1.md and README.md that starts with
`ros2 service call` or `ros2 action send_goal` is parsed as the ros2 CLI would parse it
(shlex, then the YAML request), its type is imported and the request filled field by
field, so a misspelt type or field in the docs fails here. The ros2 CLI is not installed
with the PyPI wheels, so the commands then go to the real nodes through rclpy with the same
name and request: memory_node holding four sign keyframes, reasoner_node without an LLM
(embedder-only answers), navigator_node on a small map with a strip of unknown space to
explore, and sim_base_node as the robot (and safety_node idle beside it). The same running
nodes are checked against the docs' topic contract (names, types, reliability, durability,
and nothing left out).

Every other command a user types in the guides (GUIDES: each line of a shell fence) must be
accounted for in CHECKED (checked here against the real message types, declared
parameters, launch arguments, compose services, Makefile targets and files) or in
NOT_HERE, with the reason it cannot run on this machine; a line in neither fails. Their
`ros2 param set` lines also go to the running nodes, which must take the value.
"""

from __future__ import annotations

import importlib
import importlib.util
import ipaddress
import json
import math
import re
import shlex
import subprocess
import sys
import threading
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
import yaml
from support import go1_driver
from support.message_fields import UnknownFieldError, set_fields

ROOT = Path(__file__).resolve().parents[1]
DOCS = (ROOT / 'docs' / 'deployment.md', ROOT / 'docs' / 'go1.md', ROOT / 'README.md')
# Docs whose commands are checked against the message types only: they go to task_node,
# which the running stack of these tests does not start (its own tests drive it).
TYPE_CHECKED_DOCS = (ROOT / 'docs' / 'tasks.md',)
# The guides whose every command is accounted for (CHECKED or NOT_HERE, below).
GUIDES = (ROOT / 'docs' / 'go1.md', ROOT / 'docs' / 'deployment.md')
SHELL_FENCES = {'', 'bash', 'sh', 'shell', 'console'}  # other fences (yaml) are files
PREFIXES = (('ros2', 'service', 'call'), ('ros2', 'action', 'send_goal'))
# Options of the two commands that take a value (everything else is a flag).
VALUE_OPTIONS = {'-r', '--rate'}

# The test world. The sign keyframes of support.signs stand at x = 0, 2, 4, 6 m, y = 1 m;
# the session is named as capture_node names one recorded at their first stamp (T0).
SESSION = 'run-20260115T100000Z'
RESOLUTION = 0.1
ORIGIN = (-1.5, -1.5)  # the map covers x -1.5..8.5 m, y -1.5..3.5 m
UNKNOWN_FROM_X = 7.0  # unknown beyond: the frontier the Explore goal drives to
ROBOT_START = (1.0, 1.0, 0.0)


# -- parsing the docs --------------------------------------------------------------------


@dataclass(frozen=True)
class Command:
    where: str  # file:line
    kind: str  # 'service' or 'action'
    name: str
    type_name: str
    request: dict = field(default_factory=dict)
    flags: tuple[str, ...] = ()

    @property
    def short_name(self) -> str:
        return self.name.strip('/').rsplit('/', 1)[-1]


def fenced_lines(path: Path, languages: set[str] | None = None) -> list[tuple[int, str]]:
    """(line number, line) of every line inside ``` fences (of `languages` only, if given),
    continuations joined."""
    lines, inside, pending, start, language = [], False, '', 0, ''
    for number, raw in enumerate(path.read_text().splitlines(), start=1):
        if raw.lstrip().startswith('```'):
            inside, pending = not inside, ''
            language = raw.strip().removeprefix('```').strip().lower()
            continue
        if not inside or (languages is not None and language not in languages):
            continue
        if not pending:
            start = number
        text = pending + raw.strip()
        if text.endswith('\\'):
            pending = text[:-1] + ' '
            continue
        pending = ''
        lines.append((start, text))
    return lines


def parse_command(line: str, where: str = '') -> Command | None:
    """The Command of a `ros2 service call` / `ros2 action send_goal` line, else None."""
    words = shlex.split(line, comments=True)
    prefix = next((p for p in PREFIXES if tuple(words[: len(p)]) == p), None)
    if prefix is None:
        return None
    positional, flags = [], []
    rest = iter(words[len(prefix) :])
    for word in rest:
        if word in VALUE_OPTIONS:
            flags.append(f'{word} {next(rest)}')
        elif word.startswith('-'):
            flags.append(word)
        else:
            positional.append(word)
    if len(positional) not in (2, 3):
        raise ValueError(f'{where}: expected NAME TYPE [REQUEST], got {positional}')
    request = yaml.safe_load(positional[2]) if len(positional) == 3 else {}
    if request is None:
        request = {}
    if not isinstance(request, dict):
        raise ValueError(f'{where}: the request must be a YAML mapping, got {request!r}')
    kind = 'service' if prefix[1] == 'service' else 'action'
    return Command(where, kind, positional[0], positional[1], request, tuple(flags))


def documented_commands(docs: tuple[Path, ...] = DOCS) -> tuple[list[Command], list[str]]:
    """The commands of `docs`, and what could not be parsed (file:line: why)."""
    commands, errors = [], []
    for path in docs:
        if not path.is_file():
            continue
        for number, line in fenced_lines(path):
            where = f'{path.relative_to(ROOT)}:{number}'
            try:
                command = parse_command(line, where)
            except (ValueError, yaml.YAMLError) as error:
                errors.append(f'{where}: {line}\n    {error}')
                continue
            if command is not None:
                commands.append(command)
    return commands, errors


def interface(type_name: str):
    """'waymark_interfaces/srv/Query' -> the class."""
    parts = type_name.split('/')
    if len(parts) != 3 or parts[1] not in ('srv', 'action', 'msg'):
        raise ValueError(f'{type_name!r} is not PACKAGE/srv|action/NAME')
    package, kind, name = parts
    return getattr(importlib.import_module(f'{package}.{kind}'), name)


def request_of(command: Command):
    """The filled request (service) or goal (action) of a documented command."""
    cls = interface(command.type_name)
    msg = cls.Request() if command.kind == 'service' else cls.Goal()
    return set_fields(msg, command.request)


COMMANDS, PARSE_ERRORS = documented_commands()
TASK_COMMANDS, TASK_PARSE_ERRORS = documented_commands(TYPE_CHECKED_DOCS)


def command_id(command: Command) -> str:
    return f'{command.where}-{command.short_name}'


# -- without DDS -------------------------------------------------------------------------


def test_set_fields_fills_nested_messages_and_sequences():
    from builtin_interfaces.msg import Time

    from waymark_interfaces.action import GoTo
    from waymark_interfaces.srv import ListSessions, SearchMemory

    request = set_fields(
        SearchMemory.Request(),
        {
            'mode': 'range',
            'position': {'x': 2, 'y': 1.5},  # an int where a float goes, as YAML writes it
            'radius': 3,
            'sessions': ['a', 2026],  # an unquoted number where text goes
            'stamp': {'sec': 7},
            'image': {'format': 'jpeg', 'data': [255, 216]},
        },
    )
    assert request.mode == 'range' and request.radius == 3.0
    assert (request.position.x, request.position.y, request.position.z) == (2.0, 1.5, 0.0)
    assert list(request.sessions) == ['a', '2026']
    assert request.stamp == Time(sec=7) and bytes(request.image.data) == b'\xff\xd8'
    goal = set_fields(
        GoTo.Goal(), {'target': {'header': {'frame_id': 'map'}, 'pose': {'orientation': {'w': 1}}}}
    )
    assert goal.target.header.frame_id == 'map' and goal.target.pose.orientation.w == 1.0
    response = set_fields(ListSessions.Response(), {'sessions': [{'name': 'x', 'frames': 3}]})
    assert response.sessions[0].name == 'x' and response.sessions[0].frames == 3
    assert set_fields(ListSessions.Request(), None) == ListSessions.Request()


def test_set_fields_refuses_unknown_fields_and_wrong_types():
    from waymark_interfaces.action import GoTo
    from waymark_interfaces.srv import Query

    with pytest.raises(UnknownFieldError, match=r"no field 'questoin'.*question"):
        set_fields(Query.Request(), {'questoin': 'where?'})
    with pytest.raises(UnknownFieldError, match="Point has no field 'w'"):
        set_fields(GoTo.Goal(), {'target': {'pose': {'position': {'w': 1.0}}}})
    with pytest.raises(TypeError, match='navigate'):
        set_fields(Query.Request(), {'navigate': 'yes'})
    with pytest.raises(TypeError, match='sessions'):
        set_fields(Query.Request(), {'sessions': 'run-1'})
    with pytest.raises(TypeError, match='target'):
        set_fields(GoTo.Goal(), {'target': 3})


def test_a_command_line_is_parsed_as_the_ros2_cli_reads_it():
    command = parse_command(
        'ros2 action send_goal /go_to waymark_interfaces/action/GoTo '
        '"{target: {header: {frame_id: map}}}" --feedback  # drive'
    )
    assert command.kind == 'action' and command.name == '/go_to'
    assert command.type_name == 'waymark_interfaces/action/GoTo'
    assert command.request == {'target': {'header': {'frame_id': 'map'}}}
    assert command.flags == ('--feedback',)
    bare = parse_command('ros2 service call /list_sessions waymark_interfaces/srv/ListSessions')
    assert bare.request == {} and bare.short_name == 'list_sessions'
    assert parse_command('ros2 topic echo /answer') is None
    typo = parse_command(
        'ros2 service call /query waymark_interfaces/srv/Query "{question: hi, navigte: true}"'
    )
    with pytest.raises(UnknownFieldError, match='navigte'):
        request_of(typo)


def test_every_documented_command_parses():
    assert not PARSE_ERRORS + TASK_PARSE_ERRORS, '\n'.join(PARSE_ERRORS + TASK_PARSE_ERRORS)


def test_the_docs_show_a_command_for_every_service_and_action_a_user_calls():
    shown = {command.short_name for command in COMMANDS}
    wanted = {'query', 'ask', 'go_to', 'explore', 'search_memory', 'list_sessions'}
    assert wanted <= shown, f'no documented command for {sorted(wanted - shown)}'


def slug(heading: str) -> str:
    """The anchor a Markdown renderer (GitHub's) gives a heading."""
    text = re.sub(r'[^\w\- ]', '', heading.strip().lower())
    return text.replace(' ', '-')


def test_the_deployment_guide_links_to_files_and_sections_that_exist():
    guide = ROOT / 'docs' / 'deployment.md'
    links = re.findall(r'\]\(([^)\s]+)\)', guide.read_text())
    assert links
    for link in links:
        if '://' in link:
            continue
        target, _, section = link.partition('#')
        path = (guide.parent / target).resolve() if target else guide
        assert path.is_file(), f'{link}: no {path.relative_to(ROOT)}'
        if section:
            headings = re.findall(r'^#+ (.+)$', path.read_text(), flags=re.MULTILINE)
            assert section in {slug(h) for h in headings}, f'{link}: no such section'


def test_the_task_guide_shows_a_command_for_every_task_endpoint():
    shown = {command.short_name for command in TASK_COMMANDS}
    wanted = {'run_task', 'mark', 'list_tasks', 'get_task', 'feedback'}
    assert wanted <= shown, f'no command in tasks.md for {sorted(wanted - shown)}'


@pytest.mark.parametrize('command', COMMANDS + TASK_COMMANDS, ids=command_id)
def test_every_documented_command_names_a_real_type_and_real_fields(command):
    kind = command.type_name.split('/')[1]
    assert kind == ('srv' if command.kind == 'service' else 'action'), command.where
    request_of(command)  # raises on an unknown type, field or a value of the wrong type


# -- every command of the guides, accounted for ------------------------------------------


ASSIGNMENT = re.compile(r'^\w+=\S*$')  # NAME=value before a command: its environment


@dataclass(frozen=True)
class GuideLine:
    """A command line; `text` and `words` without the NAME=value words in front of it."""

    where: str  # file:line
    text: str
    words: tuple[str, ...]


def guide_line(where: str, text: str) -> GuideLine | None:
    words = shlex.split(text, comments=True)
    while len(words) > 1 and ASSIGNMENT.match(words[0]):
        text = text.split(words.pop(0), 1)[1].lstrip()
    return GuideLine(where, text, tuple(words)) if words else None


def guide_lines() -> list[GuideLine]:
    """Each command line of the guides' shell fences (comments and blank lines left out)."""
    found = []
    for path in GUIDES:
        for number, text in fenced_lines(path, SHELL_FENCES):
            line = guide_line(f'{path.relative_to(ROOT)}:{number}', text)
            if line is not None:
                found.append(line)
    return found


def option_values(words: tuple[str, ...], options: set[str]) -> tuple[list[str], dict]:
    """The positional words, and {option: [values]} of the options that take a value."""
    positional, values = [], {}
    rest = iter(words)
    for word in rest:
        if word in options:
            values.setdefault(word, []).append(next(rest))
        elif not word.startswith('-'):
            positional.append(word)
    return positional, values


def check_interface_call(line: GuideLine) -> None:
    """`ros2 service call` / `ros2 action send_goal`: the type and fields (run over DDS below)."""
    request_of(parse_command(line.text, line.where))


# Topics a user publishes on in the guides, and the type the subscriber takes.
SUBSCRIBED = {
    '/e_stop': 'std_msgs/msg/Bool',  # safety_node: true stops the base, false releases it
    **{f'/{topic}': type_name for topic, type_name in go1_driver.SUBSCRIPTIONS.items()},
}
# Subscribed reliable and transient local (a latched state), as safety_node and
# navigator_node take `e_stop`.
LATCHED_SUBSCRIPTIONS = {'/e_stop'}
TOPIC_PUB_OPTIONS = {
    '-r',
    '--rate',
    '-p',
    '--print',
    '-t',
    '--times',
    '-w',
    '--wait-matching-subscriptions',
    '--keep-alive',
    '-n',
    '--node-name',
    '--qos-profile',
    '--qos-depth',
    '--qos-history',
    '--qos-reliability',
    '--qos-durability',
}


def check_topic_pub(line: GuideLine) -> None:
    """`ros2 topic pub TOPIC TYPE [VALUES]`: the type a subscriber takes, real fields."""
    positional, options = option_values(line.words[3:], TOPIC_PUB_OPTIONS)
    assert len(positional) in (2, 3), f'expected TOPIC TYPE [VALUES], got {positional}'
    topic, type_name = positional[:2]
    assert topic in SUBSCRIBED, f'nothing documented subscribes {topic}: add it to SUBSCRIBED'
    assert type_name == SUBSCRIBED[topic], f'{topic} takes {SUBSCRIBED[topic]}, not {type_name}'
    values = yaml.safe_load(positional[2]) if len(positional) == 3 else {}
    set_fields(interface(type_name)(), values or {})
    if topic in LATCHED_SUBSCRIPTIONS:
        # A volatile publisher never matches a transient-local subscription: the message
        # would be dropped without a word, and an e-stop would not stop anything.
        assert options.get('--qos-durability') == ['transient_local'], (
            f'{topic} is subscribed transient local: publish with --qos-durability transient_local'
        )


def node_settings(node: str) -> dict:
    from waymark.settings import settings
    from waymark_ros.tools.parameters_doc import NODES

    name = node.strip('/').rsplit('/', 1)[-1]
    assert name in NODES, f'{node} is not one of the nodes ({", ".join(NODES)})'
    return {info.name: info for info in settings(NODES[name])}


def check_param_set(line: GuideLine) -> None:
    """`ros2 param set NODE NAME VALUE`: a declared, live parameter and a value it takes."""
    assert len(line.words) == 6, 'expected ros2 param set NODE NAME VALUE'
    node, name, text = line.words[3:]
    declared = node_settings(node)
    assert name in declared, f'{node} declares no parameter {name}'
    spec = declared[name].spec
    assert spec.live, f'{node} {name} is read-only: it cannot be set on a running node'
    value = yaml.safe_load(text)
    if spec.low is not None:
        assert spec.low <= value <= spec.high, f'{name}={value} outside {spec.low}..{spec.high}'
    elif spec.choices:
        assert value in spec.choices, f'{name}={value} not one of {spec.choices}'


def check_launch(line: GuideLine) -> None:
    """`ros2 launch waymark_ros FILE a:=b`: the file exists and declares every argument."""
    from test_docker import launch_invocations, launch_problems

    invocations = launch_invocations(list(line.words))
    assert invocations, 'not a launch of waymark_ros'
    for launch, arguments in invocations:
        assert launch_problems(launch, arguments) == []


LIFECYCLE_TRANSITIONS = {'configure', 'activate', 'deactivate', 'cleanup', 'shutdown'}


def check_lifecycle(line: GuideLine) -> None:
    """`ros2 lifecycle get|set NODE [TRANSITION]`: a lifecycle node, a standard transition."""
    verb, node, *transition = line.words[2:]
    name = node.strip('/')
    room = ROOT / 'src' / 'waymark_ros' / 'waymark_ros' / 'nodes' / name.removesuffix('_node')
    source = room / f'{name}.py'
    assert source.is_file() and 'LifecycleNode' in source.read_text(), f'{node}: no lifecycle'
    assert verb in ('get', 'set') and len(transition) == (verb == 'set')
    assert set(transition) <= LIFECYCLE_TRANSITIONS, transition


def check_python_module(line: GuideLine) -> None:
    """`python -m MODULE --option ...`: the module runs with --help and has every option."""
    module = line.words[2]
    done = subprocess.run(
        [sys.executable, '-m', module, '--help'], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    missing = [w for w in line.words[3:] if w.startswith('--') and w not in done.stdout]
    assert not missing, f'{module} has no {missing}'


def check_python_code(line: GuideLine) -> None:
    """`python -c CODE`: the code compiles and the modules it imports are installed."""
    code = line.words[2]
    compile(code, line.where, 'exec')
    modules = re.findall(r'\bimport (\w+)|\bfrom (\w+)', code)
    missing = [m for m in (a or b for a, b in modules) if importlib.util.find_spec(m) is None]
    assert not missing, f'not installed: {missing}'


def check_make(line: GuideLine) -> None:
    """`make TARGET`: the Makefile has it."""
    targets = set(re.findall(r'^([\w-]+):', (ROOT / 'Makefile').read_text(), flags=re.M))
    assert set(line.words[1:]) <= targets, f'no make target {set(line.words[1:]) - targets}'


COMPOSE_VERBS = {'up', 'down', 'logs', 'stop', 'start', 'restart', 'ps', 'build', 'pull'}


def check_compose(line: GuideLine) -> None:
    """`docker compose -f FILE [--profile P] VERB [SERVICE...]`: services and profiles exist."""
    words, files, profiles = iter(line.words[2:]), [], []
    for word in words:  # compose's own options come before the verb
        if word in ('-f', '--file'):
            files.append(next(words))
        elif word == '--profile':
            profiles.append(next(words))
        else:
            verb = word
            break
    named = [word for word in words if not word.startswith('-')]  # the verb's flags
    assert files, 'name the compose file (-f docker/compose.yaml): the guides run from the root'
    assert verb in COMPOSE_VERBS, f'docker compose {verb}?'
    for name in files:
        services = yaml.safe_load((ROOT / name).read_text())['services']
        assert set(named) <= set(services), f'no service {set(named) - set(services)}'
        known = {p for service in services.values() for p in service.get('profiles', [])}
        assert set(profiles) <= known, f'no profile {set(profiles) - known}'
        for service in named:
            wanted = services[service].get('profiles')
            assert not wanted or set(wanted) & set(profiles), (
                f'{service} runs only with --profile {wanted[0]}'
            )


def check_node_executable(line: GuideLine) -> None:
    """`install/waymark_ros/lib/waymark_ros/NODE --ros-args ...`: an installed node, files
    that exist, parameters it declares."""
    from test_launch_files import console_scripts

    name = Path(line.words[0]).name
    assert name in console_scripts(), f'setup.py installs no {name}'
    _, values = option_values(line.words[1:], {'--params-file', '-p', '-r'})
    for path in values.get('--params-file', []):
        assert (ROOT / path).is_file(), f'no {path}'
    if values.get('-p'):
        declared = node_settings(name)
        for assignment in values['-p']:
            assert assignment.split(':=')[0] in declared, f'{name} declares no {assignment}'


def check_file(line: GuideLine) -> None:
    """`source FILE`: the file is in the workspace."""
    assert (ROOT / line.words[1]).is_file(), f'no {line.words[1]}'


def check_export(line: GuideLine) -> None:
    """`export NAME=VALUE` of the DDS settings: a value ROS 2 takes."""
    from waymark_ros.launch_support import launch_plan

    name, _, value = line.words[1].partition('=')
    if name == 'ROS_DOMAIN_ID':
        assert 0 <= int(value) <= launch_plan.MAX_DOMAIN_ID
    elif name == 'ROS_AUTOMATIC_DISCOVERY_RANGE':
        assert value in launch_plan.DISCOVERY_RANGES, value
    elif name == 'RMW_IMPLEMENTATION':
        assert value in {'rmw_fastrtps_cpp', 'rmw_cyclonedds_cpp', 'rmw_connextdds'}, value
    elif name == 'WAYMARK_DDS_INTERFACE':  # config/robot.env puts it in CYCLONEDDS_URI
        assert re.fullmatch(r'[\w.-]{1,15}', value), f'{value} is no interface name'
    elif name == 'WAYMARK_BIND_ADDRESS':  # docker compose files: where Milvus and vLLM listen
        address = ipaddress.ip_address(value)  # 0.0.0.0 counts as private: every interface
        assert address.is_private and not address.is_unspecified, f'{value}: one private address'
    elif name == 'CYCLONEDDS_URI':
        interfaces = ET.fromstring(value).findall('./Domain/General/Interfaces/NetworkInterface')
        assert interfaces and all(i.get('name') for i in interfaces), value
    else:
        raise AssertionError(f'no check for {name}: add one to check_export')


def check_go1_driver(line: GuideLine) -> None:
    """`ros2 run unitree_ros unitree_driver --ros-args ...`: the workspace's parameter file
    for that node, parameters the driver declares (it cannot run without the robot)."""
    from waymark_ros.launch_support import base_plan

    assert line.words[2:4] == (base_plan.GO1_PACKAGE, base_plan.GO1_EXECUTABLE)
    _, values = option_values(line.words[4:], {'--params-file', '-p'})
    for path in values.get('--params-file', []):
        sections = yaml.safe_load((ROOT / path).read_text())
        assert set(sections[f'/**/{base_plan.GO1_NODE}']['ros__parameters']) <= (
            go1_driver.PARAMETERS
        )
    for assignment in values.get('-p', []):
        assert assignment.split(':=')[0] in go1_driver.PARAMETERS, assignment


def check_patch(line: GuideLine) -> None:
    """`git -C DRIVER apply "$PWD/docker/patches/P"`: a patch of the workspace, the one the
    Go1 image applies (run from the repository's root)."""
    patch = line.words[-1].removeprefix('$PWD/')
    assert (ROOT / patch).is_file(), f'no {patch}'
    assert f'apply /tmp/patches/{Path(patch).name}' in (ROOT / 'docker/Dockerfile.go1').read_text()


def check_twist_mux(line: GuideLine) -> None:
    """`ros2 run twist_mux twist_mux --ros-args --params-file F ...`: F is the workspace's
    and holds a twist_mux section (the mux itself needs a ROS install)."""
    _, values = option_values(line.words[4:], {'--params-file', '-r'})
    assert values.get('--params-file'), 'twist_mux needs its parameter file'
    for path in values['--params-file']:
        sections = yaml.safe_load((ROOT / path).read_text())
        assert any(key.endswith('twist_mux') for key in sections), f'{path}: no twist_mux'


def check_rviz(line: GuideLine) -> None:
    """`rviz2 -d FILE`: a layout of the workspace."""
    assert line.words[1] == '-d' and (ROOT / line.words[2]).is_file(), line.text


# Commands checked here: (pattern the line starts with, its check).
CHECKED: list[tuple[str, Callable[[GuideLine], None]]] = [
    (r'ros2 (service call|action send_goal) ', check_interface_call),
    (r'ros2 topic pub ', check_topic_pub),
    (r'ros2 param set ', check_param_set),
    (r'ros2 launch waymark_ros ', check_launch),
    (r'ros2 lifecycle ', check_lifecycle),
    (r'ros2 run unitree_ros ', check_go1_driver),
    (r'ros2 run twist_mux twist_mux ', check_twist_mux),
    (r'rviz2 -d ', check_rviz),
    (r'python3? -m ', check_python_module),
    (r'python3? -c ', check_python_code),
    (r'make ', check_make),
    (r'docker compose ', check_compose),
    (r'install/waymark_ros/lib/waymark_ros/', check_node_executable),
    (r'source (scripts|config)/', check_file),
    (r'git -C \S*unitree_ros apply ', check_patch),
    (r'export \w+=', check_export),
]
# Commands that cannot run on this machine: (pattern the line starts with, why).
NOT_HERE: list[tuple[str, str]] = [
    (r'ros2 bag record ', 'needs the ros2 CLI (a ROS install) and the sensors publishing'),
    (r'ros2 topic (hz|echo) ', "needs the ros2 CLI and the robot's driver publishing"),
    (
        r'ros2 launch (livox_ros_driver2|fast_lio) ',
        "the lidar's driver and the SLAM: a ROS install with them built, and the MID-360",
    ),
    (r'ros2 run tf2_ros ', 'needs tf2_ros (a ROS install) and, for tf2_echo, the robot'),
    (r'ros2 run teleop_twist_keyboard ', 'needs a ROS install, a keyboard and the robot'),
    (r'(mkdir|cd) .*unitree_ws', "makes the driver's workspace on the robot's computer"),
    (r'git clone .*unitree_ros', "needs the network: the driver's source"),
    (r'source /opt/ros/', 'needs a ROS install'),
    (r'source ~/unitree_ws/', "needs the driver's workspace, built on the robot's computer"),
    (r'(rosdep install|colcon build) ', "builds the driver's workspace: a ROS install, root"),
    (r'ip -br link$', "lists this machine's interfaces; the name is the robot computer's"),
    (r'sudo (ip|nmcli|netplan) ', "changes the robot computer's network (root)"),
    (r'ping ', 'needs the robot on the network'),
    (r'vllm serve ', 'needs a GPU; test_docs_vllm.py checks its flags against the presets'),
    (r'curl .*:8000/v1/', 'needs the GPU host running vLLM'),
]


def classify(line: GuideLine) -> tuple[str, Callable[[GuideLine], None] | None]:
    """('checked', check) or ('not here', None); AssertionError saying how to classify."""
    for pattern, check in CHECKED:
        if re.match(pattern, line.text):
            return 'checked', check
    for pattern, _ in NOT_HERE:
        if re.match(pattern, line.text):
            return 'not here', None
    raise AssertionError(
        f'{line.where}: `{line.text}` is not accounted for: add a check to CHECKED, or a '
        'row to NOT_HERE with the reason it cannot run here (test/test_docs_commands.py)'
    )


def is_checked(line: GuideLine) -> bool:
    """Whether a check of CHECKED takes the line (an unclassified one fails elsewhere)."""
    return any(re.match(pattern, line.text) for pattern, _ in CHECKED)


GUIDE_LINES = guide_lines()


def test_every_command_of_the_guides_is_accounted_for():
    assert {line.where.split(':')[0] for line in GUIDE_LINES} == {
        str(path.relative_to(ROOT)) for path in GUIDES
    }
    problems = []
    for line in GUIDE_LINES:
        try:
            classify(line)
        except AssertionError as error:
            problems.append(str(error))
    assert not problems, '\n'.join(problems)


@pytest.mark.parametrize(
    'line',
    [line for line in GUIDE_LINES if is_checked(line)],
    ids=lambda line: line.where,
)
def test_guide_command_is_checked(line):
    _, check = classify(line)
    try:
        check(line)
    except (AssertionError, ValueError, KeyError, TypeError, OSError) as error:
        pytest.fail(f'{line.where}: `{line.text}`\n    {type(error).__name__}: {error}')


def line_of(text: str) -> GuideLine:
    return guide_line('test', text)


LATCHED = '--qos-reliability reliable --qos-durability transient_local'


def test_an_unclassified_command_says_how_to_classify_it():
    with pytest.raises(AssertionError, match='add a check to CHECKED, or a row to NOT_HERE'):
        classify(line_of('rm -rf ~/.waymark'))
    assert classify(line_of('ping -c 3 192.168.123.161'))[0] == 'not here'


@pytest.mark.parametrize(
    ('text', 'error'),
    [
        (
            f'ros2 topic pub --once {LATCHED} /e_stop std_msgs/msg/Bool "{{dta: true}}"',
            UnknownFieldError,
        ),
        (
            f'ros2 topic pub --once {LATCHED} /e_stop std_msgs/msg/String "{{data: x}}"',
            AssertionError,
        ),
        (
            'ros2 topic pub --once /e_stop std_msgs/msg/Bool "{data: true}"',
            AssertionError,
        ),  # volatile
        ('ros2 topic pub --once /estop std_msgs/msg/Bool "{data: true}"', AssertionError),
        ('ros2 param set /navigator_node follower.max_speed 0.2', AssertionError),
        ('ros2 param set /navigator_node follower.max_linear 9.0', AssertionError),
        ('ros2 param set /navigator_node backend nav2', AssertionError),  # read-only
        ('ros2 launch waymark_ros robot.launch.py base:=go1 bogus:=1', AssertionError),
        ('docker compose -f docker/compose.yaml up -d go2', AssertionError),
        ('docker compose -f docker/compose.yaml up -d go1', AssertionError),  # no profile
        ('make nowhere', AssertionError),
        ('WAYMARK_TORCH=cpu make biuld', AssertionError),
        ('python3 -c "import torhc"', AssertionError),
        ('python3 -c "import torch; print(torch.__version__"', SyntaxError),
        ('export ROS_DOMAIN_ID=250', AssertionError),
        ('export CYCLONEDDS_URI="<CycloneDDS/>"', AssertionError),
        ('export WAYMARK_BIND_ADDRESS=0.0.0.0', AssertionError),
        ('export WAYMARK_DDS_INTERFACE="enp3s0 wlan0"', AssertionError),
        ('source config/robot.yml', AssertionError),
        ('git -C src/unitree_ros apply "$PWD/docker/patches/timeout.patch"', AssertionError),
        (
            'ros2 run unitree_ros unitree_driver --ros-args -p odometry_topic_name:=x',
            AssertionError,
        ),
        ('ros2 lifecycle set /capture_node activate', AssertionError),
        ('install/waymark_ros/lib/waymark_ros/memory_node --ros-args -p url:=x', AssertionError),
    ],
)
def test_the_checks_catch_a_wrong_command(text, error):
    line = line_of(text)
    kind, check = classify(line)
    assert kind == 'checked'
    with pytest.raises(error):
        check(line)


# -- over DDS: the running nodes ---------------------------------------------------------


def floor_plan() -> np.ndarray:
    """10 m x 5 m, walls round it, known and free up to x = 7 m, unknown beyond."""
    cells = np.zeros((50, 100), dtype=np.int8)
    cells[:1, :] = cells[-1:, :] = cells[:, :1] = cells[:, -1:] = 100
    first_unknown = round((UNKNOWN_FROM_X - ORIGIN[0]) / RESOLUTION)
    cells[1:-1, first_unknown:-1] = -1
    return cells


@dataclass
class Stack:
    ros: object
    nodes: list
    outcomes: list  # navigation/outcome messages (JSON)

    def logs(self) -> str:
        return '\n'.join(
            f'----- {node.name} (exit {node.process.returncode}) -----\n{node.log_tail(40)}'
            for node in self.nodes
        )


@pytest.fixture(scope='module')
def stack(tmp_path_factory):
    """memory_node with the sign keyframes, reasoner_node without an LLM, navigator_node
    on the floor plan, sim_base_node as the robot, and capture_node and safety_node for the
    contract."""
    from nav_msgs.msg import OccupancyGrid
    from std_msgs.msg import String

    from waymark_ros.ros import qos
    from waymark_ros.ros.navigation_msgs import occupancy_grid_msg
    from waymark_ros.tools.processes import start_node, stop_node
    from waymark_testing.ros_harness import RosHarness, wait_until
    from waymark_testing.signs import SIGNS, keyframe, publish_and_wait

    root = tmp_path_factory.mktemp('docs')
    logs = root / 'logs'
    ros = RosHarness()
    nodes = []
    try:
        grid = ros.node.create_publisher(OccupancyGrid, '/map', qos.latched())
        stamp = ros.node.get_clock().now().to_msg()
        grid.publish(occupancy_grid_msg(floor_plan(), RESOLUTION, ORIGIN, 'map', stamp))
        outcomes = ros.collect(String, 'navigation/outcome', qos.latched(10))
        memory = ros.latest_json('memory/stats')
        nodes.append(start_node('memory_node', logs, {'data_dir': str(root / 'memory')}))
        nodes.append(start_node('sim_base_node', logs, {'initial_pose': list(ROBOT_START)}))
        # With its defaults, for the contract: it reads cmd_vel_nav, where nothing publishes
        # here (the navigator drives cmd_vel itself), so it stays silent after its start.
        nodes.append(start_node('safety_node', logs, {}))
        nodes.append(
            start_node(
                'navigator_node',
                logs,
                {
                    'goal_timeout_s': 60.0,
                    'follower.max_linear': 1.0,
                    'follower.max_linear_accel': 1.0,
                },
            )
        )
        nodes.append(
            start_node(
                'reasoner_node',
                logs,
                {'traces.dir': str(root / 'traces'), 'memory.data_dir': str(root / 'memory')},
            )
        )
        # The keyframes below stand for this capture session's: its current map epoch is
        # theirs, so the navigator drives to their poses.
        nodes.append(
            start_node(
                'capture_node', logs, {'state_dir': str(root / 'capture'), 'session': SESSION}
            )
        )
        wait_until(lambda: 'frames' in memory, 90, 'memory_node did not start')
        keyframes = [keyframe(i, text, session=SESSION) for i, text in enumerate(SIGNS)]
        publish_and_wait(ros, keyframes, memory, len(SIGNS))
    except BaseException:
        for node in nodes:
            print(f'----- {node.name} -----\n{node.log_tail(60)}')
        for node in reversed(nodes):
            stop_node(node)
        ros.close()
        raise
    yield Stack(ros, nodes, outcomes)
    for node in reversed(nodes):
        stop_node(node)
    ros.close()


@pytest.fixture
def running(stack, request):
    """The stack, with the nodes' logs printed when the test fails."""
    yield stack
    report = getattr(request.node, 'rep_call', None)
    if report is not None and report.failed:
        print(stack.logs())


def send_goal(ros, action_type, name: str, goal, timeout_s: float = 30.0):
    from rclpy.action import ActionClient

    from waymark_testing.actions import connect
    from waymark_testing.ros_harness import wait_until

    client = ActionClient(ros.node, action_type, name)
    connect(client, timeout_s)
    feedback: list = []
    arrived = threading.Event()

    def on_feedback(msg) -> None:
        feedback.append(msg.feedback)
        arrived.set()

    sent = client.send_goal_async(goal, feedback_callback=on_feedback)
    wait_until(sent.done, timeout_s, f'{name}: goal not answered')
    handle = sent.result()
    assert handle.accepted, f'{name}: goal rejected'
    return client, handle, feedback, arrived


def result_of(handle, timeout_s: float):
    from waymark_testing.ros_harness import wait_until

    future = handle.get_result_async()
    wait_until(future.done, timeout_s, 'no result')
    return future.result()


def run_query(stack: Stack, command: Command, request) -> None:
    from waymark_interfaces.msg import Answer
    from waymark_interfaces.srv import Query
    from waymark_testing.ros_harness import wait_until

    response = stack.ros.call(Query, command.name, request, timeout_s=90)
    assert response.success, response.message
    answer = response.answer
    # Without an LLM the answer is memory's best match for the question, with its pose.
    assert answer.used_fallback and 'embedder-only' in response.message
    assert answer.kind == Answer.KIND_POSITION and answer.has_goal
    assert answer.goal.header.frame_id == 'map'
    named = [w for w in ('pharmacy', 'bakery', 'library') if w in request.question.lower()]
    if named:
        assert answer.evidence[0].text.lower() == named[0], answer.evidence[0].text
    if request.sessions:
        assert {hit.session for hit in answer.evidence} <= set(request.sessions)
    if not request.navigate:
        return
    assert response.message.endswith('goal sent to the navigator'), response.message

    def drive():
        records = (json.loads(msg.data) for msg in list(stack.outcomes))
        return next((r for r in records if r['trace_id'] == answer.trace_id), None)

    wait_until(drive, 90, 'the drive to the answer did not end')
    record = drive()
    assert record['outcome'] == 'reached', record['message']
    goal = answer.goal.pose.position
    assert math.dist(record['final'][:2], (goal.x, goal.y)) <= 0.3


def run_search(stack: Stack, command: Command, request) -> None:
    from waymark_interfaces.srv import SearchMemory

    response = stack.ros.call(SearchMemory, command.name, request)
    assert response.success, response.message
    assert response.hits, f'no hits: {response.message}'
    if request.mode == SearchMemory.Request.MODE_TEXT:
        top = response.hits[0].text.lower()
        assert top and top in request.text.lower(), top
    if request.mode == SearchMemory.Request.MODE_RANGE:
        for hit in response.hits:
            p = hit.pose.pose.position
            assert math.dist((p.x, p.y), (request.position.x, request.position.y)) <= (
                request.radius + 1e-6
            )
    if request.mode == SearchMemory.Request.MODE_TIME:
        start = request.stamp.sec * 10**9 + request.stamp.nanosec
        assert all(
            h.start_stamp.sec * 10**9 + h.start_stamp.nanosec >= start for h in response.hits
        )
    if request.sessions:
        assert {hit.session for hit in response.hits} <= set(request.sessions)


def run_list_sessions(stack: Stack, command: Command, request) -> None:
    from waymark_interfaces.srv import ListSessions
    from waymark_testing.signs import SIGNS

    response = stack.ros.call(ListSessions, command.name, request)
    assert response.success, response.message
    sessions = {info.name: info for info in response.sessions}
    assert SESSION in sessions, response.message
    assert sessions[SESSION].frames == len(SIGNS)


def run_delete_session(stack: Stack, command: Command, request) -> None:
    from waymark_interfaces.srv import DeleteSession

    response = stack.ros.call(DeleteSession, command.name, request)
    assert response.success, response.message


def run_ask(stack: Stack, command: Command, goal) -> None:
    from action_msgs.msg import GoalStatus

    from waymark_interfaces.action import Ask

    client, handle, _, _ = send_goal(stack.ros, Ask, command.name, goal)
    try:
        done = result_of(handle, 90)
    finally:
        client.destroy()
    assert done.status == GoalStatus.STATUS_SUCCEEDED, done.result.message
    assert done.result.success and done.result.answer.has_goal, done.result.message


def run_go_to(stack: Stack, command: Command, goal) -> None:
    from waymark_interfaces.action import GoTo

    client, handle, feedback, _ = send_goal(stack.ros, GoTo, command.name, goal)
    try:
        result = result_of(handle, 90).result
    finally:
        client.destroy()
    outcomes = {GoTo.Result.OUTCOME_REACHED, GoTo.Result.OUTCOME_REFUSED}
    outcomes |= {GoTo.Result.OUTCOME_FAILED, GoTo.Result.OUTCOME_CANCELED}
    assert result.outcome in outcomes
    # The docs' example target lies in the free part of the test map: it must be reached.
    assert result.outcome == GoTo.Result.OUTCOME_REACHED, result.message
    target, final = goal.target.pose.position, result.final_pose.pose.position
    assert math.dist((final.x, final.y), (target.x, target.y)) <= 0.3
    assert all(f.distance_remaining >= 0.0 for f in feedback)


def run_explore(stack: Stack, command: Command, goal) -> None:
    from waymark_interfaces.action import Explore
    from waymark_testing.ros_harness import wait_until

    client, handle, feedback, arrived = send_goal(stack.ros, Explore, command.name, goal)
    try:
        finished = handle.get_result_async()
        # The unknown strip makes a frontier: the robot sets off, and feedback comes. The
        # docs' budget is minutes, so the goal is cancelled once it is under way.
        wait_until(lambda: arrived.is_set() or finished.done(), 30, 'no feedback, no result')
        if not finished.done():
            cancel = handle.cancel_goal_async()
            wait_until(cancel.done, 10, 'cancel not answered')
        wait_until(finished.done, 30, 'no result after the cancel')
    finally:
        client.destroy()
    result = finished.result().result
    assert result.outcome != Explore.Result.OUTCOME_FAILED, result.message
    assert feedback, f'ended before any feedback: {result.message}'
    assert result.outcome == Explore.Result.OUTCOME_CANCELED, result.message
    first = feedback[0]
    assert first.current_goal.header.frame_id == 'map' and first.frontiers >= 1
    assert first.current_goal.pose.position.x > UNKNOWN_FROM_X - 1.5  # the frontier


def run_any_service(stack: Stack, command: Command, request) -> None:
    response = stack.ros.call(interface(command.type_name), command.name, request)
    assert response is not None


def run_any_action(stack: Stack, command: Command, goal) -> None:
    client, handle, _, _ = send_goal(stack.ros, interface(command.type_name), command.name, goal)
    try:
        result_of(handle, 60)
    finally:
        client.destroy()


# Each documented name goes to the node that serves it, with what to check of its answer.
RUNNERS = {
    'query': run_query,  # reasoner_node
    'ask': run_ask,  # reasoner_node
    'search_memory': run_search,  # memory_node
    'list_sessions': run_list_sessions,  # memory_node
    'delete_session': run_delete_session,  # memory_node
    'go_to': run_go_to,  # navigator_node
    'explore': run_explore,  # navigator_node
}


@pytest.mark.dds
@pytest.mark.parametrize('command', COMMANDS, ids=command_id)
def test_documented_command_runs_against_the_nodes(running, command):
    runner = RUNNERS.get(command.short_name)
    if runner is None:
        runner = run_any_service if command.kind == 'service' else run_any_action
    runner(running, command, request_of(command))


PARAM_SETS = [line for line in GUIDE_LINES if line.words[:3] == ('ros2', 'param', 'set')]


@pytest.mark.dds
@pytest.mark.parametrize('line', PARAM_SETS, ids=lambda line: line.where)
def test_documented_param_set_is_taken_by_the_running_node(running, line):
    """As `ros2 param set` does it: the node takes the value; the old one is put back."""
    from waymark_testing.parameters import get_parameter, set_parameters

    node, name, text = line.words[3:]
    node = node.strip('/')
    value = yaml.safe_load(text)
    before = get_parameter(running.ros, node, name)
    try:
        result = set_parameters(running.ros, node, {name: type(before)(value)})[name]
        assert result.successful, result.reason
        assert get_parameter(running.ros, node, name) == value
    finally:
        set_parameters(running.ros, node, {name: before})


# -- the topic contract ------------------------------------------------------------------

KINDS = {
    'subscribes',
    'publishes',
    'serves service',
    'calls service',
    'serves action',
    'calls action',
}


@dataclass(frozen=True)
class Endpoint:
    node: str
    kind: str
    name: str  # fully qualified, in the root namespace
    type_name: str
    qos: tuple[str, ...] = ()  # reliability, durability, history ('' where not given)


def contract_rows(path: Path = ROOT / 'docs' / 'deployment.md') -> tuple[list[Endpoint], set]:
    """The rows of the topic contract that hold with the nodes' defaults, and the nodes."""
    text = path.read_text()
    section = text.split('\n## The topic contract', 1)[1].split('\n## ', 1)[0]
    rows, nodes = [], set()
    for block in section.split('\n### ')[1:]:
        node = block.split(None, 1)[0]
        nodes.add(node)
        for line in block.splitlines():
            cells = [cell.strip() for cell in line.strip().strip('|').split('|')]
            if len(cells) != 5 or cells[0] not in KINDS:
                continue
            kind, name_cell, type_cell, qos_cell, notes = cells
            name = re.match(r'`([^`]+)`', name_cell)
            if name is None or notes.startswith('only with'):
                continue  # unset by default, or absent under the defaults
            qos = tuple(part.strip() for part in qos_cell.split(',')) if qos_cell else ()
            if kind in ('subscribes', 'publishes'):
                qos = tuple(re.sub(r'\s*\(.*\)$', '', part) for part in qos)
            topic = name.group(1)
            topic = topic if topic.startswith('/') else '/' + topic
            rows.append(Endpoint(node, kind, topic, type_cell.strip('`'), qos))
    return rows, nodes


def graph_endpoints(node, names: set) -> set[Endpoint]:
    """What the running nodes `names` have in the ROS graph, with QoS for topics."""
    from rclpy.action import (
        get_action_client_names_and_types_by_node,
        get_action_server_names_and_types_by_node,
    )

    found = set()
    for name in names:
        listings = {
            'serves service': node.get_service_names_and_types_by_node(name, '/'),
            'calls service': node.get_client_names_and_types_by_node(name, '/'),
            'serves action': get_action_server_names_and_types_by_node(node, name, '/'),
            'calls action': get_action_client_names_and_types_by_node(node, name, '/'),
        }
        for kind, listing in listings.items():
            for topic, types in listing:
                if '/_action/' in topic or topic.startswith(f'/{name}/'):
                    continue  # action internals, parameter services
                found.update(Endpoint(name, kind, topic, t) for t in types)
        topics = {
            'publishes': (
                node.get_publisher_names_and_types_by_node,
                node.get_publishers_info_by_topic,
            ),
            'subscribes': (
                node.get_subscriber_names_and_types_by_node,
                node.get_subscriptions_info_by_topic,
            ),
        }
        for kind, (by_node, info_by_topic) in topics.items():
            for topic, _ in by_node(name, '/'):
                if '/_action/' in topic or topic in ('/rosout', '/parameter_events'):
                    continue
                for info in info_by_topic(topic):
                    if info.node_name == name and info.node_namespace == '/':
                        found.add(Endpoint(name, kind, topic, info.topic_type, describe(info)))
    return found


def describe(info) -> tuple[str, ...]:
    from rclpy.qos import DurabilityPolicy, HistoryPolicy, ReliabilityPolicy

    profile = info.qos_profile
    reliability = {
        ReliabilityPolicy.RELIABLE: 'reliable',
        ReliabilityPolicy.BEST_EFFORT: 'best effort',
    }.get(profile.reliability, str(profile.reliability))
    durability = {
        DurabilityPolicy.VOLATILE: 'volatile',
        DurabilityPolicy.TRANSIENT_LOCAL: 'transient local',
    }.get(profile.durability, str(profile.durability))
    history = {
        HistoryPolicy.KEEP_LAST: f'keep last {profile.depth}',
        HistoryPolicy.KEEP_ALL: 'keep all',
    }.get(profile.history, '')  # DDS discovery does not always carry the history
    return reliability, durability, history


def matches(documented: Endpoint, live: Endpoint) -> bool:
    if (documented.node, documented.kind, documented.name, documented.type_name) != (
        live.node,
        live.kind,
        live.name,
        live.type_name,
    ):
        return False
    if documented.kind not in ('subscribes', 'publishes'):
        return True
    reliability, durability, history = live.qos
    want = documented.qos
    return want[:2] == (reliability, durability) and (not history or want[2] == history)


@pytest.mark.dds
def test_the_topic_contract_matches_the_running_nodes(running):
    from waymark_testing.ros_harness import wait_until

    rows, nodes = contract_rows()
    assert nodes >= {
        'capture_node',
        'memory_node',
        'reasoner_node',
        'navigator_node',
        'safety_node',
    }
    assert rows and all(len(r.qos) == 3 for r in rows if r.kind in ('subscribes', 'publishes'))
    documented = {(r.node, r.kind, r.name, r.type_name) for r in rows}
    state: dict = {}

    def compare() -> bool:
        live = graph_endpoints(running.ros.node, {r.node for r in rows})
        state['live'] = live
        state['missing'] = [r for r in rows if not any(matches(r, e) for e in live)]
        state['undocumented'] = sorted(
            {(e.node, e.kind, e.name, e.type_name) for e in live} - documented
        )
        return not state['missing'] and not state['undocumented']

    try:
        wait_until(compare, 30, 'the graph did not match the contract')
    except AssertionError:
        pytest.fail(
            'the topic contract of docs/deployment.md differs from the running nodes:\n'
            + ''.join(f'  documented, not running: {r}\n' for r in state['missing'])
            + ''.join(f'  running, not documented: {e}\n' for e in state['undocumented'])
            + ''.join(f'  running: {e}\n' for e in sorted(state['live'], key=str))
        )
