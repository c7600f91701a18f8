# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""The ways a keyframe becomes searchable: embedders, OCR, VLM captions, rank fusion."""
