"""Pydantic models of the run directory's JSON files; `flow schema NAME` prints their JSON Schemas."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Doc(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)
    schema_: str = Field(alias="schema")


class StateFile(_Doc):
    state: Literal["PENDING", "RUNNING", "PAUSED", "RESUMING", "COMPLETED", "FAILED", "BLOCKED", "INTERRUPTED"]
    paused_reason: str | None = None
    transaction_outcome: Literal["HALTED_BEFORE_EFFECT", "RECONCILIATION_REQUIRED"] | None = None
    last_checkpoint_seq: int | None = None
    halt_category: str | None = None
    message: str | None = None
    updated_at: str
    journal_seq: int | None = None  # the journal's end when this state was written (its seal covers it)
    journal_hash: str | None = None
    seal: str | None = None  # HMAC (installation key) over the whole file; see RunDir.check_seal


class ManifestFile(_Doc):
    run_id: str
    created_at: str
    tool_version: str
    bundle: dict[str, Any]
    params: dict[str, Any]
    backend: dict[str, Any]
    durable: bool
    config: dict[str, Any]
    step_ids: list[str]
    parent_run: str | None = None
    child_runs: list[str] = Field(default_factory=list)


class JournalRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")
    seq: int = Field(ge=1)
    ts: str
    type: str
    step: str | None
    data: dict[str, Any]
    prev_hash: str
    hash: str


class ReportFile(_Doc):
    run_id: str | None
    state: str | None
    transaction_outcome: str | None = None
    halt: dict[str, Any] | None = None
    steps: list[dict[str, Any]]
