"""Shared CLI plumbing: one-line errors with the right exit code, JSON output, output style."""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

import typer

from openadapt_flow.errors import FlowError, RunSignal

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


def emit_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, default=str, ensure_ascii=False) + "\n")
    sys.stdout.flush()
