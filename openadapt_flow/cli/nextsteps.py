"""What a command says a user runs next: the run's report's own list (report/halt.py), printed the same everywhere."""

from __future__ import annotations

import typer

from openadapt_flow.errors import FlowError
from openadapt_flow.report.model import build_report
from openadapt_flow.store import RunHandle


def next_commands(run: RunHandle) -> list[str]:
    """The commands that move `run` on from where it stopped (none for a finished run), as its report lists them."""
    try:
        return list(build_report(run).get("next_commands") or [])
    except FlowError:  # a damaged record: the command's own line already says so; no advice built on it
        return []


def echo_next(commands: list[str], err: bool = False) -> None:
    """`next:` and the commands, one a line, ready to paste."""
    if not commands:
        return
    typer.echo("next:", err=err)
    for c in commands:
        typer.echo(f"  {c}", err=err)
