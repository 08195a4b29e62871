"""Choosing a run store (SPEC §18): `--store` / config `runtime.store`; a directory (default `runs`) or `memory:`."""

from __future__ import annotations

from openadapt_flow.errors import UsageError
from openadapt_flow.store.base import RunStore
from openadapt_flow.store.filesystem import FilesystemStore
from openadapt_flow.store.memory import PREFIX, MemoryStore

_MEMORY = MemoryStore()  # `memory:` is one store per process: runs live as long as it does


def open_store(spec: str | None, default_root: str = "runs") -> RunStore:
    """The store named by `spec`: `memory:` (this process's), a runs root directory, or (None) `default_root`."""
    if spec is None or spec == "":
        return FilesystemStore(default_root)
    if spec == PREFIX:
        return _MEMORY
    if "://" in spec or spec.startswith(PREFIX):
        raise UsageError(f"--store {spec!r}: expected a runs directory or memory: (PostgreSQL stores are not available yet)")
    return FilesystemStore(spec)
