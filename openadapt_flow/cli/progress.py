"""Per-step progress: rich lines on a TTY, plain lines otherwise, nothing with --json."""

from __future__ import annotations

import sys
from typing import Any

from rich.console import Console

from openadapt_flow.runtime.act.context import Progress


class ConsoleProgress(Progress):
    def __init__(self, stream=None) -> None:
        self.stream = stream or sys.stderr
        self.console = Console(file=self.stream) if self.stream.isatty() else None

    def _out(self, rich_text: str, plain: str) -> None:
        if self.console is not None:
            self.console.print(rich_text, highlight=False)
        else:
            print(plain, file=self.stream, flush=True)

    def step_started(self, index: int, total: int, step_id: str, intent: str | None) -> None:
        label = f"[{index + 1}/{total}] {step_id}" + (f" — {intent}" if intent else "")
        self._out(f"[cyan]{label}[/cyan]", label)

    def step_finished(self, index: int, total: int, step_id: str, summary: dict[str, Any]) -> None:
        if summary.get("ok"):
            rung = summary.get("rung") or "-"
            score = summary.get("score")
            s = f"    ok  rung={rung}" + (f" score={score:.3f}" if isinstance(score, float) else "") + f" {summary.get('ms', 0):.0f} ms"
            self._out(f"[green]{s}[/green]", s)
        else:
            s = f"    HALT {step_id}: {summary.get('category')}: {summary.get('message')}"
            self._out(f"[red]{s}[/red]", s)
