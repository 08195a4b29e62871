"""Run states and the exit code each one maps to (SPEC §6)."""

from __future__ import annotations

EXIT_CODES = {
    "COMPLETED": 0,
    "FAILED": 1,
    "PAUSED": 3,
    "BLOCKED": 4,
    "INTERRUPTED": 5,
    "PENDING": 0,
    "RUNNING": 0,
    "RESUMING": 0,
}
TERMINAL = frozenset({"COMPLETED", "FAILED", "BLOCKED", "INTERRUPTED"})
