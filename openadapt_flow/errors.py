"""One error tree for the whole tool; every error knows its exit code.

    FlowError                      base; exit 1
    ├── UsageError                 bad flag, bundle, config, params, run dir; exit 2
    │   ├── BundleError            flow.yaml or its files are invalid
    │   ├── ConfigError            deploy.yaml is invalid
    │   └── ParamError             params unbound, mistyped, or a secret passed by flag
    ├── BackendError               the desktop could not be reached or driven; exit 2 at connect
    │   ├── ConnectionFailed       refused, unreachable, or lost mid-session
    │   ├── AuthFailed             the server refused our credentials
    │   └── BackendTimeout         a wait on the backend ran out
    ├── RunDirError                a run directory is missing, not a run, or unusable; exit 2
    └── RefusedError               valid input not allowed now (tampered, live owner); exit 6

The CLI prints `str(error)` on one line and exits with `error.exit_code`.
"""

from __future__ import annotations


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


class BackendError(FlowError):
    """A backend failure. Exit 2 when raised before a run starts (connect)."""

    exit_code = 2
    kind = "backend"


class ConnectionFailed(BackendError):
    kind = "connection"


class AuthFailed(BackendError):
    kind = "auth"


class BackendTimeout(BackendError):
    kind = "timeout"


class RefusedError(FlowError):
    exit_code = 6
