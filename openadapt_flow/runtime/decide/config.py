"""The deployment config (`--config deploy.yaml`, schema openadapt-flow/config@1). Strict."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from openadapt_flow.bundle.models import Effect
from openadapt_flow.bundle.yamlsrc import YamlDoc
from openadapt_flow.errors import ConfigError


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class BackendConfig(_Strict):
    kind: Literal["vnc", "screen", "rdp", "fixture"] | None = None
    url: str | None = None
    host: str | None = None
    port: int | None = Field(default=None, ge=1, le=65535)
    password_env: str | None = None
    username: str | None = None
    domain: str | None = None
    display: str | None = None
    monitor: int | None = Field(default=None, ge=0)
    ignore_certificate: bool = False
    cert_fingerprint: str | None = None  # rdp: pinned SHA-256 of the server certificate
    width: int | None = Field(default=None, ge=64, le=8192)  # rdp: session size (default 1024x768)
    height: int | None = Field(default=None, ge=64, le=8192)
    connect_timeout_s: float = Field(default=10.0, gt=0, le=600)


class RuntimeConfig(_Strict):
    durable: bool = False
    runs_root: str = "runs"
    # where runs live (SPEC §18): None, the filesystem under runs_root; `memory:` this process's memory (gone with it)
    store: str | None = None
    lease_ttl_s: float = Field(default=30, gt=0)
    pause_ttl_s: float = Field(default=86400, gt=0)
    settle_quiet_s: float = Field(default=0.05, gt=0, le=10)
    settle_timeout_s: float = Field(default=5.0, gt=0, le=600)
    # A `type` step's keys wait until the screen stayed quiet this long after its click: a toolkit's double-click
    # interval (Qt/GTK 400 ms, Windows 500 ms), during which a click on an already-selected table cell is held
    # before its editor opens. 0 for an app known to act on a click at once (saves up to this much per type step).
    field_ready_s: float = Field(default=0.5, ge=0, le=5)


class ModelConfig(_Strict):
    enabled: bool = False
    url: str = "http://127.0.0.1:8080/v1"
    model: str = "ui-grounder"
    api_key_env: str | None = None
    timeout_s: float = Field(default=30, gt=0)
    allow_consequential: bool = False


class LadderConfig(_Strict):
    model: ModelConfig = Field(default_factory=ModelConfig)


class DenyRule(_Strict):
    """A step matching every given field is refused before it acts (BLOCKED with an incident)."""

    step: str | None = None
    action: str | None = None
    call: str | None = None  # tool steps: module:function
    text_matches: str | None = None  # regex over the step's typed text (after interpolation)
    reason: str | None = None

    @model_validator(mode="after")
    def _some(self) -> "DenyRule":
        if not any((self.step, self.action, self.call, self.text_matches)):
            raise ValueError("a deny rule needs at least one of step, action, call, text_matches")
        if self.text_matches is not None:
            try:
                re.compile(self.text_matches)
            except re.error as e:
                raise ValueError(f"text_matches is not a valid regex: {e}") from None
        return self


class PolicyConfig(_Strict):
    max_steps: int | None = Field(default=None, gt=0)
    max_duration_s: float | None = Field(default=None, gt=0)
    max_model_calls: int | None = Field(default=None, ge=0)
    max_retries_per_step: int | None = Field(default=None, ge=0)
    require_effect_for_consequential: bool = False
    forbid_model_for_consequential: bool = True
    deny: list[DenyRule] = Field(default_factory=list)


class ApprovalsConfig(_Strict):
    operators: list[str] | None = None
    auto_resume: bool = True  # may `flow worker` resume a run once its approval is recorded?
    quorum: int = Field(default=1, ge=1)
    levels: list[str] | None = None


class DeployConfig(_Strict):
    schema_: Literal["openadapt-flow/config@1"] = Field(alias="schema")
    backend: BackendConfig = Field(default_factory=BackendConfig)
    runtime: RuntimeConfig = Field(default_factory=RuntimeConfig)
    ladder: LadderConfig = Field(default_factory=LadderConfig)
    effects: dict[str, Effect] = Field(default_factory=dict)
    policy: PolicyConfig = Field(default_factory=PolicyConfig)
    approvals: ApprovalsConfig = Field(default_factory=ApprovalsConfig)

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @classmethod
    def default(cls) -> "DeployConfig":
        return cls.model_validate({"schema": "openadapt-flow/config@1"})


def load_config(path: str | Path | None) -> DeployConfig:
    """Parse a deployment config, or the defaults when no path is given. ConfigError (exit 2) otherwise."""
    if path is None:
        return DeployConfig.default()
    doc = YamlDoc.read(Path(path), ConfigError)
    if not isinstance(doc.data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    if doc.data.get("schema") != "openadapt-flow/config@1":
        raise doc.fail(("schema",), f"schema must be 'openadapt-flow/config@1' (got {doc.data.get('schema')!r})")
    try:
        return DeployConfig.model_validate(doc.data)
    except ValidationError as e:
        raise doc.validation_error(e) from None
