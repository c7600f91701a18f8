# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Evaluation against ground truth: question files, their generator, answerers and metrics."""
