"""One error tree for the whole tool; every error knows its exit code.

    FlowError                      base; exit 1
    ├── UsageError                 bad flag, bundle, config, params, run dir; exit 2
    │   ├── BundleError            flow.yaml or its files are invalid
    │   ├── ConfigError            deploy.yaml is invalid
    │   └── ParamError             params unbound, mistyped, or a secret passed by flag
    ├── BackendError               the desktop could not be reached or driven; exit 75 at connect (try again later)
    │   ├── ConnectionFailed       refused, unreachable, or lost mid-session
    │   ├── AuthFailed             the server refused our credentials; exit 2 (bad input: fix the password)
    │   └── BackendTimeout         a wait on the backend ran out
    ├── Unavailable                a system of record cannot be read now; exit 75 (EX_TEMPFAIL: a retry loop retries)
    ├── RunDirError                a run directory is missing, not a run, or unusable; exit 2
    └── RefusedError               valid input not allowed now (tampered, live owner); exit 6

    RunSignal (BaseException)      the run's control flow: how a run stops, never an error to handle
    ├── Halt                       runtime/judge/halt.py: cannot be sure; FAILED, or a durable pause
    ├── Pause                      runtime/judge/halt.py: a durable step waits for a human, a signal or a timer
    ├── StopRequested              runtime/judge/halt.py: SIGTERM/SIGINT; stop at the next safe boundary
    ├── PolicyBlock                runtime/judge/policy.py: a policy rule or budget stops the run (BLOCKED)
    ├── WorkflowStop               runtime/workflow/ctx.py: carries a signal out through a workflow's code
    ├── LeaseLost                  store/lease.py: another process took the run over; exit 6
    └── StorageFault               store/atomic.py: the run's files cannot be written; exit 5

The CLI prints `str(error)` on one line and exits with `error.exit_code`. A message that names a value the user gave
shows it through `shown` (bounded, control characters escaped): a 100 KB host or a NUL in a path is named, never
printed whole. A RunSignal derives from BaseException so
that no `except Exception` meant for a step's (or a workflow's, or a tool's) ordinary errors swallows it.
"""

from __future__ import annotations

SHOWN_CHARS = 60  # how much of a user's value an error line shows


def shown(value: object, limit: int = SHOWN_CHARS) -> str:
    """`value` as an error line names it: its repr (control characters escaped), cut to `limit` characters with its
    length said when longer."""
    text = repr(str(value))
    if len(text) <= limit:
        return text
    return f"{text[: limit - 1]}… ({len(str(value))} characters)"


def control_char(text: str, allowed: str = "") -> tuple[int, str] | None:
    """The first control character of `text` (a C0/C1 control, DEL, or a lone surrogate: undecodable bytes) that is
    not in `allowed`, as (index, its name like 'NUL' or 'U+001B'); None when there is none."""
    for i, ch in enumerate(text):
        code = ord(ch)
        if ch in allowed:
            continue
        if code < 0x20 or 0x7F <= code <= 0x9F or 0xD800 <= code <= 0xDFFF:
            names = {0: "NUL", 0x1B: "ESC", 0x7F: "DEL", 0x0A: "newline", 0x0D: "carriage return", 0x09: "tab"}
            return i, names.get(code, f"U+{code:04X}")
    return None


class FlowError(Exception):
    """Base of every error the tool raises on purpose."""

    exit_code = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class UsageError(FlowError):
    exit_code = 2


class BundleError(UsageError):
    pass


class ConfigError(UsageError):
    pass


class ParamError(UsageError):
    pass


class RunDirError(UsageError):
    pass


class CutStartup(RunDirError):
    """A run whose start-up was cut before its manifest (spec §7): not a run, and nothing was sent."""


EX_TEMPFAIL = 75  # sysexits.h: a temporary failure; the same command may succeed later (nothing was sent)


class Unavailable(FlowError):
    """The environment, not the input: something the run needs cannot be reached or read now (exit 75)."""

    exit_code = EX_TEMPFAIL


class BackendError(FlowError):
    """A backend failure. Exit 75 when raised before a run starts (connect): the desktop, not the input."""

    exit_code = EX_TEMPFAIL
    kind = "backend"


class ConnectionFailed(BackendError):
    kind = "connection"


class AuthFailed(BackendError):
    exit_code = 2  # wrong credentials are bad input: retrying the same password cannot help
    kind = "auth"


class BackendTimeout(BackendError):
    kind = "timeout"


class RefusedError(FlowError):
    exit_code = 6


class RunSignal(BaseException):
    """Base of the signals that steer a run (halt, pause, stop, block, lost lease, storage fault); not errors."""

    exit_code = 1
