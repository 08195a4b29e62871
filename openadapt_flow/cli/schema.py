"""`flow schema NAME`: the JSON Schema of one of the tool's file formats, generated from its pydantic model.

Its own module: building the run-record models costs tens of milliseconds that `flow status` should not pay.
"""

from __future__ import annotations

import json
from typing import Any

import typer
from pydantic import TypeAdapter

from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.bundle.models import Bundle
from openadapt_flow.cli.common import fail, handle_errors
from openadapt_flow.cli.errdoc import CliError
from openadapt_flow.fixture.model import Fixture
from openadapt_flow.fixture.recording_io import RecordingDoc
from openadapt_flow.records.models import RECORD_MODELS, JournalRecord
from openadapt_flow.records.runfiles import FILE_MODELS
from openadapt_flow.runtime import BatchResult, TargetsFile

# Every file format the tool reads or writes; `journal` is any journal record (a union on `type`),
# `record-<type>` one record type.
SCHEMAS: dict[str, Any] = {
    "bundle": Bundle,
    "config": DeployConfig,
    "fixture": Fixture,
    "recording": RecordingDoc,
    "targets": TargetsFile,  # a fleet worker's desktops (spec §19)
    "batch-result": BatchResult,  # one line of `flow batch`'s results.jsonl (docs/batch.md)
    "error": CliError,  # what a command prints on stdout when it fails under --json
    **FILE_MODELS,
    "decision": FILE_MODELS["approval"],  # decisions/<pause_id>.json: the approval, moved there when used
    "journal": JournalRecord,
    "journal-record": JournalRecord,
    **{f"record-{name}": model for name, model in RECORD_MODELS.items()},
}


def schema_json(name: str) -> dict[str, Any]:
    out = TypeAdapter(SCHEMAS[name]).json_schema(by_alias=True)
    out["$id"] = f"openadapt-flow/{name}"
    return out


@handle_errors
def schema_cmd(
    name: str = typer.Argument(..., help=f"one of: {', '.join(SCHEMAS)}"), as_json: bool = typer.Option(False, "--json")
) -> None:
    """Print a JSON Schema for one of the tool's file formats (always JSON; --json makes an error JSON too)."""
    if name not in SCHEMAS:
        fail(f"unknown schema {name!r} (one of: {', '.join(sorted(SCHEMAS))})", 2)
    typer.echo(json.dumps(schema_json(name), indent=2))
