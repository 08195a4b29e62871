"""Progress on long work: a rich live display on a TTY, plain lines otherwise, nothing with --json.

rich is imported only when stderr is a terminal (cli/live.py): a script's `flow resume` or `flow status` does not
pay for it at start-up.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol, TextIO

from openadapt_flow.runtime import Progress, StepSummary

LIVE_MODULE = "openadapt_flow.cli.live"


class Display(Protocol):
    """Where a long command's lines go while it waits: above a spinner on a TTY, plain lines otherwise."""

    def line(self, text: str, style: str | None = None) -> None: ...


def is_terminal(stream: TextIO) -> bool:
    return bool(getattr(stream, "isatty", None) and stream.isatty())


def ok_line(summary: StepSummary) -> str:
    rung = summary.get("rung") or "-"
    score = summary.get("score")
    return (
        f"    ok  rung={rung}"
        + (f" score={score:.3f}" if isinstance(score, float) else "")
        + f" {summary.get('ms', 0):.0f} ms"
    )


def halt_line(step_id: str, summary: StepSummary) -> str:
    return f"    HALT {step_id}: {summary.get('category')}: {summary.get('message')}"


def step_label(index: int, total: int, step_id: str, intent: str | None) -> str:
    return f"[{index + 1}/{total}] {step_id}" + (f" — {intent}" if intent else "")


class PlainLines:
    """One plain line per event: for logs, pipes and CI."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def line(self, text: str, style: str | None = None) -> None:
        print(text, file=self.stream, flush=True)


class PlainProgress(Progress):
    def __init__(self, stream: TextIO) -> None:
        self.out = PlainLines(stream)

    def step_started(self, index: int, total: int, step_id: str, intent: str | None) -> None:
        self.out.line(step_label(index, total, step_id, intent))

    def step_finished(self, index: int, total: int, step_id: str, summary: StepSummary) -> None:
        self.out.line(ok_line(summary) if summary.get("ok") else halt_line(step_id, summary))

    def close(self) -> None:
        pass


class ConsoleProgress(Progress):
    """Per-step progress on stderr: a live bar with the current step on a TTY, one plain line per event otherwise.
    Use it as a context manager (the live display stops at the end); it also stops after the last step or a halt."""

    def __init__(self, stream: TextIO | None = None) -> None:
        out = stream or sys.stderr
        self.renderer: Any = (
            importlib.import_module(LIVE_MODULE).LiveProgress(out) if is_terminal(out) else PlainProgress(out)
        )

    def step_started(self, index: int, total: int, step_id: str, intent: str | None) -> None:
        self.renderer.step_started(index, total, step_id, intent)

    def step_finished(self, index: int, total: int, step_id: str, summary: StepSummary) -> None:
        self.renderer.step_finished(index, total, step_id, summary)

    def close(self) -> None:
        self.renderer.close()

    def __enter__(self) -> "ConsoleProgress":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextmanager
def waiting(message: str, enabled: bool = True, lines: TextIO | None = None) -> Iterator[Display]:
    """While the block runs: on a TTY, a spinner with `message` on stderr and the block's lines printed above it;
    otherwise (or with `enabled=False`, i.e. --json) no spinner, and the lines plain on `lines` (default stderr)."""
    if enabled and is_terminal(sys.stderr):
        with importlib.import_module(LIVE_MODULE).spinner(message, sys.stderr) as display:
            yield display
        return
    yield PlainLines(lines or sys.stderr)


@contextmanager
def step_progress(enabled: bool) -> Iterator[ConsoleProgress | None]:
    """A run's per-step display for the block (None with --json), stopped when it ends."""
    if not enabled:
        yield None
        return
    with ConsoleProgress() as progress:
        yield progress
