"""The `flow` command (and `openadapt flow …`): thin — parse, call, map exit code."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import os
import sys
import warnings
from collections.abc import Callable
from typing import Any

import typer
from typer.models import OptionInfo

from openadapt_flow.cli.common import DEBUG_ENV, JSON_HELP, click_errors, missing_extra, report_error, report_internal
from openadapt_flow.cli.exits import exit_codes_epilog
from openadapt_flow.version import __version__

# name -> (module, attribute, is a command group). Only the module of the command being run is imported,
# so `flow resume` does not pay for the fixture recorder, the workflow API or the demo at start-up.
COMMANDS: dict[str, tuple[str, str, bool]] = {
    "replay": ("openadapt_flow.cli.replay", "replay_cmd", False),
    "batch": ("openadapt_flow.cli.batch", "batch_cmd", False),
    "validate": ("openadapt_flow.cli.inspect", "validate_cmd", False),
    "status": ("openadapt_flow.cli.inspect", "status_cmd", False),
    "runs": ("openadapt_flow.cli.inspect", "runs_cmd", False),
    "report": ("openadapt_flow.cli.inspect", "report_cmd", False),
    "schema": ("openadapt_flow.cli.schema", "schema_cmd", False),
    "demo": ("openadapt_flow.cli.demo", "demo_cmd", False),
    "fixture": ("openadapt_flow.cli.fixture", "fixture_app", True),
    "record": ("openadapt_flow.cli.record", "record_cmd", False),
    "compile": ("openadapt_flow.cli.record", "compile_cmd", False),
    "approve": ("openadapt_flow.cli.durable", "approve_cmd", False),
    "resume": ("openadapt_flow.cli.durable", "resume_cmd", False),
    "reconcile": ("openadapt_flow.cli.durable", "reconcile_cmd", False),
    "answer": ("openadapt_flow.cli.durable", "answer_cmd", False),
    "signal": ("openadapt_flow.cli.durable", "signal_cmd", False),
    "wait": ("openadapt_flow.cli.durable", "wait_cmd", False),
    "worker": ("openadapt_flow.cli.fleet", "worker_cmd", False),
    "submit": ("openadapt_flow.cli.fleet", "submit_cmd", False),
    "desk": ("openadapt_flow.cli.desk", "desk_app", True),
    "run-py": ("openadapt_flow.cli.workflow", "run_py_cmd", False),
    "patch": ("openadapt_flow.cli.durable", "patch_app", True),
    "operator": ("openadapt_flow.cli.operator", "operator_app", True),
    "console": ("openadapt_flow.cli.console", "console_cmd", False),
    "queue": ("openadapt_flow.cli.phone", "queue_app", True),
    "relay": ("openadapt_flow.cli.phone", "relay_cmd", False),
    "store": ("openadapt_flow.cli.store_cmd", "store_app", True),
    "export": ("openadapt_flow.cli.store_cmd", "export_cmd", False),
}


RUNS_A_RUN = frozenset({"replay", "resume", "batch", "run-py", "wait", "demo"})


def build_app(only: str | None = None, summaries: bool = False) -> typer.Typer:
    """The `flow` app with every command, or with just `only` when the command line names one. `summaries`: every
    command by name and help text only, read from its module's source without importing it (`flow --help`,
    `flow --version`: no vision, no image libraries, no store at start-up)."""
    flow = typer.Typer(
        name="flow",
        help="Replay demonstrated GUI workflows against live desktops; verify every step, never guess.",
        no_args_is_help=True,
        add_completion=True,
        pretty_exceptions_enable=False,
        epilog=exit_codes_epilog(),
    )
    flow.callback()(_root)
    for name, (module, attr, group) in COMMANDS.items():
        if only is not None and name != only:
            continue
        if summaries:
            _add_summary(flow, name, module, attr, group)
            continue
        obj = getattr(importlib.import_module(module), attr)
        if group:
            for info in obj.registered_commands:
                _json_help(info.callback)
            flow.add_typer(obj, name=name)
        else:
            # a command that runs or resumes a run lists the exit codes it ends with, as `flow --help` does
            flow.command(name, epilog=exit_codes_epilog() if name in RUNS_A_RUN else None)(_json_help(obj))
    return flow


def _add_summary(flow: typer.Typer, name: str, module: str, attr: str, group: bool) -> None:
    """A stand-in for a command that only the root's help lists: its help text as the module's source gives it."""
    text = _source_help(module, attr)
    if group:
        flow.add_typer(typer.Typer(help=text), name=name)
    else:
        flow.command(name, help=text)(_stand_in)


def _stand_in() -> None:  # pragma: no cover - never run: a named command builds the real app (main)
    raise RuntimeError("a command stand-in ran")


def _source_help(module: str, attr: str) -> str | None:
    """A command function's docstring, or a command group's `typer.Typer(help=...)`, read from the module's source."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return None
    with open(spec.origin, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == attr:
            return ast.get_docstring(node)
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == attr for t in node.targets)
            and isinstance(node.value, ast.Call)
        ):
            for kw in node.value.keywords:
                if kw.arg == "help" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
                    return kw.value.value
    return None


def _json_help(command: Any) -> Any:
    """Every command's --json says the same thing, given once here (JSON_HELP) where the command gives none."""
    option = inspect.signature(command).parameters.get("as_json")
    if option is not None and isinstance(option.default, OptionInfo) and not option.default.help:
        option.default.help = JSON_HELP
    return command


def _version(value: bool) -> None:
    if value:
        typer.echo(f"openadapt-flow {__version__}")
        raise typer.Exit(0)


def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="print the version"),
) -> None:
    """openadapt-flow."""


def _command_named(argv: list[str]) -> str | None:
    first = next((a for a in argv if not a.startswith("-")), None)
    return first if first in COMMANDS else None


def _run(make_app: Callable[[], typer.Typer], prog: str, argv: list[str]) -> None:
    """Run with click's own error handling replaced: a usage error is one line and exit 2, a bug one line and exit 70
    (the commands map their own errors in cli/common.py; this is the last resort). `--json` makes errors JSON too."""
    if not os.environ.get(DEBUG_ENV):
        # library deprecation chatter (e.g. VNC auth's DES in vncdotool) must not break one-line errors
        warnings.simplefilter("ignore")
    as_json = "--json" in argv
    try:
        code = make_app()(args=argv, prog_name=prog, standalone_mode=False)
    except click_errors.NoArgsIsHelpError as e:
        typer.echo(e.ctx.get_help() if e.ctx else str(e))
        sys.exit(0)
    except click_errors.UsageError as e:
        hint = f" (see '{e.ctx.command_path} --help')" if e.ctx else ""
        _exit_with(lambda: report_error(f"{e.format_message()}{hint}", 2, type(e).__name__, as_json))
    except click_errors.ClickException as e:
        _exit_with(lambda: report_error(e.format_message(), e.exit_code, type(e).__name__, as_json))
    except typer.Abort:
        _exit_with(lambda: report_error("interrupted", 5, "KeyboardInterrupt", as_json))
    except Exception as e:  # a bug outside any command (building the app, parsing): exit 70, never a traceback
        extra = missing_extra(e)  # or a command module that needs an extra that is not installed: exit 2
        _exit_with(lambda: report_error(extra, 2, type(e).__name__, as_json) if extra else report_internal(e, as_json))
    sys.exit(code if isinstance(code, int) else 0)


def _exit_with(report: Callable[[], object]) -> None:
    try:
        report()
    except typer.Exit as done:
        sys.exit(done.exit_code)


def _summaries_will_do(only: str | None, prog: str) -> bool:
    """No command named and no shell completion asked for (it completes a command's options): help text is enough."""
    return only is None and f"_{prog.upper()}_COMPLETE" not in os.environ


def main() -> None:
    argv = sys.argv[1:]
    only = _command_named(argv)
    _run(lambda: build_app(only, summaries=_summaries_will_do(only, "flow")), "flow", argv)


def openadapt_main() -> None:
    argv = sys.argv[1:]

    def make() -> typer.Typer:
        outer = typer.Typer(
            name="openadapt", no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False
        )
        only = _command_named(argv[1:]) if argv[:1] == ["flow"] else None
        outer.add_typer(build_app(only, summaries=_summaries_will_do(only, "openadapt")), name="flow")
        return outer

    _run(make, "openadapt", argv)


if __name__ == "__main__":
    main()


def __getattr__(name: str) -> typer.Typer:
    """`from openadapt_flow.cli.app import app`: the full app, built on first use (for CliRunner tests)."""
    if name == "app":
        return build_app()
    raise AttributeError(name)
