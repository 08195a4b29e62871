"""The exit codes (spec §6) in one table — the CLI exits with them, `flow --help` and docs/cli.md print them — and
the kinds an error's JSON object names (the object itself, `CliError`, is in cli/errdoc.py: pydantic stays out of
`flow --help`'s start-up)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ExitCode:
    code: int
    kind: str  # the `kind` of a JSON error with this code
    meaning: str


EXIT_CODES: tuple[ExitCode, ...] = (
    ExitCode(0, "ok", "COMPLETED (for approve/answer/signal: recorded; for read-only commands: done)"),
    ExitCode(1, "failed", "FAILED: the run could not proceed and is not resumable"),
    ExitCode(
        2,
        "usage",
        "usage or invalid input: bad flag, bundle, config, params, run dir, missing settings (all "
        "named at once), wrong credentials",
    ),
    ExitCode(3, "paused", "PAUSED: see `flow status RUN` (pending_escalation.json)"),
    ExitCode(4, "blocked", "BLOCKED: a policy, a budget or an operator's reject"),
    ExitCode(
        5, "interrupted", "INTERRUPTED: the process was stopped (SIGTERM/SIGINT) or its disk failed; `flow resume`"
    ),
    ExitCode(6, "refused", "REFUSED: valid input not allowed now (no or used approval, tampered run dir, live owner)"),
    ExitCode(
        7,
        "landed",
        "FAILED_AFTER_EFFECT: the run could not proceed after a write of it landed; do not re-run it "
        "from the start (it would write twice): finish by hand",
    ),
    ExitCode(
        70, "internal", "internal error: a bug in the tool itself, never a run's outcome (traceback saved to a file)"
    ),
    ExitCode(
        75,
        "unavailable",
        "temporary failure (EX_TEMPFAIL): the desktop (VNC/RDP refused or timed out), a "
        "system of record or the PostgreSQL run store could not be reached or read; nothing "
        "was sent: retry later",
    ),
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
