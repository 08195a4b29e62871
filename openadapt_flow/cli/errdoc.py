"""The JSON object an error is under `--json` (`flow schema error`): apart from the exit-code table so that
`flow --help` and `--version` start without pydantic (issue 25, item 7); a command imports it when it fails."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["CliError"]


class CliError(BaseModel):
    """What a command prints on stdout when it fails under `--json` (stderr still gets the one-line message)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    schema_: Literal["openadapt-flow/error@1"] = Field(
        default="openadapt-flow/error@1", alias="schema", description="format name and version"
    )
    error: str = Field(description="the one-line message, the same text as on stderr after 'error: '")
    exit_code: int = Field(description="the process's exit code (see the exit-code table)")
    kind: str = Field(
        description="the exit code's stable name: usage, refused, failed, paused, blocked, interrupted, "
        "internal, unavailable, timeout"
    )
    type: str = Field(description="the error's class name, e.g. BundleError, RefusedError, UsageError")
    traceback_file: str | None = Field(default=None, description="internal errors only: where the traceback was saved")
