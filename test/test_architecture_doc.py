# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""docs/architecture.md names only what exists, and README links it near the top.

The page names modules as backticked dotted paths (`waymark.memory.service`, or a name in
a module: `waymark.memory.service.MemoryService`), files and folders as repo-relative
paths (`src/...`, `launch/...`, `config/...`, `docs/...`), and other pages by relative
links with anchors. When code moves, this test names each reference left behind. Modules
are found from the source tree and names read with `ast`: nothing is imported.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / 'docs' / 'architecture.md'
README = ROOT / 'README.md'
# Where each top-level package's modules live.
PACKAGES = {
    'waymark': ROOT / 'src' / 'waymark' / 'waymark',
    'waymark_ros': ROOT / 'src' / 'waymark_ros' / 'waymark_ros',
}
PATH_ROOTS = ('src', 'launch', 'config', 'docs', 'test', 'rviz', 'docker', 'scripts')

_SPAN = re.compile(r'`([^`\n]+)`')
_DOTTED = re.compile(r'(?<![\w/.-])(waymark(?:_ros)?(?:\.\w+)+)(?![\w/-])')
_PATH = re.compile(rf'(?<![\w/.-])((?:{"|".join(PATH_ROOTS)})/[\w./<>*-]*)')
_LINK = re.compile(r'\]\(([^)\s]+)\)')
_FENCE = re.compile(r'^```.*?^```', re.MULTILINE | re.DOTALL)


def _spans(text: str) -> list[str]:
    """Backticked spans outside fenced blocks (a diagram names topics, not modules)."""
    return _SPAN.findall(_FENCE.sub('', text))


def module_problem(dotted: str) -> str:
    """'' when `dotted` is a module, package, or a name defined in one; else why not."""
    parts = dotted.split('.')
    here = PACKAGES.get(parts[0])
    if here is None:
        return f'{dotted}: no package {parts[0]!r}'
    for i, part in enumerate(parts[1:], start=1):
        if (here / part / '__init__.py').is_file():
            here = here / part
            continue
        if (here / f'{part}.py').is_file():
            return _names_problem(here / f'{part}.py', dotted, parts[i + 1 :])
        return _names_problem(here / '__init__.py', dotted, parts[i:])
    return ''


def _names_problem(module: Path, dotted: str, names: list[str]) -> str:
    """'' when `names` (a top-level name, then names inside it) are defined in `module`."""
    if not names:
        return ''
    body = ast.parse(module.read_text()).body
    for name in names:
        found = next((node for node in body if name in _defined(node)), None)
        if found is None:
            return f'{dotted}: {name!r} is not defined in {module.relative_to(ROOT)}'
        body = getattr(found, 'body', [])
    return ''


def _defined(node: ast.stmt) -> set[str]:
    if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
        return {node.name}
    if isinstance(node, ast.Assign):
        return {target.id for target in node.targets if isinstance(target, ast.Name)}
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return {node.target.id}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(alias.asname or alias.name).split('.')[0] for alias in node.names}
    return set()


def path_problem(path: str) -> str:
    """'' when the repo-relative `path` exists; `<name>` and `*` stand for any name."""
    pattern = re.sub(r'<[^>]*>', '*', path.rstrip('/.'))
    if any(True for _ in ROOT.glob(pattern)):
        return ''
    return f'{path}: no such file or folder'


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it."""
    text = heading.strip().lower().replace('`', '')
    return re.sub(r'[^\w\- ]', '', text).replace(' ', '-')


def link_problem(page: Path, target: str) -> str:
    """'' when a relative link from `page` reaches a file (and its heading, with #)."""
    if re.match(r'[a-z]+:', target):
        return ''
    where, _, anchor = target.partition('#')
    file = (page.parent / where).resolve() if where else page
    if not file.exists():
        return f'{target}: no such file'
    if anchor and file.suffix == '.md':
        headings = re.findall(r'^#+ (.+)$', _FENCE.sub('', file.read_text()), re.MULTILINE)
        if anchor not in {slug(heading) for heading in headings}:
            return f'{target}: no heading #{anchor} in {file.relative_to(ROOT)}'
    return ''


def problems(page: Path) -> list[str]:
    text = page.read_text()
    spans = _spans(text)
    found = [module_problem(m) for span in spans for m in _DOTTED.findall(span)]
    found += [path_problem(p) for span in spans for p in _PATH.findall(span)]
    found += [link_problem(page, target) for target in _LINK.findall(text)]
    return sorted({problem for problem in found if problem})


def test_every_module_path_and_link_on_the_page_exists():
    found = problems(PAGE)
    assert not found, 'docs/architecture.md names what does not exist:\n' + '\n'.join(found)


def test_the_page_names_modules_and_paths_so_the_check_has_work():
    spans = _spans(PAGE.read_text())
    assert len([m for span in spans for m in _DOTTED.findall(span)]) >= 10
    assert len([p for span in spans for p in _PATH.findall(span)]) >= 10


def test_readme_links_the_page_before_its_first_section():
    intro = README.read_text().split('\n## ', 1)[0]
    assert '](docs/architecture.md)' in intro


def test_a_missing_module_name_path_or_heading_would_be_found():
    assert module_problem('waymark.memory.service') == ''
    assert module_problem('waymark.memory.service.MemoryService') == ''
    assert module_problem('waymark.memory.service.MemoryService.search') == ''
    assert module_problem('waymark.memory') == ''
    assert module_problem('waymark.memory.nowhere') != ''
    assert module_problem('waymark.memory.service.Nowhere') != ''
    assert module_problem('waymark_ros.ros.params.declare_settings') == ''
    assert path_problem('src/waymark/waymark/memory/views/') == ''
    assert path_problem('config/sensors/<name>.yaml') == ''
    assert path_problem('src/waymark/waymark/nowhere.py') != ''
    assert link_problem(PAGE, 'memory.md#storage') == ''
    assert link_problem(PAGE, 'memory.md#nowhere') != ''
    assert link_problem(PAGE, 'nowhere.md') != ''
    assert slug('Search modes (`SearchMemory.srv`)') == 'search-modes-searchmemorysrv'
    assert slug('Delivery from capture_node') == 'delivery-from-capture_node'
    text = 'see `waymark.nowhere` and `python -m waymark_ros.tools.parameters_doc` in `docs/x`'
    spans = _spans(text)
    assert [m for span in spans for m in _DOTTED.findall(span)] == [
        'waymark.nowhere',
        'waymark_ros.tools.parameters_doc',
    ]
    assert [p for span in spans for p in _PATH.findall(span)] == ['docs/x']
