"""The deployment config (`--config deploy.yaml`, schema openadapt-flow/config@1). Strict."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from openadapt_flow.bundle.effect import Effect
from openadapt_flow.bundle.yamlsrc import YamlDoc
from openadapt_flow.errors import ConfigError


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


BackendKind = Literal["vnc", "screen", "rdp", "fixture"]  # a config's (and a fleet target's) backend.kind


class BackendConfig(_Strict):
    kind: BackendKind | None = Field(
        default=None,
        description="which backend drives the desktop (default: implied by url, else none: give --backend/--url)",
    )
    url: str | None = Field(
        default=None, description="vnc://host[:port], rdp://host[:port] or fixture:PATH (no credentials in it)"
    )
    host: str | None = Field(default=None, description="the server's host (instead of url)")
    port: int | None = Field(default=None, ge=1, le=65535, description="the server's port (default: the protocol's)")
    password_env: str | None = Field(
        default=None,
        description="name of the environment variable holding the password "
        "(the password itself never appears in a file)",
    )
    username: str | None = Field(default=None, description="rdp: the user to log on as")
    domain: str | None = Field(default=None, description="rdp: the logon domain")
    display: str | None = Field(
        default=None, description="screen: the X display to capture and drive (default $DISPLAY)"
    )
    monitor: int | None = Field(default=None, ge=0, description="screen: which monitor of the display (mss numbering)")
    ignore_certificate: bool = Field(
        default=False, description="rdp: accept any server certificate (not with cert_fingerprint)"
    )
    cert_fingerprint: str | None = Field(
        default=None, description="rdp: pinned SHA-256 of the server certificate (sha256:…)"
    )
    width: int | None = Field(default=None, ge=64, le=8192, description="rdp: session width in pixels (default 1024)")
    height: int | None = Field(default=None, ge=64, le=8192, description="rdp: session height in pixels (default 768)")
    connect_timeout_s: float = Field(
        default=10.0, gt=0, le=600, description="seconds to wait for the backend to connect"
    )


class RuntimeConfig(_Strict):
    durable: bool = Field(
        default=False, description="run with the durable runtime (checkpoints, pauses, resume); as --durable"
    )
    runs_root: str = Field(default="runs", description="the folder new run directories are made in")
    store: str | None = Field(
        default=None,
        description="where runs live: unset, the filesystem under runs_root; "
        "`memory:` this process's memory (gone with it); as --store",
    )
    lease_ttl_s: float = Field(
        default=30, gt=0, description="seconds without a heartbeat after which a run's owner counts as gone"
    )
    pause_ttl_s: float = Field(
        default=86400, gt=0, description="seconds a pause's decision task stays valid (then `escalate` renews it)"
    )
    settle_quiet_s: float = Field(default=0.05, gt=0, le=10, description="quiet time that counts as a settled screen")
    settle_timeout_s: float = Field(
        default=5.0, gt=0, le=600, description="longest wait for the screen to settle after an action"
    )
    # A `type` step's keys wait until the screen stayed quiet this long after its click: a toolkit's double-click
    # interval (Qt/GTK 400 ms, Windows 500 ms), during which a click on an already-selected table cell is held
    # before its editor opens. 0 for an app known to act on a click at once (saves up to this much per type step).
    field_ready_s: float = Field(
        default=0.5,
        ge=0,
        le=5,
        description="quiet time after a type step's click before its keys "
        "(a toolkit's double-click interval; 0 for apps that act at once)",
    )


class ModelConfig(_Strict):
    enabled: bool = Field(
        default=False, description="allow the model rung (a grounding model called when template and OCR fail)"
    )
    url: str = Field(
        default="http://127.0.0.1:8080/v1", description="OpenAI-compatible endpoint of the grounding model"
    )
    model: str = Field(default="ui-grounder", description="the model name sent to the endpoint")
    api_key_env: str | None = Field(default=None, description="environment variable holding the endpoint's API key")
    timeout_s: float = Field(default=30, gt=0, description="seconds one model call may take")
    allow_consequential: bool = Field(
        default=False,
        description="may the model locate the target of a consequential step "
        "(also needs policy.forbid_model_for_consequential: false)",
    )


class LadderConfig(_Strict):
    model: ModelConfig = Field(default_factory=ModelConfig, description="the model rung")


class DenyRule(_Strict):
    """A step matching every given field is refused before it acts (BLOCKED with an incident)."""

    step: str | None = Field(default=None, description="a step id")
    action: str | None = Field(default=None, description="a step action (click, type, key, …)")
    call: str | None = Field(default=None, description="tool steps: module:function")
    text_matches: str | None = Field(default=None, description="regex over the step's typed text (after interpolation)")
    reason: str | None = Field(default=None, description="why: recorded in the incident")

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
    max_steps: int | None = Field(default=None, gt=0, description="most steps a run may dispatch (then BLOCKED)")
    max_duration_s: float | None = Field(
        default=None, gt=0, description="longest a run may take, in seconds (then BLOCKED)"
    )
    max_model_calls: int | None = Field(
        default=None, ge=0, description="most model-rung calls a run may make (then BLOCKED)"
    )
    max_retries_per_step: int | None = Field(
        default=None, ge=0, description="most times one step may be dispatched again (then BLOCKED)"
    )
    require_effect_for_consequential: bool = Field(
        default=False, description="refuse a consequential step that declares no effect verifier (BLOCKED)"
    )
    forbid_model_for_consequential: bool = Field(
        default=True, description="never let the model rung locate a consequential step's target"
    )
    deny: list[DenyRule] = Field(
        default_factory=list, description="steps refused before they act (BLOCKED with an incident)"
    )


class ApprovalsConfig(_Strict):
    operators: list[str] | None = Field(
        default=None,
        description="who may decide (operator names when authenticated: "
        "console, phone, `flow approve` with a credential; else "
        "OS users); unset: anyone",
    )
    auto_resume: bool = Field(default=True, description="may `flow worker` resume a run once its approval is recorded")
    quorum: int = Field(
        default=1,
        ge=1,
        description="distinct voters that must record the same decision on a "
        "consequential step; above 1, authenticated operators only (console, "
        "phone, `flow approve` with a credential), never an OS user",
    )
    levels: list[str] | None = Field(
        default=None, description="escalation levels: `escalate` moves a pause to the next (the last repeats)"
    )
    channels: list[Literal["console", "phone", "cli"]] | None = Field(
        default=None,
        description="where a decision on a consequential step may come from; e.g. [console, "
        "phone] refuses `flow approve` on the runner host for them; unset: any channel",
    )


class DeployConfig(_Strict):
    schema_: Literal["openadapt-flow/config@1"] = Field(alias="schema", description="format name and version")
    backend: BackendConfig = Field(
        default_factory=BackendConfig, description="the desktop the run drives (--backend/--url/--rdp-host override it)"
    )
    runtime: RuntimeConfig = Field(default_factory=RuntimeConfig, description="durability, run storage, timing")
    ladder: LadderConfig = Field(default_factory=LadderConfig, description="the resolution ladder's optional rungs")
    effects: dict[str, Effect] = Field(
        default_factory=dict,
        description="named effect verifiers a step uses with `use: NAME` (the bundle's effect format, docs/bundle.md)",
    )
    policy: PolicyConfig = Field(
        default_factory=PolicyConfig, description="budgets and rules that stop a run (BLOCKED)"
    )
    approvals: ApprovalsConfig = Field(
        default_factory=ApprovalsConfig, description="who decides on a pause, and how many"
    )

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
