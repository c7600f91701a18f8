# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The core's import graph: ROS-free, no cycles, and every import points down its layers.

Imports are read from the source with `ast` (those inside functions too), so the test
needs none of the packages imported.
"""

from __future__ import annotations

from pathlib import Path

from waymark_testing.import_graph import import_graph

CORE = Path(__file__).resolve().parents[1] / 'waymark'

# Each part of the core may import its own rank or lower. A new part gets a rank here.
CORE_RANKS = {
    'geometry': 0,
    'input_watch': 0,
    'cli': 0,
    'llm_client': 0,
    'model_text': 0,
    'durable': 0,
    'settings': 0,
    'memory': 1,
    'navigation': 1,
    'transforms': 1,
    'frames': 1,  # the robot description from the presets' mounts
    'safety': 1,
    'sim': 1,
    'localisation': 1,
    'agent': 2,
    'evaluation': 3,
    'parameters': 3,
    'tasks': 3,
    'lessons': 3,
    'benchmarks': 4,
    '__main__': 5,
}
# Inside memory: the records, then where they are kept, how they become searchable, how
# they arrive, and the facade over all of it.
MEMORY_RANKS = {
    'entries': 0,
    'storage': 1,
    'retention': 1,  # policies and disk use: data, no storage of its own
    'refusal': 1,  # what input from outside is refused for
    'search_query': 1,  # one search and its checks: the store may take it too
    'views': 2,
    'ingest': 3,
    'places': 3,
    'service': 4,
    'factory': 5,
}
# The core runs without ROS: offline tools, tests and benchmarks import it alone.
FORBIDDEN = ('waymark_ros', 'waymark_interfaces', 'rclpy', 'rosidl', 'launch')


def _part(module: str, depth: int) -> str:
    parts = module.split('.')
    return parts[depth] if len(parts) > depth else ''


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One cycle of the graph, empty if there is none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state and (found := visit(target)):
                return found
        path.pop()
        state[node] = 2
        return []

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return []


def test_the_core_imports_nothing_from_ros():
    offending = sorted(
        f'{module} imports {target}'
        for module, targets in import_graph(CORE).items()
        for target in targets
        if target.split('.')[0] in FORBIDDEN or target.split('.')[0].endswith('_msgs')
    )
    assert offending == []


def test_the_core_has_no_import_cycle():
    core = {
        module: {t for t in targets if t.split('.')[0] == 'waymark'}
        for module, targets in import_graph(CORE).items()
    }
    assert _cycle(core) == []


def test_each_part_of_the_core_imports_only_its_own_rank_or_lower():
    graph = import_graph(CORE)
    unranked = sorted({_part(m, 1) for m in graph if m != 'waymark'} - set(CORE_RANKS))
    assert unranked == [], 'give each part of the core a rank in CORE_RANKS'
    upward = sorted(
        f'{module} imports {target}'
        for module, targets in graph.items()
        for target in targets
        if target.startswith('waymark.')
        and module != 'waymark'
        and CORE_RANKS[_part(target, 1)] > CORE_RANKS[_part(module, 1)]
    )
    assert upward == []


def test_memory_parts_import_only_their_own_rank_or_lower():
    memory = {m: t for m, t in import_graph(CORE).items() if m.startswith('waymark.memory.')}
    unranked = sorted({_part(m, 2) for m in memory} - set(MEMORY_RANKS))
    assert unranked == [], 'give each part of memory a rank in MEMORY_RANKS'
    upward = sorted(
        f'{module} imports {target}'
        for module, targets in memory.items()
        for target in targets
        if target.startswith('waymark.memory.')
        and MEMORY_RANKS[_part(target, 2)] > MEMORY_RANKS[_part(module, 2)]
    )
    assert upward == []


def test_a_cycle_and_an_upward_import_would_be_found():
    assert _cycle({'a': {'b'}, 'b': {'c'}, 'c': {'a'}}) == ['a', 'b', 'c', 'a']
    assert _cycle({'a': {'b'}, 'b': set()}) == []
    graph = import_graph(CORE)
    assert 'waymark.memory.storage.store' in graph['waymark.memory.service']
    assert 'waymark.memory.entries' in graph['waymark.agent.agent']
