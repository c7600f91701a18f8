# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Benchmarks of the memory: ingest rate, search latency and recall, storage per hour.

`python -m waymark bench {ingest,search,storage,all}` prints a table per benchmark and
writes its JSON under `--out`; `--quick` runs tiny sizes (the smoke test). They measure
the core library on this machine's CPU, with the same code memory_node runs.
"""
