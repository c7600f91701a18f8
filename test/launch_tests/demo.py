# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""demo.launch.py, run: the synthetic demo end to end, its report written, exit code 0.

The demo exits with 0 only when every question was answered with the right sign and the
simulated robot reached it and saw it, its sign task was certified and its photo task
judged; the report must say the same, with each task's ledger record.

Run by test_launch_testing.py with `python -m launch_testing.launch_test`; reads the
scratch folder from WAYMARK_LAUNCH_TEST_DIR. Loaded as a module outside sys.modules, so
no `from __future__ import annotations`.
"""

import json
import os
import unittest
from pathlib import Path

import launch
import launch_testing.actions
import launch_testing.asserts
import launch_testing.util
from launch.actions import IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / 'launch' / 'demo.launch.py'
SCRATCH = Path(os.environ.get('WAYMARK_LAUNCH_TEST_DIR', '/tmp/waymark_launch_test'))
OUT = SCRATCH / 'demo'
WAIT_S = 840.0  # the whole demo on a busy machine (7 min on 2 busy cores)


def generate_test_description():
    demo = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(str(DEMO)),
        # Two of the six signs: every step of the demo runs, in half the time (make demo
        # asks about all six).
        launch_arguments={'seed': '0', 'out': str(OUT), 'questions': '2'}.items(),
    )
    # The launch ends by itself; kept alive so that launch_testing sees the active test
    # finish first (else it fails every test with 'Launch stopped before ...').
    return launch.LaunchDescription(
        [demo, launch_testing.util.KeepAliveProc(), launch_testing.actions.ReadyToTest()]
    )


class TestTheDemoRuns(unittest.TestCase):
    def test_the_demo_finishes(self, proc_info):
        proc_info.assertWaitForShutdown(process='demo', timeout=WAIT_S)


@launch_testing.post_shutdown_test()
class TestTheReport(unittest.TestCase):
    def test_the_demo_exits_with_0(self, proc_info):
        launch_testing.asserts.assertExitCodes(proc_info)

    def test_the_report_says_every_question_was_answered_and_driven_to(self):
        report = json.loads((OUT / 'report.json').read_text())
        self.assertEqual(len(report['questions']), 2)  # the launch argument reached the demo
        self.assertEqual(report['correct'], len(report['questions']))
        self.assertEqual(report['arrived'], len(report['questions']))
        self.assertTrue((OUT / 'report.md').is_file())

    def test_the_report_says_the_sign_task_was_certified_and_both_were_judged(self):
        sign, photo = json.loads((OUT / 'report.json').read_text())['tasks']
        self.assertEqual(sign['status'], 'certified', sign)
        for task in (sign, photo):
            self.assertTrue(task['judged'], task)
            self.assertEqual(task['record']['task_id'], task['task_id'])

    def test_no_process_printed_a_traceback(self, proc_output):
        for output in proc_output:
            self.assertNotIn('Traceback', output.text.decode(errors='replace'), output.process_name)
