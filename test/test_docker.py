# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The Docker files (docker/) checked against the workspace, without Docker or ROS.

Images cannot be built here, so what can go wrong without a build is checked by reading
the files: pinned images, build targets that exist, ports and volumes that agree, health
checks and start order, launch commands that name existing launch files, arguments and
presets, files the images copy or run, and the packages and build step of the images.
Each check is a function returning its problems; the negative tests feed it a broken copy
to show it notices.
"""

from __future__ import annotations

import ast
import copy
import json
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DOCKER = ROOT / 'docker'
DOCKERFILES = (DOCKER / 'Dockerfile', DOCKER / 'Dockerfile.jetson')
IN_IMAGE = '/opt/waymark/'  # WORKDIR of the images: the workspace copied whole
PRESET_ARGUMENTS = {
    'models': 'config/models',
    'camera': 'config/sensors',
    'odometry': 'config/sensors',
}
VARIABLE = re.compile(r'\$\{(\w+)(?::?-([^}]*))?\}')

Compose = dict[str, Any]
Instruction = tuple[str, str]


COMPOSE_FILES = ('compose.yaml', 'compose.orin.yaml')
# Milvus and vLLM ask for no password: they listen where this variable says, loopback unless
# set, so that nobody publishes them on every interface by mistake (docs/deployment.md).
BIND_ADDRESS = '${WAYMARK_BIND_ADDRESS:-127.0.0.1}'


def compose(name: str = 'compose.yaml') -> Compose:
    return yaml.safe_load((DOCKER / name).read_text())


def resolve(value: Any) -> str:
    """`value` with compose's ${VAR:-default} variables replaced by their defaults."""
    return VARIABLE.sub(lambda match: match.group(2) or '', str(value))


def argv(command: str | list[Any] | None) -> list[str]:
    if command is None:
        return []
    return [
        resolve(word) for word in (shlex.split(command) if isinstance(command, str) else command)
    ]


def instructions(path: Path) -> list[Instruction]:
    """(INSTRUCTION, arguments) of a Dockerfile, continuation lines joined."""
    result, pending = [], ''
    for line in path.read_text().splitlines():
        if line.strip().startswith('#') or not line.strip():
            continue
        pending += line.rstrip().removesuffix('\\') + ' '
        if not line.rstrip().endswith('\\'):
            keyword, _, rest = pending.strip().partition(' ')
            result.append((keyword.upper(), rest.strip()))
            pending = ''
    return result


def stages(path: Path) -> dict[str, tuple[str, list[Instruction]]]:
    """Each named stage: (its FROM image or parent stage, its instructions)."""
    result: dict[str, tuple[str, list[Instruction]]] = {}
    body: list[Instruction] = []
    for keyword, rest in instructions(path):
        if keyword == 'FROM':
            words = [word for word in rest.split() if not word.startswith('--')]
            body = []
            name = words[2] if len(words) == 3 and words[1].upper() == 'AS' else f'#{len(result)}'
            result[name] = (words[0], body)
        elif result:
            body.append((keyword, rest))
    return result


def exec_form(rest: str) -> list[str]:
    return json.loads(rest) if rest.startswith('[') else shlex.split(rest)


def apt_packages(path: Path, stage: str) -> set[str]:
    """Packages apt-get installs in `stage` and the stages it is built on."""
    all_stages = stages(path)
    base, body = all_stages[stage]
    found = apt_packages(path, base) if base in all_stages else set()
    for keyword, rest in body:
        for words in re.findall(r'apt-get install ([^&;|]*)', rest) if keyword == 'RUN' else []:
            found |= {word for word in words.split() if not word.startswith('-')}
    return found


def image_problem(image: str) -> str | None:
    if '@sha256:' in image:
        return None
    name, _, tag = image.rpartition(':')
    if not name or '/' in tag:
        return f'{image}: no tag'
    if tag == 'latest':
        return f'{image}: the moving tag latest'
    return None


def build_problems(service: dict[str, Any]) -> list[str]:
    build = service['build']
    dockerfile = DOCKER / build.get('context', '.') / build.get('dockerfile', 'Dockerfile')
    if not dockerfile.is_file():
        return [f'no Dockerfile {dockerfile}']
    target = build.get('target')
    if target is not None and target not in stages(dockerfile):
        return [f'{dockerfile.name} has no stage {target}']
    return []


def published(service: dict[str, Any]) -> set[tuple[str, int, int]]:
    """(host address, host port, container port) of each published port."""
    found = set()
    for port in service.get('ports', []):
        if isinstance(port, dict):
            address = resolve(port.get('host_ip', ''))
            found.add((address, int(resolve(port['published'])), int(port['target'])))
        else:
            *host, container = resolve(port).split(':')
            address = host[0] if len(host) == 2 else ''
            found.add((address, int(host[-1]) if host else int(container), int(container)))
    return found


def launch_invocations(words: list[str]) -> list[tuple[str, dict[str, str]]]:
    """(launch file, arguments) of each `ros2 launch waymark_ros FILE a:=b ...` in `words`,
    also inside `bash -c "..."` strings."""
    found = []
    for index, word in enumerate(words):
        if ' ' in word and 'ros2 launch' in word:
            found += launch_invocations(shlex.split(word))
        elif words[index : index + 3] == ['ros2', 'launch', 'waymark_ros']:
            rest = words[index + 3 :]
            arguments = dict(w.split(':=', 1) for w in rest[1:] if ':=' in w)
            found.append((rest[0] if rest else '', arguments))
    return found


def declared_arguments(launch_file: Path) -> set[str]:
    """First positional (or name=) string of every DeclareLaunchArgument call in the launch
    file and in the waymark_ros modules it imports (the shared stack arguments)."""
    tree = ast.parse(launch_file.read_text())
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == 'waymark_ros':
            modules |= {f'waymark_ros.{alias.name}' for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            modules.add(node.module or '')
        elif isinstance(node, ast.Import):
            modules |= {alias.name for alias in node.names}
    trees = [tree]
    for module in sorted(m for m in modules if m.startswith('waymark_ros.')):
        path = ROOT / 'src' / 'waymark_ros' / (module.replace('.', '/') + '.py')
        if path.is_file():
            trees.append(ast.parse(path.read_text()))
    names = set()
    for node in (node for each in trees for node in ast.walk(each)):
        if isinstance(node, ast.Call) and _called(node) == 'DeclareLaunchArgument':
            keywords = [k.value for k in node.keywords if k.arg == 'name']
            name = (node.args or keywords or [None])[0]
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                names.add(name.value)
    return names


def _called(call: ast.Call) -> str:
    function = call.func
    return function.attr if isinstance(function, ast.Attribute) else getattr(function, 'id', '')


def launch_problems(launch: str, arguments: dict[str, str]) -> list[str]:
    launch_file = ROOT / 'launch' / launch
    if not launch_file.is_file():
        return [f'no launch file launch/{launch}']
    declared = declared_arguments(launch_file)
    problems = [
        f'{launch} declares no argument {name}' for name in arguments if name not in declared
    ]
    for name, folder in PRESET_ARGUMENTS.items():
        if name in arguments and not (ROOT / folder / f'{arguments[name]}.yaml').is_file():
            problems.append(f'{name}:={arguments[name]}: no {folder}/{arguments[name]}.yaml')
    return problems


def all_launches() -> list[tuple[str, str, dict[str, str]]]:
    """(where, launch file, arguments) of every launch command in compose and the Dockerfiles."""
    found = [
        (f'compose {name}', launch, arguments)
        for name, service in compose()['services'].items()
        for launch, arguments in launch_invocations(argv(service.get('command')))
    ]
    for path in DOCKERFILES:
        for keyword, rest in instructions(path):
            if keyword in ('CMD', 'ENTRYPOINT'):
                found += [(path.name, *each) for each in launch_invocations(exec_form(rest))]
    return found


def health_problems(services: dict[str, Any]) -> list[str]:
    problems = [
        f'{name} has no health check'
        for name in ('etcd', 'minio', 'milvus', 'vllm')
        if not services[name].get('healthcheck', {}).get('test')
    ]
    waits_for = services['waymark'].get('depends_on', {})
    for name in ('milvus', 'vllm'):
        condition = waits_for.get(name, {}) if isinstance(waits_for, dict) else {}
        if condition.get('condition') != 'service_healthy':
            problems.append(f'waymark does not wait for {name} to be healthy')
    return problems


def port_problems(services: dict[str, Any]) -> list[str]:
    problems = []
    arguments = launch_invocations(argv(services['waymark']['command']))[0][1]
    for service, port, argument in (
        ('milvus', 19530, 'memory_uri'),
        ('vllm', 8000, 'llm_base_url'),
    ):
        if not any(
            address == '127.0.0.1' and host == port
            for address, host, _ in published(services[service])
        ):
            problems.append(f'{service} does not publish {port} on 127.0.0.1')
        url = urlparse(arguments.get(argument, ''))
        if url.hostname not in ('127.0.0.1', 'localhost') or url.port != port:
            problems.append(f'waymark {argument}={arguments.get(argument)} is not 127.0.0.1:{port}')
    return problems


def bind_problems(services: dict[str, Any]) -> list[str]:
    """Published ports not bound to BIND_ADDRESS: on every interface, or a fixed address."""
    problems = []
    for name, service in services.items():
        for port in service.get('ports', []):
            address = port.get('host_ip', '') if isinstance(port, dict) else str(port)
            if not str(address).startswith(BIND_ADDRESS):
                problems.append(f'{name} publishes {port} outside {BIND_ADDRESS}')
    return problems


def volume_problems(config: Compose) -> list[str]:
    declared = set(config.get('volumes') or {})
    problems = []
    for name, service in config['services'].items():
        for volume in service.get('volumes', []):
            source = volume['source'] if isinstance(volume, dict) else str(volume).split(':')[0]
            if source.startswith(('.', '/')):
                if not source.startswith('/') and not (DOCKER / source).exists():
                    problems.append(f'{name} mounts {source}, which does not exist')
            elif source not in declared:
                problems.append(f'{name} uses the undeclared volume {source}')
    return problems


def option(words: list[str], name: str) -> str | None:
    return words[words.index(name) + 1] if name in words else None


# --- compose -------------------------------------------------------------------------------


def test_compose_has_the_services():
    assert {'etcd', 'minio', 'milvus', 'vllm', 'waymark'} <= set(compose()['services'])


def test_every_image_is_pinned_or_built_here():
    problems = []
    for service in compose()['services'].values():
        if 'build' in service:
            problems += build_problems(service)
        else:
            problems.append(image_problem(resolve(service.get('image', ''))))
    for path in DOCKERFILES:
        names = set(stages(path))
        problems += [image_problem(base) for base, _ in stages(path).values() if base not in names]
    assert [problem for problem in problems if problem] == []


def test_unpinned_images_and_missing_targets_are_caught():
    assert image_problem('milvusdb/milvus')
    assert image_problem('vllm/vllm-openai:latest')
    assert image_problem('localhost:5000/waymark')
    assert image_problem('ros:jazzy-ros-base-noble') is None
    service = copy.deepcopy(compose()['services']['waymark'])
    service['build']['target'] = 'nowhere'
    assert build_problems(service) == ['Dockerfile has no stage nowhere']


def test_services_publish_on_loopback_where_waymark_looks():
    services = compose()['services']
    assert port_problems(services) == []
    services['vllm']['ports'] = ['8000:8000']
    services['waymark']['command'][4] = 'memory_uri:=http://127.0.0.1:19531'
    assert port_problems(services) == [
        'waymark memory_uri=http://127.0.0.1:19531 is not 127.0.0.1:19530',
        'vllm does not publish 8000 on 127.0.0.1',
    ]


@pytest.mark.parametrize('name', COMPOSE_FILES)
def test_every_published_port_is_bound_to_the_bind_address_loopback_by_default(name):
    services = compose(name)['services']
    assert bind_problems(services) == []
    assert {address for s in services.values() for address, _, _ in published(s)} == {'127.0.0.1'}
    services['milvus']['ports'] = ['19530:19530', '0.0.0.0:9091:9091']
    services['vllm']['ports'] = [{'host_ip': '127.0.0.1', 'published': 8000, 'target': 8000}]
    assert bind_problems(services) == [
        f'milvus publishes 19530:19530 outside {BIND_ADDRESS}',
        f'milvus publishes 0.0.0.0:9091:9091 outside {BIND_ADDRESS}',
        f'vllm publishes {services["vllm"]["ports"][0]} outside {BIND_ADDRESS}',
    ]


@pytest.mark.parametrize('name', COMPOSE_FILES)
def test_the_nodes_reach_milvus_where_it_is_bound(name):
    """memory_uri follows the bind address: a set address leaves nothing on loopback."""
    services = compose(name)['services']
    words = argv(services['waymark']['command'])
    arguments = launch_invocations(words)[0][1]
    raw = next(w for w in services['waymark']['command'] if str(w).startswith('memory_uri:='))
    assert raw == f'memory_uri:=http://{BIND_ADDRESS}:19530'
    url = urlparse(arguments['memory_uri'])
    assert (url.hostname, url.port) in {(a, h) for a, h, _ in published(services['milvus'])}


def test_the_orin_compose_is_arm64_throughout():
    """Each service pinned to linux/arm64 (an amd64-only image fails to pull rather than
    running emulated); the nodes built from the Jetson Dockerfile, on the host network."""
    config = compose('compose.orin.yaml')
    services = config['services']
    assert {'etcd', 'minio', 'milvus', 'vllm', 'waymark'} <= set(services)
    assert [name for name, s in services.items() if s.get('platform') != 'linux/arm64'] == []
    waymark = services['waymark']
    assert waymark['build']['dockerfile'] == 'docker/Dockerfile.jetson'
    assert build_problems(waymark) == []
    base = stages(DOCKER / 'Dockerfile.jetson')[waymark['build']['target']][0]
    assert re.search(r'-r36\.\d', base), f'{base} is not built for L4T R36 (JetPack 6)'
    assert re.search(r'-r36\.\d', services['vllm']['image'])  # jetson-containers' vLLM
    pulled = [resolve(s['image']) for s in services.values() if 'build' not in s]
    assert [image_problem(image) for image in pulled] == [None] * len(pulled)
    assert waymark['network_mode'] == 'host' and waymark['runtime'] == 'nvidia'
    assert services['vllm']['profiles'] == ['llm']  # the LLM may run on a GPU host instead
    assert volume_problems(config) == []
    assert (
        health_problems(
            {
                **services,
                'waymark': {
                    **waymark,
                    'depends_on': {
                        name: {'condition': 'service_healthy'} for name in ('milvus', 'vllm')
                    },
                },
            }
        )
        == []
    )
    assert waymark['depends_on'] == {'milvus': {'condition': 'service_healthy'}}


def test_the_orin_compose_launches_the_orin_preset_with_declared_arguments():
    services = compose('compose.orin.yaml')['services']
    [(launch, arguments)] = launch_invocations(argv(services['waymark']['command']))
    assert launch_problems(launch, arguments) == []
    assert arguments['models'] == 'orin_nx'
    vllm = argv(services['vllm']['command'])
    assert option(vllm, '--served-model-name') == arguments['llm_model']
    assert {int(option(vllm, '--port') or 0)} == {t for _, _, t in published(services['vllm'])}
    url = urlparse(arguments['llm_base_url'])
    assert (url.hostname, url.port) in {(a, h) for a, h, _ in published(services['vllm'])}


def test_vllm_listens_on_the_published_port_and_serves_the_agents_model():
    services = compose()['services']
    words = argv(services['vllm']['command'])
    assert {(int(option(words, '--port') or 8000))} == {
        t for _, _, t in published(services['vllm'])
    }
    # The agent asks for the model by the name vLLM serves it under.
    arguments = launch_invocations(argv(services['waymark']['command']))[0][1]
    assert option(words, '--served-model-name') == arguments['llm_model']
    # Native tool calling, as docs/agent.md documents it, with a template that shows tools.
    assert {'--enable-auto-tool-choice', '--tool-call-parser', 'hermes'} <= set(words)
    assert json.loads(option(words, '--limit-mm-per-prompt') or '{}').get('image', 0) >= 1
    devices = services['vllm']['deploy']['resources']['reservations']['devices']
    assert any(device.get('driver') == 'nvidia' for device in devices)


def test_every_named_volume_is_declared():
    config = compose()
    assert volume_problems(config) == []
    del config['volumes']['milvus']
    assert volume_problems(config) == ['milvus uses the undeclared volume milvus']


def test_services_have_health_checks_and_waymark_waits_for_them():
    services = compose()['services']
    assert health_problems(services) == []
    del services['minio']['healthcheck']
    services['waymark']['depends_on'] = ['milvus', 'vllm']
    assert health_problems(services) == [
        'minio has no health check',
        'waymark does not wait for milvus to be healthy',
        'waymark does not wait for vllm to be healthy',
    ]


def test_workspace_files_named_in_compose_exist():
    words = [word for s in compose()['services'].values() for word in argv(s.get('command'))]
    named = [word.removeprefix(IN_IMAGE) for word in words if word.startswith(IN_IMAGE)]
    assert 'rviz/waymark.rviz' in named
    assert [name for name in named if not (ROOT / name).is_file()] == []


def test_waymark_runs_on_the_host_network_and_restarts():
    waymark = compose()['services']['waymark']
    assert waymark['network_mode'] == 'host'
    assert waymark['restart'] == 'unless-stopped'


# --- launch commands ------------------------------------------------------------------------


def test_launch_commands_are_found():
    where = {place for place, _, _ in all_launches()}
    assert {'compose waymark', 'Dockerfile', 'Dockerfile.jetson'} <= where
    assert ('Dockerfile.jetson', 'robot.launch.py', {'models': 'orin_nx'}) in all_launches()


@pytest.mark.parametrize(('where', 'launch', 'arguments'), all_launches())
def test_launch_commands_name_declared_arguments_and_existing_presets(where, launch, arguments):
    assert launch_problems(launch, arguments) == [], where


def test_undeclared_arguments_and_missing_presets_are_caught():
    _, launch, arguments = all_launches()[0]
    if not (ROOT / 'launch' / launch).is_file():
        pytest.fail(f'launch/{launch} does not exist yet')
    assert launch_problems(launch, {**arguments, 'bogus': '1', 'models': 'nope'}) == [
        f'{launch} declares no argument bogus',
        'models:=nope: no config/models/nope.yaml',
    ]
    assert launch_problems('missing.launch.py', {}) == ['no launch file launch/missing.launch.py']


# --- Dockerfiles ----------------------------------------------------------------------------


@pytest.mark.parametrize('path', DOCKERFILES, ids=lambda path: path.name)
def test_files_the_images_copy_and_run_exist(path: Path):
    text = '\n'.join(rest for _, rest in instructions(path))
    for keyword, rest in instructions(path):
        if keyword in ('COPY', 'ADD'):
            sources = [word for word in exec_form(rest) if not word.startswith('--')][:-1]
            assert all((ROOT / s).exists() or list(ROOT.glob(s)) for s in sources), rest
    referenced = set(re.findall(r'(?:' + IN_IMAGE + r'|\b)((?:docker|scripts)/[\w./-]+)', text))
    assert {'docker/entrypoint.sh', 'docker/healthcheck.sh', 'scripts/bootstrap.sh'} <= referenced
    entrypoint = (ROOT / 'docker/entrypoint.sh').read_text()
    referenced |= set(re.findall(r'\b(scripts/[\w./-]+)', entrypoint))
    assert 'scripts/env.sh' in referenced
    for name in referenced:
        assert (ROOT / name).is_file(), name


@pytest.mark.parametrize('name', ['docker/entrypoint.sh', 'docker/healthcheck.sh'])
def test_scripts_are_executable_with_a_shebang(name: str):
    path = ROOT / name
    assert path.read_text().startswith('#!'), name
    assert path.stat().st_mode & 0o111, f'{name} is not executable'
    tracked = subprocess.run(
        ['git', 'ls-files', '--stage', '--', name], cwd=ROOT, capture_output=True, text=True
    ).stdout
    assert not tracked or tracked.startswith('100755'), f'git records {name} as {tracked[:6]}'


@pytest.mark.parametrize('path', DOCKERFILES, ids=lambda path: path.name)
def test_images_enter_build_and_check_health_the_same_way(path: Path):
    found = dict(instructions(path))  # the last of each instruction is the one that counts
    assert exec_form(found['ENTRYPOINT']) == [IN_IMAGE + 'docker/entrypoint.sh']
    assert exec_form(found['CMD'])[:4] == ['ros2', 'launch', 'waymark_ros', 'robot.launch.py']
    assert 'docker/healthcheck.sh' in found['HEALTHCHECK']
    # The image builds as CI does: the bootstrap, with ROS sourced, after copying the workspace.
    runs = [rest for keyword, rest in instructions(path) if keyword == 'RUN']
    assert any(
        re.search(r'source /opt/ros/jazzy/\S*setup\.bash && bash scripts/bootstrap\.sh', run)
        for run in runs
    )
    assert ('COPY', '. .') in instructions(path)


def test_robot_image_packages_and_workstation_rviz():
    path = DOCKER / 'Dockerfile'
    assert list(stages(path))[-1] == 'robot', 'a plain docker build must make the robot image'
    robot = apt_packages(path, 'robot')
    wanted = {
        'ros-jazzy-nav2-msgs',
        'ros-jazzy-tf2-ros',
        'ros-jazzy-rosbag2',
        'ros-jazzy-rosbag2-storage-mcap',
    }
    assert wanted <= robot
    assert 'ros-jazzy-rviz2' not in robot
    assert apt_packages(path, 'workstation') - robot == {'ros-jazzy-rviz2'}


@pytest.mark.parametrize('path', DOCKERFILES, ids=lambda path: path.name)
def test_local_builds_stay_out_of_the_context(path: Path):
    ignored = set(path.with_name(path.name + '.dockerignore').read_text().split())
    assert {
        '.venv',
        'build',
        'install',
        'log',
        'demo_output',
        'suite_output',
        'eval_output',
    } <= ignored


# --- the chat template vLLM serves with -----------------------------------------------------


def test_chat_template_shows_tools_pictures_calls_and_results():
    sandbox = pytest.importorskip('jinja2.sandbox')
    # As transformers renders chat templates: trimmed blocks, JSON without HTML escaping.
    environment = sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    environment.filters['tojson'] = lambda value: json.dumps(value, ensure_ascii=False)
    template = environment.from_string((DOCKER / 'qwen2_5_vl_tools.jinja').read_text())
    tool = {'type': 'function', 'function': {'name': 'retrieve_from_text', 'parameters': {}}}
    call = {
        'id': 'c1',
        'type': 'function',
        'function': {'name': 'retrieve_from_text', 'arguments': '{"query": "pharmacy"}'},
    }
    messages = [
        {'role': 'system', 'content': 'Find it.'},
        {'role': 'user', 'content': [{'type': 'text', 'text': 'where is the pharmacy?'}]},
        {'role': 'assistant', 'content': '', 'tool_calls': [call]},
        {'role': 'tool', 'tool_call_id': 'c1', 'content': '[7] PHARMACY at (3, 4)'},
        {'role': 'user', 'content': [{'type': 'text', 'text': '[7]'}, {'type': 'image'}]},
    ]
    prompt = template.render(messages=messages, tools=[tool], add_generation_prompt=True)
    assert prompt.startswith('<|im_start|>system\nFind it.\n\n# Tools')
    assert json.dumps(tool) in prompt
    expected_call = '{"name": "retrieve_from_text", "arguments": {"query": "pharmacy"}}'
    assert f'<tool_call>\n{expected_call}\n</tool_call>' in prompt
    # vLLM may hand the arguments over parsed: the same text comes out.
    call['function']['arguments'] = {'query': 'pharmacy'}
    assert template.render(messages=messages, tools=[tool], add_generation_prompt=True) == prompt
    assert (
        '<|im_start|>user\n<tool_response>\n[7] PHARMACY at (3, 4)\n</tool_response><|im_end|>'
        in prompt
    )
    assert '[7]<|vision_start|><|image_pad|><|vision_end|><|im_end|>' in prompt
    assert prompt.endswith('<|im_start|>assistant\n')
    without_tools = template.render(messages=messages[1:2], add_generation_prompt=False)
    assert without_tools == (
        '<|im_start|>system\nAnswer the request below.<|im_end|>\n'
        '<|im_start|>user\nwhere is the pharmacy?<|im_end|>\n'
    )


# --- the Go1 driver -------------------------------------------------------------------------


def go1_command(service: dict[str, Any]) -> list[str]:
    """The `ros2 run ...` words of the go1 service's `bash -c` command, variables resolved."""
    words = argv(service['command'])
    assert words[:2] == ['bash', '-c'], words
    script = words[2].replace('$$', '$')
    return shlex.split(script.split('exec ', 1)[1])


def go1_problems(config: Compose) -> list[str]:
    from waymark_ros.launch_support import base_plan

    service = config['services'].get('go1')
    if service is None:
        return ['no go1 service']
    problems = []
    if service.get('profiles') != ['go1']:
        problems.append('go1 starts without its profile')
    if service.get('network_mode') != 'host' or service.get('ipc') != 'host':
        problems.append('go1 is not on the host network and IPC')
    if str(service.get('restart', 'no')) != 'no':
        problems.append('go1 restarts on its own')
    words = go1_command(service)
    if words[:4] != ['ros2', 'run', base_plan.GO1_PACKAGE, base_plan.GO1_EXECUTABLE]:
        problems.append(f'go1 runs {words[:4]}')
    mounts = dict(str(volume).split(':')[1::-1] for volume in service.get('volumes', []))
    params = option(words, '--params-file') or ''
    params = params.replace('$GO1_PARAMS', service['environment'].get('GO1_PARAMS', ''))
    source = mounts.get(params, '')
    if (DOCKER / source).resolve() != ROOT / 'config' / base_plan.GO1_PARAMS:
        problems.append(f'go1 reads {params}, not config/{base_plan.GO1_PARAMS}')
    for name in ('ROS_DOMAIN_ID', 'ROS_AUTOMATIC_DISCOVERY_RANGE'):
        if service['environment'].get(name) != config['services']['waymark']['environment'][name]:
            problems.append(f'go1 and waymark differ in {name}')
    return problems


def test_go1_runs_the_driver_with_the_workspaces_parameters_only_with_its_profile():
    from waymark_ros.launch_support import base_plan

    config = compose()
    assert go1_problems(config) == []
    words = go1_command(config['services']['go1'])
    sections = yaml.safe_load((ROOT / 'config' / base_plan.GO1_PARAMS).read_text())
    address = sections[f'/**/{base_plan.GO1_NODE}']['ros__parameters']['robot_ip']
    assert option(words, '-p') == f'robot_ip:={address}'  # the file's, unless GO1_ROBOT_IP
    service = config['services']['go1']
    del service['profiles']
    service['ipc'] = 'private'
    service['volumes'] = ['../config/robot.yaml:/etc/waymark/go1.yaml:ro']
    assert go1_problems(config) == [
        'go1 starts without its profile',
        'go1 is not on the host network and IPC',
        'go1 reads /etc/waymark/go1.yaml, not config/go1.yaml',
    ]


def test_the_go1_image_builds_a_pinned_driver_that_can_ping_the_robot():
    path = DOCKER / 'Dockerfile.go1'
    assert image_problem(stages(path)['#0'][0]) is None
    text = '\n'.join(rest for _, rest in instructions(path))
    ref = re.search(r'ARG UNITREE_ROS_REF=(\S+)', path.read_text())
    assert ref and re.fullmatch(r'[0-9a-f]{40}', ref.group(1)), 'the driver is not pinned'
    assert 'git clone https://github.com/snt-arg/unitree_ros.git' in text
    assert 'checkout "$UNITREE_ROS_REF"' in text and 'submodule update --init' in text
    assert 'iputils-ping' in apt_packages(path, '#0')
    assert 'source /opt/unitree_ws/install/setup.bash' in text
    ignored = path.with_name(path.name + '.dockerignore').read_text().split()
    assert '*' in ignored and '!patches/' in ignored  # the image needs the patches alone


def test_the_go1_image_applies_the_timeout_patch_to_the_pinned_driver():
    path = DOCKER / 'Dockerfile.go1'
    text = '\n'.join(rest for _, rest in instructions(path))
    patch = DOCKER / 'patches' / 'unitree_ros-cmd-vel-timeout.patch'
    copied = f'COPY patches/{patch.name} /tmp/patches/'
    assert copied in path.read_text()
    applied = f'git -C src/unitree_ros apply /tmp/patches/{patch.name}'
    assert text.index('checkout "$UNITREE_ROS_REF"') < text.index(applied) < text.index('colcon')
    # The window of released unitree_ros (400-402 ms) becomes a timeout that holds, once.
    lines = patch.read_text().splitlines()
    removed = [line for line in lines if line.startswith('-') and not line.startswith('---')]
    added = [line for line in lines if line.startswith('+') and not line.startswith('+++')]
    assert removed == ['-    if (delta_t >= 400ms && delta_t <= 402ms) {']
    assert '+    if (!cmd_vel_zeroed_ && delta_t >= 400ms) {' in added
    assert '+        cmd_vel_zeroed_ = true;' in added and '+    cmd_vel_zeroed_ = false;' in added
