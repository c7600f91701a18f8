# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""A node a launch starts that cannot start: one fatal line, its exit code, no traceback.

The launch reports a node's exit code and prints its output; a second traceback from
rclpy's shutdown after the failure hid the reason and made the exit code 1.
"""

from __future__ import annotations

from waymark_ros.ros.spin import EXIT_START_FAILED
from waymark_ros.tools.processes import start_node


def test_a_model_that_is_not_cached_stops_memory_node_with_one_fatal_line(tmp_path):
    node = start_node(
        'memory_node',
        tmp_path / 'logs',
        {'data_dir': str(tmp_path / 'memory'), 'image_model': 'nobody/no-such-model'},
        env={'HF_HUB_OFFLINE': '1', 'HF_HOME': str(tmp_path / 'hub')},
    )
    assert node.process.wait(timeout=120) == EXIT_START_FAILED
    log = node.log_tail(200)
    assert 'Traceback' not in log, log
    fatal = [line for line in log.splitlines() if 'FATAL' in line]
    assert len(fatal) == 1, log
    assert 'cannot start' in fatal[0] and 'nobody/no-such-model' in fatal[0]
