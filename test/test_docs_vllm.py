# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The vLLM recipe of docs/deployment.md agrees with the model presets.

Each fenced `vllm serve` command is parsed as a shell would split it. It must serve a
preset's model under that same name (waymark asks for the preset's id), with the tool
calling the agent needs, the chat template the repository ships, room for as many
pictures as one prompt of that preset can hold, and a context longer than an answer; the
`robot.launch.py` line for that preset must point `llm_base_url` at the port it listens on,
and the connectivity check must ask that port for the model list.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / 'docs' / 'deployment.md'
PRESETS = ROOT / 'config' / 'models'
SECTION = '## An LLM server: vLLM on a Jetson Orin or a GPU host'


@dataclass(frozen=True)
class Serve:
    model: str
    options: dict[str, str]  # --name -> value ('' for a flag)


def section(text: str) -> str:
    start = text.index(SECTION)
    end = text.find('\n## ', start + len(SECTION))
    return text[start : end if end >= 0 else None]


def commands(text: str) -> list[list[str]]:
    """The shell words of each command in the fenced bash blocks (continuations joined,
    comments dropped)."""
    found = []
    for block in re.findall(r'```bash\n(.*?)```', text, flags=re.S):
        for line in block.replace('\\\n', ' ').splitlines():
            words = shlex.split(line, comments=True)
            if words:
                found.append(words)
    return found


def parse_serve(words: list[str]) -> Serve:
    assert words[:2] == ['vllm', 'serve'] and len(words) > 2, words
    options, rest = {}, words[3:]
    while rest:
        name = rest.pop(0)
        assert name.startswith('--'), f'{name!r} is not an option'
        options[name] = rest.pop(0) if rest and not rest[0].startswith('--') else ''
    return Serve(words[2], options)


def preset(name: str) -> dict:
    data = yaml.safe_load((PRESETS / f'{name}.yaml').read_text())
    return {node.strip('/*'): values['ros__parameters'] for node, values in data.items()}


def images_per_prompt(parameters: dict) -> int:
    """The most pictures one request of this preset carries: the agent's conversation
    keeps every step's pictures; a verifier call shows its own batch."""
    agent = parameters['reasoner_node']['agent']
    verifier = parameters['reasoner_node']['verifier']
    return max(agent['max_steps'] * agent['max_images_per_step'], verifier['max_images'])


RECIPE = section(GUIDE.read_text())
COMMANDS = commands(RECIPE)
SERVES = [parse_serve(words) for words in COMMANDS if words[:2] == ['vllm', 'serve']]
LAUNCHES = [words for words in COMMANDS if words[:2] == ['ros2', 'launch']]
PRESET_NAMES = sorted(path.stem for path in PRESETS.glob('*.yaml'))


def serve_for(name: str) -> Serve:
    model = preset(name)['reasoner_node']['llm']['model']
    matches = [serve for serve in SERVES if serve.model == model]
    assert len(matches) == 1, f'one `vllm serve {model}` in the recipe for {name}'
    return matches[0]


def launch_arguments(name: str) -> dict[str, str]:
    matches = [
        dict(word.split(':=', 1) for word in words if ':=' in word)
        for words in LAUNCHES
        if f'models:={name}' in words
    ]
    assert len(matches) == 1, f'one robot.launch.py line with models:={name}'
    return matches[0]


def test_every_preset_has_a_recipe():
    assert len(SERVES) == len(PRESET_NAMES) >= 2


@pytest.mark.parametrize('name', PRESET_NAMES)
def test_the_server_serves_the_presets_model_under_its_name(name):
    parameters = preset(name)
    serve = serve_for(name)
    assert serve.options['--served-model-name'] == serve.model
    assert parameters['memory_node']['captioner']['model'] == serve.model


@pytest.mark.parametrize('name', PRESET_NAMES)
def test_the_server_gives_the_agent_its_tools(name):
    options = serve_for(name).options
    assert options['--enable-auto-tool-choice'] == ''
    assert options['--tool-call-parser'] == 'hermes'
    assert (ROOT / options['--chat-template']).is_file()
    assert options['--chat-template-content-format'] == 'openai'


@pytest.mark.parametrize('name', PRESET_NAMES)
def test_the_server_takes_as_many_pictures_and_tokens_as_the_preset_sends(name):
    parameters = preset(name)
    options = serve_for(name).options
    assert json.loads(options['--limit-mm-per-prompt'])['image'] >= images_per_prompt(parameters)
    assert int(options['--max-model-len']) > 4 * parameters['reasoner_node']['llm']['max_tokens']


@pytest.mark.parametrize('name', PRESET_NAMES)
def test_waymark_points_at_the_port_the_server_listens_on(name):
    serve = serve_for(name)
    url = urlparse(launch_arguments(name)['llm_base_url'])
    assert (url.scheme, url.path) == ('http', '/v1')
    assert url.port == int(serve.options['--port'])
    if serve.options['--host'] == '127.0.0.1':
        assert url.hostname == '127.0.0.1', 'a server on loopback is reachable only there'


def test_the_connectivity_check_asks_a_documented_server_for_its_models():
    checks = [words for words in COMMANDS if words[0] == 'curl']
    assert checks
    ports = {int(serve.options['--port']) for serve in SERVES}
    for words in checks:
        url = urlparse(words[-1])
        assert url.path == '/v1/models' and url.port in ports, words


def test_a_wrong_model_name_would_be_caught():
    serve = parse_serve(shlex.split('vllm serve some/model --served-model-name other --port 1'))
    assert serve.options == {'--served-model-name': 'other', '--port': '1'}
    assert serve.options['--served-model-name'] != serve.model
