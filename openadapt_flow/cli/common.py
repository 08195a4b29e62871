"""Shared CLI plumbing: one-line errors with the right exit code, JSON output, output style."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import typer

try:  # typer ≥ 0.20 vendors click
    from typer._click import exceptions as click_errors
except ImportError:  # pragma: no cover - older typer on real click
    from click import exceptions as click_errors  # type: ignore[no-redef]

from openadapt_flow.cli.exits import EXIT_INTERNAL, kind_of
from openadapt_flow.errors import CutStartup, FlowError, RunDirError, RunSignal

if TYPE_CHECKING:
    from openadapt_flow.bundle.config import DeployConfig
    from openadapt_flow.store import RunHandle, RunStore

# The run and store helpers below import the store where they are called: cli/app.py imports this module for its
# error lines, and `flow --help` / `flow --version` must not pay for the store (it imports numpy and Pillow for frames).

F = TypeVar("F", bound=Callable[..., Any])

DEBUG_ENV = "FLOW_DEBUG"
MAX_ERROR_CHARS = 2000  # one error line; our own messages show a user's value through errors.shown, far shorter


class CommandError(FlowError):
    """An error a command raises with its own exit code (`fail`)."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.exit_code = code


def fail(message: str, code: int) -> NoReturn:
    raise CommandError(message, code)


def report_error(
    message: str, code: int, error_type: str, as_json: bool, traceback_file: str | None = None
) -> NoReturn:
    """One line on stderr (and, under --json, a CliError object on one line of stdout); exit with `code`. A message
    past MAX_ERROR_CHARS (a library's words quoting a huge value) is cut, its length said."""
    message = message.replace("\r", " ").replace("\n", " ")
    if len(message) > MAX_ERROR_CHARS:
        message = f"{message[:MAX_ERROR_CHARS]}… (error cut: {len(message)} characters)"
    if as_json:
        from openadapt_flow.cli.errdoc import CliError  # pydantic only when an error is printed as JSON

        err = CliError(
            error=message, exit_code=code, kind=kind_of(code), type=error_type, traceback_file=traceback_file
        )
        emit_json_line(err.model_dump(by_alias=True))  # one line: also a valid event of a JSON Lines command
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def report_internal(exc: BaseException, as_json: bool, run_dir: Path | None = None) -> NoReturn:
    """A bug: exit 70 with one line naming the exception and the file its traceback was saved to."""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    if os.environ.get(DEBUG_ENV):
        sys.stderr.write(text)
    saved = save_traceback(text, run_dir)
    where = f"traceback saved to {saved}" if saved else "the traceback could not be saved"
    report_error(
        f"internal error: {type(exc).__name__}: {exc} ({where}; {DEBUG_ENV}=1 prints it)",
        EXIT_INTERNAL,
        type(exc).__name__,
        as_json,
        str(saved) if saved else None,
    )


def save_traceback(text: str, run_dir: Path | None) -> Path | None:
    """Write a traceback under the run directory the command was given, else the user's cache dir, else /tmp."""
    name = f"internal-error-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{os.getpid()}.txt"
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "openadapt-flow" / "errors"
    for folder in ([run_dir] if run_dir is not None else []) + [cache]:
        try:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(text, encoding="utf-8")
            return folder / name
        except OSError:
            continue
    try:
        fd, path = tempfile.mkstemp(prefix="openadapt-flow-", suffix=".txt")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        return Path(path)
    except OSError:
        return None


def _given_run_dir(kwargs: dict[str, Any]) -> Path | None:
    """The filesystem run directory a command was given (its RUN argument or --run-dir), if it holds a run."""
    from openadapt_flow.store import MANIFEST

    value = kwargs.get("run_dir")
    return value if isinstance(value, Path) and (value / MANIFEST).is_file() else None


# the optional packages (pyproject.toml's extras): a command that needs one that is not installed says which extra
EXTRA_OF = {
    "starlette": "console",
    "uvicorn": "console",
    "jinja2": "console",
    "sse_starlette": "console",
    "multipart": "console",
    "argon2": "console",
    "pywebpush": "phone",
    "psycopg": "postgres",
    "procrastinate": "fleet",
}


def missing_extra(exc: BaseException) -> str | None:
    """The one-line message for an optional package that is not installed, or None for any other import error."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return None
    extra = EXTRA_OF.get(exc.name.split(".")[0])
    if extra is None:
        return None
    fleet = " (for the fleet: [fleet])" if extra == "postgres" else ""
    return (
        f"this command needs the optional package {exc.name.split('.')[0]!r}, which is not installed: install "
        f"openadapt-flow with its [{extra}] extra{fleet}, from its repository: pip install '/path/to/openadapt-flow[{extra}]'"
    )


def handle_errors(fn: F) -> F:
    """Map FlowError and RunSignal to a one-line message and their exit code; KeyboardInterrupt to 5; anything else,
    a bug, to exit 70 (never 1, which means a FAILED run). `as_json=True` adds the error as JSON on stdout."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        as_json = bool(kwargs.get("as_json"))
        try:
            return fn(*args, **kwargs)
        except (typer.Exit, typer.Abort, click_errors.ClickException):
            raise  # an outcome's exit code, or a usage error for cli/app.py to print
        except FlowError as e:
            report_error(str(e), e.exit_code, type(e).__name__, as_json)
        except RunSignal as e:  # a halt, pause, stop, block, lost lease or full disk that reached a command
            report_error(signal_line(e), e.exit_code, type(e).__name__, as_json)
        except KeyboardInterrupt:
            report_error("interrupted", 5, "KeyboardInterrupt", as_json)
        except BrokenPipeError:  # the reader left (`flow status RUN | head -1`): no bug, and no error file in the run
            reader_gone()
        except Exception as e:  # last resort: a bug; never a traceback on the terminal unless asked for
            extra = missing_extra(e)
            if extra is not None:
                report_error(extra, 2, type(e).__name__, as_json)
            report_internal(e, as_json, _given_run_dir(kwargs))

    return wrapper  # type: ignore[return-value]


EXIT_READER_GONE = 141  # 128 + SIGPIPE: what a shell reports for a command whose reader went away


def reader_gone() -> NoReturn:
    """Stop quietly once stdout's reader has gone: nothing more can be said, and Python's own flush at exit must not
    raise again (its output goes to /dev/null)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError:
        pass
    raise SystemExit(EXIT_READER_GONE)


def signal_line(signal: RunSignal) -> str:
    """One line naming a run signal: its message (a carried signal's own), never its traceback."""
    inner: BaseException = getattr(signal, "cause", None) or signal
    text = getattr(inner, "message", None) or str(inner) or type(inner).__name__
    return str(text).replace("\n", " ")


JSON_HELP = "print machine-readable JSON on stdout (an error too: a CliError object, see `flow schema error`)"
STORE_HELP = (
    "where runs live: a runs directory (default: runs); postgresql://USER@HOST/DB (the password from "
    "PGPASSWORD or ~/.pgpass, never the URL); or memory: — this process's memory, so a run stored there is "
    "gone when the command exits (memory: is for the Python API and tests)"
)
VIEWER_PORT_HELP = (
    "the port your VNC viewer connects to, the recorder's (0 picks a free one)"  # one name, --viewer-port
)
RUN_HELP = "run directory; or, with --store, the run's RUN_ID (or its name in that store)"


def open_run_arg(run: Path | str, store: str | None) -> RunHandle:
    """A command's RUN argument: a run directory (or `memory:NAME`); with --store, a RUN_ID or a name in that store."""
    from openadapt_flow.runtime import open_ref
    from openadapt_flow.store import open_store

    if store is None:
        return open_ref(str(run))
    runs = open_store(store)
    found = runs.find_run(str(run))
    if found is not None:
        return found
    try:
        return runs.open_run(str(run))
    except CutStartup:
        raise  # the store's own words: its start-up was cut, nothing was sent
    except RunDirError:
        raise RunDirError(f"{run}: no run with this id or name in --store {store}") from None


def root_store(root: Path, store: str | None) -> RunStore:
    """The runs a listing command scans: --store's, else the runs root directory (which must exist)."""
    from openadapt_flow.store import FilesystemStore, open_store

    if store is not None:
        return open_store(store)
    if not root.is_dir():
        raise RunDirError(f"{root}: runs root not found")
    return FilesystemStore(root)


def with_store(cfg: DeployConfig, store: str | None) -> DeployConfig:
    """The config with --store as its `runtime.store` (where the new run goes)."""
    from openadapt_flow.store import open_store

    if store is None:
        return cfg
    open_store(store)  # a malformed --store is bad input before anything starts
    return cfg.model_copy(update={"runtime": cfg.runtime.model_copy(update={"store": store})})


def emit_json(obj: Any) -> None:
    """One JSON document on stdout: a command's result under --json."""
    sys.stdout.write(json.dumps(obj, indent=2, default=str, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def emit_json_line(obj: Any) -> None:
    """One event of a long-running command under --json: one compact JSON object per line (JSON Lines)."""
    sys.stdout.write(json.dumps(obj, default=str, ensure_ascii=False) + "\n")
    sys.stdout.flush()
