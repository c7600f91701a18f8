# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Where memory is kept: the Milvus store, its in-process indexes, image files."""
