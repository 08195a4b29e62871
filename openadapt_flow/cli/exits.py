"""The exit codes (spec §6) in one table — the CLI exits with them, `flow --help` and docs/cli.md print them — and
the JSON object an error is under `--json` (`flow schema error`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


@dataclass(frozen=True)
class ExitCode:
    code: int
    kind: str  # the `kind` of a JSON error with this code
    meaning: str


EXIT_CODES: tuple[ExitCode, ...] = (
    ExitCode(0, "ok", "COMPLETED (for approve/answer/signal: recorded; for read-only commands: done)"),
    ExitCode(1, "failed", "FAILED: the run could not proceed and is not resumable"),
    ExitCode(2, "usage", "usage or invalid input: bad flag, bundle, config, params, run dir, missing settings (all "
                         "named at once), wrong credentials"),
    ExitCode(3, "paused", "PAUSED: see `flow status RUN` (pending_escalation.json)"),
    ExitCode(4, "blocked", "BLOCKED: a policy, a budget or an operator's reject"),
    ExitCode(5, "interrupted", "INTERRUPTED: the process was stopped (SIGTERM/SIGINT) or its disk failed; `flow resume`"),
    ExitCode(6, "refused", "REFUSED: valid input not allowed now (no or used approval, tampered run dir, live owner)"),
    ExitCode(7, "landed", "FAILED_AFTER_EFFECT: the run could not proceed after a write of it landed; do not re-run it "
                          "from the start (it would write twice): finish by hand"),
    ExitCode(70, "internal", "internal error: a bug in the tool itself, never a run's outcome (traceback saved to a file)"),
    ExitCode(75, "unavailable", "temporary failure (EX_TEMPFAIL): the desktop (VNC/RDP refused or timed out), a "
                                "system of record or the PostgreSQL run store could not be reached or read; nothing "
                                "was sent: retry later"),
    ExitCode(124, "timeout", "`flow wait --timeout` ran out before the run paused or ended"),
)

EXIT_INTERNAL = 70
EXIT_TIMEOUT = 124


def kind_of(code: int) -> str:
    """The stable name of an exit code ("error" for a code outside the table)."""
    return next((e.kind for e in EXIT_CODES if e.code == code), "error")


def exit_codes_epilog() -> str:
    """The exit-code table as `flow --help`'s epilog."""
    return "Exit codes:\n" + "\n".join(f"{e.code:>3}  {e.kind:<11} {e.meaning}" for e in EXIT_CODES)


class CliError(BaseModel):
    """What a command prints on stdout when it fails under `--json` (stderr still gets the one-line message)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    schema_: Literal["openadapt-flow/error@1"] = Field(default="openadapt-flow/error@1", alias="schema",
                                                       description="format name and version")
    error: str = Field(description="the one-line message, the same text as on stderr after 'error: '")
    exit_code: int = Field(description="the process's exit code (see the exit-code table)")
    kind: str = Field(description="the exit code's stable name: usage, refused, failed, paused, blocked, interrupted, "
                                  "internal, unavailable, timeout")
    type: str = Field(description="the error's class name, e.g. BundleError, RefusedError, UsageError")
    traceback_file: str | None = Field(default=None, description="internal errors only: where the traceback was saved")
