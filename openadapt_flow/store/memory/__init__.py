"""The memory store (`memory:`): runs held in process memory, for development and tests."""

from openadapt_flow.store.memory.parts import MemoryContents, MemoryJournal, MemoryLease, MemoryRecords
from openadapt_flow.store.memory.store import PREFIX, MemoryRun, MemoryStore

__all__ = ["PREFIX", "MemoryContents", "MemoryJournal", "MemoryLease", "MemoryRecords", "MemoryRun", "MemoryStore"]
