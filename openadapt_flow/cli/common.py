"""Shared CLI plumbing: one-line errors with the right exit code, JSON output, output style."""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar

import typer

from openadapt_flow.errors import FlowError, RunDirError, RunSignal
from openadapt_flow.runtime.decide.config import DeployConfig
from openadapt_flow.runtime.act.runref import open_ref
from openadapt_flow.store.base import RunHandle, RunStore
from openadapt_flow.store.filesystem import FilesystemStore
from openadapt_flow.store.select import open_store

F = TypeVar("F", bound=Callable[..., Any])


def fail(message: str, code: int) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def handle_errors(fn: F) -> F:
    """Map FlowError to a one-line message and its exit code; anything else to one line and exit 1."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except typer.Exit:
            raise
        except FlowError as e:
            fail(str(e).replace("\n", " "), e.exit_code)
        except RunSignal as e:  # a halt, pause, stop, block, lost lease or full disk that reached a command
            fail(signal_line(e), e.exit_code)
        except KeyboardInterrupt:
            fail("interrupted", 5)
        except Exception as e:  # last resort: never a traceback unless asked for
            if os.environ.get("FLOW_DEBUG"):
                traceback.print_exc()
            fail(f"internal error: {type(e).__name__}: {e} (set FLOW_DEBUG=1 for a traceback)", 1)

    return wrapper  # type: ignore[return-value]


def signal_line(signal: RunSignal) -> str:
    """One line naming a run signal: its message (a carried signal's own), never its traceback."""
    inner: BaseException = getattr(signal, "cause", None) or signal
    text = getattr(inner, "message", None) or str(inner) or type(inner).__name__
    return str(text).replace("\n", " ")


STORE_HELP = ("where runs live (SPEC §18): a runs directory (default: runs) or memory: — this process's memory, so a run "
              "stored there is gone when the command exits (memory: is for the Python API and tests)")
RUN_HELP = "run directory; or, with --store, the run's RUN_ID (or its name in that store)"


def open_run_arg(run: Path | str, store: str | None) -> RunHandle:
    """A command's RUN argument: a run directory (or `memory:NAME`); with --store, a RUN_ID or a name in that store."""
    if store is None:
        return open_ref(str(run))
    runs = open_store(store)
    found = runs.find_run(str(run))
    if found is not None:
        return found
    try:
        return runs.open_run(str(run))
    except RunDirError:
        raise RunDirError(f"{run}: no run with this id or name in --store {store}") from None


def root_store(root: Path, store: str | None) -> RunStore:
    """The runs a listing command scans: --store's, else the runs root directory (which must exist)."""
    if store is not None:
        return open_store(store)
    if not root.is_dir():
        raise RunDirError(f"{root}: runs root not found")
    return FilesystemStore(root)


def with_store(cfg: DeployConfig, store: str | None) -> DeployConfig:
    """The config with --store as its `runtime.store` (where the new run goes)."""
    if store is None:
        return cfg
    open_store(store)  # a malformed --store is bad input before anything starts
    return cfg.model_copy(update={"runtime": cfg.runtime.model_copy(update={"store": store})})


def emit_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, default=str, ensure_ascii=False) + "\n")
    sys.stdout.flush()
