"""The base of every `flow.yaml` model: unknown keys are errors, and a loaded bundle does not change."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
