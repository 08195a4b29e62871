"""targets.yaml (`openadapt-flow/targets@1`): the desktops a fleet worker may drive (spec §19)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.bundle.config import BackendConfig, BackendKind
from openadapt_flow.bundle.userfile import MAX_CONFIG_FILE
from openadapt_flow.bundle.yamlsrc import YamlDoc
from openadapt_flow.errors import ConfigError
from openadapt_flow.runtime.start.backend_select import select_backend

TARGETS_SCHEMA = "openadapt-flow/targets@1"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class TargetBackend(_Strict):
    # the config's own Literal: typing caches a Literal by its set of values, so one set in two orders made `flow
    # schema` print the order of whichever module was imported first
    kind: BackendKind | None = Field(default=None, description="as a config's backend.kind")
    url: str | None = Field(
        default=None, description="vnc://host[:port], rdp://host[:port] or fixture:PATH (no credentials)"
    )
    password_env: str | None = Field(
        default=None, description="the environment variable holding the desktop's password"
    )


class Target(_Strict):
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$", description="the desktop's name (unique in the file)")
    labels: list[str] = Field(
        default_factory=list, description="a run submitted with --target LABEL runs on a target with it"
    )
    backend: TargetBackend

    def spec(self) -> BackendSpec:
        """The backend spec this desktop is driven with."""
        cfg = BackendConfig(kind=self.backend.kind, url=self.backend.url, password_env=self.backend.password_env)
        out = select_backend(cfg)
        if out is None:
            raise ConfigError(f"target {self.name}: its backend names no desktop (give url or kind)")
        return out

    def serves(self, label: str | None) -> bool:
        return label is None or label == self.name or label in self.labels


class TargetsFile(_Strict):
    schema_: Literal["openadapt-flow/targets@1"] = Field(alias="schema", description="always openadapt-flow/targets@1")
    targets: list[Target] = Field(min_length=1, description="the desktops; each runs one run at a time")

    @model_validator(mode="after")
    def _unique(self) -> "TargetsFile":
        names = [t.name for t in self.targets]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"target names must be unique: {', '.join(dup)}")
        return self


def load_targets(path: Path) -> TargetsFile:
    """Parse and check targets.yaml (every target's backend too). ConfigError (exit 2) otherwise."""
    doc = YamlDoc.read(path, ConfigError, MAX_CONFIG_FILE, "targets file").data  # bounded, never echoed (issue 34)
    try:
        out = TargetsFile.model_validate(doc)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top)"
        raise ConfigError(f"{path}: {where}: {first['msg']}") from None
    for t in out.targets:
        t.spec()
    return out
