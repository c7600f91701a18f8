# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""waymark_ros's import graph: each node in a room of its own, every import pointing down.

`ros/` holds what several nodes or tools share; a node and the helpers only it uses live
in its room, `nodes/<room>/`; the launch files' support in `launch_support/`. A room never
imports another room (what two nodes need moves down to `ros/`), and tools, which start
and drive whole stacks, may import anything below them. Imports are read from the source
with `ast` (those inside functions too), so the test needs no ROS.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from waymark_testing.import_graph import import_graph

PACKAGE = Path(__file__).resolve().parents[1] / 'waymark_ros'

# Each part may import its own part or a part of lower rank; parts of one rank never
# import each other. Each room of nodes/ is a part of its own, at the rank of nodes.
RANKS = {
    'ros': 0,
    'nodes': 1,
    'launch_support': 1,
    'client_results': 1,  # what the client's task calls return
    'client': 2,  # the Python client of a running stack
    'tools': 3,
}
# The project's limit for a node module: what outgrows it moves to a helper in its room.
NODE_MODULE_MAX_LINES = 400


def _graph() -> dict[str, set[str]]:
    """Module -> the waymark_ros modules it imports."""
    return {
        name: {target for target in targets if target.split('.')[0] == 'waymark_ros'}
        for name, targets in import_graph(PACKAGE).items()
    }


def _part(module: str) -> str:
    """'ros', 'tools', ..., and 'nodes.<room>' for what lives in a room."""
    parts = module.split('.')[1:]
    if parts[:1] == ['nodes'] and len(parts) > 1:
        return '.'.join(parts[:2])
    return parts[0] if parts else ''


def _rank(part: str) -> int:
    return RANKS[part.split('.')[0]]


def _wrong_way(graph: dict[str, set[str]]) -> list[str]:
    """Every import of a part of the same or a higher rank than the importer's own."""
    return sorted(
        f'{module} imports {target}'
        for module, targets in graph.items()
        for target in targets
        if _part(module)
        and _part(target)  # not the package's own __init__
        and _part(target) != _part(module)
        and _rank(_part(target)) >= _rank(_part(module))
    )


def test_each_part_has_a_rank():
    parts = {_part(m).split('.')[0] for m in _graph()} - {''}
    assert sorted(parts - set(RANKS)) == [], 'give each part of waymark_ros a rank in RANKS'


def test_imports_point_down_and_no_room_imports_another():
    assert _wrong_way(_graph()) == []


def test_each_room_holds_one_node_module_within_the_limit():
    rooms = sorted(
        p for p in (PACKAGE / 'nodes').iterdir() if p.is_dir() and p.name != '__pycache__'
    )
    loose = sorted(p.name for p in (PACKAGE / 'nodes').glob('*.py') if p.name != '__init__.py')
    assert loose == [], 'a node and its helpers go in a room: nodes/<room>/'
    assert rooms
    for room in rooms:
        nodes = sorted(p.name for p in room.glob('*_node.py'))
        assert nodes == [f'{room.name}_node.py'], room
        lines = len((room / nodes[0]).read_text().splitlines())
        assert lines <= NODE_MODULE_MAX_LINES, f'{nodes[0]}: {lines} lines'


def test_a_wrong_way_import_would_be_found():
    graph = _graph()
    memory_node = 'waymark_ros.nodes.memory.memory_node'
    assert 'waymark_ros.ros.qos' in graph[memory_node]
    assert 'waymark_ros.nodes.memory.lesson_desk' in graph[memory_node]
    assert _wrong_way(graph) == []
    assert _wrong_way({memory_node: {'waymark_ros.nodes.reasoner.answers'}}) == [
        f'{memory_node} imports waymark_ros.nodes.reasoner.answers'
    ]
    assert _wrong_way({'waymark_ros.ros.qos': {'waymark_ros.nodes.task.task_node'}})
    assert _wrong_way({'waymark_ros.launch_support.launching': {memory_node}})
    assert not _wrong_way({'waymark_ros.tools.demo': {memory_node}})


def test_the_nodes_that_drive_the_robot_load_no_memory_database():
    # Loading pymilvus takes seconds; a navigator or safety_node restarted mid-drive must
    # be back before that, and has no use for memory's database.
    script = (
        'import sys\n'
        'import waymark_ros.nodes.navigator.navigator_node\n'
        'import waymark_ros.nodes.safety.safety_node\n'
        'import waymark_ros.nodes.sim_base.sim_base_node\n'
        "print(sorted(m for m in ('pymilvus', 'torch') if m in sys.modules))\n"
    )
    loaded = subprocess.run(
        [sys.executable, '-c', script], capture_output=True, text=True, check=True
    ).stdout
    assert loaded.strip() == '[]'
