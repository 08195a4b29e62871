"""The rich side of cli/progress.py: a live step bar and a spinner, for a terminal only (imported on a TTY)."""

from __future__ import annotations

import atexit
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn
from rich.text import Text

from openadapt_flow.cli.progress import halt_line, ok_line, step_label
from openadapt_flow.runtime import Progress as StepProgress
from openadapt_flow.runtime import StepSummary


class LiveProgress(StepProgress):
    """A bar of the run's steps (done/total, elapsed) with the current step's name; each verified step or halt
    prints one line above it. Started on the first step, stopped after the last one, a halt, or `close()`."""

    def __init__(self, stream: TextIO) -> None:
        self.console = Console(file=stream, highlight=False)
        self.bar = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=self.console,
        )
        self.task: TaskID | None = None
        self.live = False

    def step_started(self, index: int, total: int, step_id: str, intent: str | None) -> None:
        if not self.live:
            self.bar.start()
            self.live = True
            atexit.register(self.close)  # a command that never closes it must not leave the cursor hidden
        label = step_label(index, total, step_id, intent)
        if self.task is None:
            self.task = self.bar.add_task(label, total=total, completed=index)
        self.bar.update(self.task, description=label, total=total, completed=index)

    def step_finished(self, index: int, total: int, step_id: str, summary: StepSummary) -> None:
        ok = bool(summary.get("ok"))
        self.console.print(Text(step_label(index, total, step_id, None), style="cyan"))
        self.console.print(
            Text(ok_line(summary) if ok else halt_line(step_id, summary), style="green" if ok else "red")
        )
        if self.task is not None:
            self.bar.update(self.task, completed=index + 1)
        if not ok or index + 1 >= total:
            self.close()

    def close(self) -> None:
        if self.live:
            self.bar.stop()
            self.live = False


class SpinnerLines:
    def __init__(self, console: Console) -> None:
        self.console = console

    def line(self, text: str, style: str | None = None) -> None:
        self.console.print(Text(text, style=style or ""))


@contextmanager
def spinner(message: str, stream: TextIO) -> Iterator[SpinnerLines]:
    """A spinner with `message` (and the time spent) while the block runs; lines print above it."""
    console = Console(file=stream, highlight=False)
    bar = Progress(
        SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=console, transient=True
    )
    bar.add_task(message, total=None)
    with bar:
        yield SpinnerLines(console)


class ItemsBar:
    """A batch's bar (items done/total, elapsed) with the current item; each item's line prints above it."""

    def __init__(self, stream: TextIO, total: int) -> None:
        self.console = Console(file=stream, highlight=False)
        self.bar = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=self.console,
        )
        self.task = self.bar.add_task("items", total=total)
        self.bar.start()
        atexit.register(self.close)  # never leave the cursor hidden

    def started(self, label: str) -> None:
        self.bar.update(self.task, description=label)

    def line(self, text: str, style: str | None = None) -> None:
        self.console.print(Text(text, style=style or ""))
        self.bar.advance(self.task)

    def close(self) -> None:
        self.bar.stop()
