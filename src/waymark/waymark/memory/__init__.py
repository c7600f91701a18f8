# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Visuo-spatio-temporal memory: entries, views, the Milvus store and the image store."""
