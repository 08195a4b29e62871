"""The drift corpus (tests/data/drift/<app>/targets.json): frames of real apps under drift, and where a click must land.

Each app folder holds PNG frames per drift kind and screen, the templates a
recorded bundle would use (cut from the healthy frame), and one targets.json
validated by `DriftCorpus`. Ground truth is the widget box a correct click
lands in, per target per drift; a target a person would call ambiguous in a
drift has no box there, and any click on it counts as wrong.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from openadapt_flow.bundle.models import Target
from openadapt_flow.imaging.png import decode_rgb

SCHEMA = "openadapt-flow/drift-corpus@1"
CORPUS_DIR = Path(__file__).resolve().parents[2] / "tests" / "data" / "drift"
DRIFT_ORDER = ("healthy", "moved", "natural", "dark", "scale125", "twin")
Box = tuple[int, int, int, int]
Outcome = Literal["right", "wrong", "halted"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DriftFrames(_Strict):
    """One drift kind of one app: its screen size, how it was made, and a PNG per screen of the app."""

    size: tuple[int, int]
    how: str  # what was changed, as a person would say it
    frames: dict[str, str]  # screen name -> PNG file, relative to the app folder
    offset: tuple[int, int] | None = None  # the window's move relative to healthy, where the drift is a move


class Truth(_Strict):
    """Where a correct click on a target lands in one drift (x, y, w, h), and whether a person would call it unambiguous."""

    box: Box | None  # None: no click is right (the target is ambiguous to a person there)
    unambiguous: bool
    source: Literal["derived", "annotated"]  # from known offsets/geometry, or read off the frame by a person
    note: str = ""

    @model_validator(mode="after")
    def _box_iff_unambiguous(self) -> "Truth":
        if self.unambiguous != (self.box is not None):
            raise ValueError("an unambiguous target needs a box; an ambiguous one has none (no click is right)")
        if self.box is not None and (self.box[2] <= 0 or self.box[3] <= 0):
            raise ValueError("box width and height must be positive")
        return self


class DriftTarget(_Strict):
    """One recorded target: the template and label a bundle would hold, and its truth per drift kind."""

    id: str
    screen: str
    what: str  # the widget, in words
    template: str  # crop file, relative to the app folder; cut from the healthy frame at `region`
    region: Box
    point: tuple[int, int] | None = None  # click offset inside the crop (default: its centre)
    text: str | None = None  # the label a recorder would store (None: the widget has none)
    text_offset: tuple[int, int] | None = None
    truth: dict[str, Truth]

    def as_target(self) -> Target:
        return Target(
            template=self.template, region=self.region, point=self.point, text=self.text, text_offset=self.text_offset
        )


class DriftCorpus(_Strict):
    """targets.json of one app."""

    schema_: str = Field(alias="schema")
    app: str
    package: str  # Debian package and version the frames were captured with
    toolkit: str
    recorded_size: tuple[int, int]
    drifts: dict[str, DriftFrames]
    targets: list[DriftTarget]

    @model_validator(mode="after")
    def _consistent(self) -> "DriftCorpus":
        if self.schema_ != SCHEMA:
            raise ValueError(f"schema must be {SCHEMA!r}")
        if "healthy" not in self.drifts or tuple(self.drifts["healthy"].size) != tuple(self.recorded_size):
            raise ValueError("the healthy drift is the recording: it must exist at recorded_size")
        for t in self.targets:
            if set(t.truth) != set(self.drifts):
                raise ValueError(f"target {t.id}: truth needed for exactly the drifts {sorted(self.drifts)}")
            for name, d in self.drifts.items():
                if t.screen not in d.frames:
                    raise ValueError(f"target {t.id}: drift {name} has no frame of screen {t.screen!r}")
        return self


@dataclass
class AppCorpus:
    """A loaded app folder: the model, frames (RGB) per (drift, screen) and templates (RGB) by file name."""

    folder: Path
    model: DriftCorpus
    frames: dict[tuple[str, str], np.ndarray]
    templates: dict[str, np.ndarray]

    @property
    def drifts(self) -> list[str]:
        return sorted(self.model.drifts, key=lambda d: (DRIFT_ORDER.index(d) if d in DRIFT_ORDER else 99, d))

    def frame(self, drift: str, target: DriftTarget) -> np.ndarray:
        return self.frames[(drift, target.screen)]


def read_rgb(path: Path) -> np.ndarray:
    img = decode_rgb(path.read_bytes()) if path.is_file() else None
    if img is None:
        raise ValueError(f"cannot read image {path}")
    return img


def load_app(folder: Path) -> AppCorpus:
    """One app folder's targets.json, frames and templates."""
    model = DriftCorpus.model_validate_json((folder / "targets.json").read_text())
    frames = {
        (drift, screen): read_rgb(folder / file)
        for drift, d in model.drifts.items()
        for screen, file in d.frames.items()
    }
    templates = {t.template: read_rgb(folder / t.template) for t in model.targets}
    return AppCorpus(folder, model, frames, templates)


def load_corpus(root: Path = CORPUS_DIR) -> list[AppCorpus]:
    """Every app folder under `root` that has a targets.json, by name."""
    return [load_app(p.parent) for p in sorted(root.glob("*/targets.json"))]


def inside(point: tuple[int, int], box: Box) -> bool:
    x, y, w, h = box
    return x <= point[0] < x + w and y <= point[1] < y + h


def classify(point: tuple[int, int] | None, truth: Truth) -> Outcome:
    """right: a click inside the widget; halted: no click; wrong: any other click (every click on an ambiguous target)."""
    if point is None:
        return "halted"
    if truth.box is not None and inside(point, truth.box):
        return "right"
    return "wrong"
