"""The `flow` command (and `openadapt flow …`): thin — parse, call, map exit code."""

from __future__ import annotations

import os
import sys
import warnings

import typer

try:  # typer ≥ 0.20 vendors click
    from typer._click import exceptions as click_errors
except ImportError:  # pragma: no cover - older typer on real click
    from click import exceptions as click_errors  # type: ignore[no-redef]

from openadapt_flow import __version__
from openadapt_flow.cli.demo import demo_cmd
from openadapt_flow.cli.fixture import fixture_app
from openadapt_flow.cli.durable import answer_cmd, approve_cmd, patch_app, reconcile_cmd, resume_cmd, signal_cmd, wait_cmd, worker_cmd
from openadapt_flow.cli.inspect import report_cmd, runs_cmd, schema_cmd, status_cmd, validate_cmd
from openadapt_flow.cli.replay import replay_cmd
from openadapt_flow.cli.workflow import run_py_cmd

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
app.command("demo")(demo_cmd)
app.add_typer(fixture_app, name="fixture")
app.command("approve")(approve_cmd)
app.command("resume")(resume_cmd)
app.command("reconcile")(reconcile_cmd)
app.command("answer")(answer_cmd)
app.command("signal")(signal_cmd)
app.command("wait")(wait_cmd)
app.command("worker")(worker_cmd)
app.command("run-py")(run_py_cmd)
app.add_typer(patch_app, name="patch")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"openadapt-flow {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="print the version")) -> None:
    """openadapt-flow."""


openadapt_app = typer.Typer(name="openadapt", no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)
openadapt_app.add_typer(app, name="flow")


def _run(typer_app: typer.Typer, prog: str) -> None:
    """Run with click's own error handling replaced: a usage error is one line and exit 2."""
    if not os.environ.get("FLOW_DEBUG"):
        # library deprecation chatter (e.g. VNC auth's DES in vncdotool) must not break one-line errors
        warnings.simplefilter("ignore")
    try:
        code = typer_app(prog_name=prog, standalone_mode=False)
    except click_errors.NoArgsIsHelpError as e:
        typer.echo(e.ctx.get_help() if e.ctx else str(e))
        sys.exit(0)
    except click_errors.UsageError as e:
        hint = f" (see '{e.ctx.command_path} --help')" if e.ctx else ""
        typer.echo(f"error: {e.format_message()}{hint}", err=True)
        sys.exit(2)
    except click_errors.ClickException as e:
        typer.echo(f"error: {e.format_message()}", err=True)
        sys.exit(e.exit_code)
    sys.exit(code if isinstance(code, int) else 0)


def main() -> None:
    _run(app, "flow")


def openadapt_main() -> None:
    _run(openadapt_app, "openadapt")


if __name__ == "__main__":
    main()
