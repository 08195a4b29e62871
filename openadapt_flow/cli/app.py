"""The `flow` command (and `openadapt flow …`): thin — parse, call, map exit code."""

from __future__ import annotations

import sys

import typer

from openadapt_flow import __version__
from openadapt_flow.cli.inspect import report_cmd, runs_cmd, schema_cmd, status_cmd, validate_cmd
from openadapt_flow.cli.replay import replay_cmd

app = typer.Typer(
    name="flow",
    help="Replay demonstrated GUI workflows against live desktops; verify every step, never guess.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command("replay")(replay_cmd)
app.command("validate")(validate_cmd)
app.command("status")(status_cmd)
app.command("runs")(runs_cmd)
app.command("report")(report_cmd)
app.command("schema")(schema_cmd)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"openadapt-flow {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="print the version")) -> None:
    """openadapt-flow."""


openadapt_app = typer.Typer(name="openadapt", no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)
openadapt_app.add_typer(app, name="flow")


def main() -> None:
    app(prog_name="flow")


def openadapt_main() -> None:
    openadapt_app(prog_name="openadapt")


if __name__ == "__main__":
    main()
    sys.exit(0)
