"""A halt: the run cannot be sure, so it stops instead of guessing."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from openadapt_flow.errors import RunSignal

MAX_MESSAGE = 400
CATEGORIES = (
    "resolution",
    "ambiguous",
    "identity",
    "postcondition",
    "effect",
    "collateral",
    "backend",
    "policy",
    "input",
)


@dataclass
class Halt(RunSignal):
    """Raised inside the step lifecycle; the engine turns it into a FAILED run (or a durable pause)."""

    exit_code = 1  # FAILED, should one ever reach a command
    category: str
    message: str
    step: str | None = None
    dispatched: bool = False  # had input possibly been sent when it halted?
    evidence: list[Mapping[str, object]] = field(default_factory=list)  # what was weighed (JSON objects of any kind)
    frame: np.ndarray | None = None
    search: tuple[int, int, int, int] | None = None  # where the runtime looked (halt-frame annotation)
    best: tuple[int, int, int, int] | None = None  # the best candidate it saw
    point: tuple[int, int] | None = None
    template: str | None = None  # the bundle's template sought (shown beside the best candidate in the report)

    def __post_init__(self) -> None:
        # a message quotes params and expected texts: a huge value must not make state.json or the one error line huge
        if len(self.message) > MAX_MESSAGE:
            self.message = self.message[: MAX_MESSAGE - 1] + "…"

    def __str__(self) -> str:
        return f"{self.category}: {self.message}"


class StopRequested(RunSignal):
    """SIGTERM/SIGINT arrived; the run stops at the next safe boundary (never between dispatch and input)."""

    exit_code = 5  # INTERRUPTED

    def __init__(self, dispatched: bool = False) -> None:
        super().__init__("stop requested")
        self.dispatched = dispatched


@dataclass
class Pause(RunSignal):
    """A durable step asks for a human (or a timer/signal); the run pauses holding no process."""

    exit_code = 3  # PAUSED

    reason: str  # awaiting_approval | awaiting_user | awaiting_signal | awaiting_timer | awaiting_child
    step: str
    message: str
    category: str = "approval"
