# Copyright 2026 The waymark authors. Licensed under the Apache License, Version 2.0.
"""Why a memory database cannot be used: one family, so callers catch it in one place."""


class MemoryStoreError(RuntimeError):
    """The memory database cannot be used as asked."""


class MemoryStoreLockedError(MemoryStoreError):
    """Another process has the Milvus Lite database open."""


class MemoryStoreSchemaError(MemoryStoreError):
    """An existing collection does not match the schema this store expects."""
