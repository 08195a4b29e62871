"""Pydantic models of `flow.yaml` (schema openadapt-flow/bundle@1). Strict: unknown keys are errors."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import ConfigDict, Field, ValidationInfo, field_validator, model_validator

# the effect models and the models' base live beside this module; every name is still reached here
from openadapt_flow.bundle.effect import EFFECT_FIELDS, AnyChange, Effect, EffectExpect, LineChange, RowChange  # noqa: F401
from openadapt_flow.bundle.strict import Strict  # noqa: F401

BUNDLE_SCHEMA = "openadapt-flow/bundle@1"
STEP_ID = re.compile(r"^[a-z0-9-]+$")

GUI_ACTIONS = ("click", "double_click", "right_click", "type", "key", "hotkey", "scroll", "drag", "wait")
DURABLE_KINDS = ("ask_user", "wait_signal", "sleep", "wait_until", "flow", "tool")


class Screen(Strict):
    width: int = Field(gt=0, le=16384)
    height: int = Field(gt=0, le=16384)


class Param(Strict):
    type: Literal["string", "number", "integer", "boolean"] = "string"
    required: bool = False
    secret: bool = False
    default: Any = None
    example: Any = None
    description: str | None = None


class Landmark(Strict):
    """Nearby stable text; it sits at (click point + (dx, dy)) in the recorded frame. `column`: it is the header of the
    target's column, above it by however many rows lie between now; only its offset along the row (dx) is held."""

    text: str = Field(min_length=1)
    dx: int
    dy: int
    column: bool = False

    @model_validator(mode="after")
    def _header_above(self) -> "Landmark":
        if self.column and self.dy >= 0:
            raise ValueError("a column landmark is its column's header, above the target: dy must be negative")
        return self


class Target(Strict):
    template: str | None = None
    region: tuple[int, int, int, int] | None = None
    point: tuple[int, int] | None = None
    text: str | None = None
    # Offset from the centre of `text` to the click point in the recorded frame,
    # for a label that sits outside the crop (a field found by its label).
    text_offset: tuple[int, int] | None = None
    landmarks: list[Landmark] = Field(default_factory=list)

    @model_validator(mode="after")
    def _check(self) -> "Target":
        if self.template is None and self.text is None and not self.landmarks:
            raise ValueError("a target needs at least one of template, text or landmarks")
        if self.template is not None and self.region is None:
            raise ValueError("a template target needs region: [x, y, w, h]")
        if self.region is not None and (self.region[2] <= 0 or self.region[3] <= 0):
            raise ValueError("region width and height must be positive")
        if self.point is not None and self.region is not None:
            px, py = self.point
            if not (0 <= px < self.region[2] and 0 <= py < self.region[3]):
                raise ValueError("point must lie inside the region's crop")
        return self

    def click_offset(self) -> tuple[int, int]:
        """Click point inside the crop (default: centre)."""
        if self.point is not None:
            return self.point
        assert self.region is not None
        return (self.region[2] // 2, self.region[3] // 2)

    def recorded_point(self) -> tuple[int, int] | None:
        """Where the recording clicked, in recorded-frame pixels."""
        if self.region is None:
            return None
        ox, oy = self.click_offset()
        return (self.region[0] + ox, self.region[1] + oy)


class Postcondition(Strict):
    """A screen fact that must hold after a step (or at the start: `start:`): exactly one of the five kinds."""

    text_present: str | None = None
    text_absent: str | None = None
    template_present: str | None = None
    region_changed: tuple[int, int, int, int] | None = None
    # the area shows nothing but its own background (a text cursor and the area's border aside): an empty field or
    # page, as recorded
    blank: tuple[int, int, int, int] | None = None
    region: tuple[int, int, int, int] | None = None  # where to look first (text_*, template_present)
    # `target`: region / region_changed are recorded-frame pixels that move with the step's target: at replay
    # they are placed relative to where the target was found, not where it was recorded. None: absolute.
    relative_to: Literal["target"] | None = None
    # region_changed only: the share of its pixels that must change (default: any visible change, 0.2%)
    changed_min: float | None = Field(default=None, gt=0, le=1)

    @model_validator(mode="after")
    def _one_kind(self) -> "Postcondition":
        kinds = [k for k in POSTCONDITION_KINDS if getattr(self, k) is not None]
        if len(kinds) != 1:
            raise ValueError(f"a postcondition needs exactly one of {', '.join(POSTCONDITION_KINDS)}")
        if self.region is not None and (self.region_changed is not None or self.blank is not None):
            raise ValueError(f"region goes with text_present, text_absent or template_present, not {kinds[0]}")
        if self.relative_to is not None and self.box is None:
            raise ValueError("relative_to needs a region (or region_changed, blank) to place")
        if self.changed_min is not None and self.region_changed is None:
            raise ValueError("changed_min goes with region_changed")
        return self

    @property
    def box(self) -> tuple[int, int, int, int] | None:
        """The fact's recorded area: its region, or the region_changed or blank box."""
        return (
            self.region
            if self.region is not None
            else self.region_changed
            if self.region_changed is not None
            else self.blank
        )

    @property
    def kind(self) -> str:
        return next(k for k in POSTCONDITION_KINDS if getattr(self, k) is not None)

    @property
    def text(self) -> str | None:
        """The text of a text_present or text_absent fact (uninterpolated)."""
        return self.text_present if self.text_present is not None else self.text_absent


POSTCONDITION_KINDS = ("text_present", "text_absent", "template_present", "region_changed", "blank")


class Identity(Strict):
    """Text that must be read by OCR inside `near` = [dx, dy, w, h] relative to the click point."""

    text: str = Field(min_length=1)
    near: tuple[int, int, int, int]


class Step(Strict):
    id: str
    intent: str | None = None
    action: str
    target: Target | None = None
    text: str | None = None
    append: bool = False
    keys: list[str] | None = None
    clicks: int | None = None
    to: Target | None = None
    seconds: float | None = None
    expect: list[Postcondition] = Field(default_factory=list)
    timeout_s: float = Field(default=10.0, gt=0, le=3600)
    identity: Identity | None = None
    consequential: bool = False
    effect: Effect | None = None
    approval: Literal["before"] | None = None
    skippable: bool = False
    # durable step kinds (run by the durable runtime)
    question: str | None = None
    choices: list[str] | None = None
    type: str | None = None
    signal: str | None = None
    at: str | None = None
    bundle: str | None = None
    params: dict[str, Any] | None = None
    call: str | None = None
    args: dict[str, Any] | None = None

    @field_validator("id")
    @classmethod
    def _id(cls, v: str) -> str:
        if not STEP_ID.match(v):
            raise ValueError(f"step id {v!r} must match [a-z0-9-]+")
        return v

    @field_validator("action")
    @classmethod
    def _action(cls, v: str) -> str:
        if v not in GUI_ACTIONS + DURABLE_KINDS:
            raise ValueError(f"unknown action {v!r} (one of {', '.join(GUI_ACTIONS + DURABLE_KINDS)})")
        return v

    @model_validator(mode="after")
    def _fields_for_action(self) -> "Step":
        a = self.action
        needs_target = a in ("click", "double_click", "right_click", "drag")
        if needs_target and self.target is None:
            raise ValueError(f"action {a} needs a target")
        if a == "type" and self.text is None:
            raise ValueError("action type needs text")
        if a in ("key", "hotkey") and not self.keys:
            raise ValueError(f"action {a} needs keys: [...]")
        if a == "scroll" and self.clicks is None:
            raise ValueError("action scroll needs clicks")
        if a == "drag" and self.to is None:
            raise ValueError("action drag needs to: (a target)")
        if a == "wait" and self.seconds is None and not self.expect:
            raise ValueError("action wait needs seconds or expect")
        if a == "ask_user" and not self.question:
            raise ValueError("action ask_user needs question")
        if a == "wait_signal" and not self.signal:
            raise ValueError("action wait_signal needs signal")
        if a == "sleep" and self.seconds is None:
            raise ValueError("action sleep needs seconds")
        if a == "wait_until" and not self.at:
            raise ValueError("action wait_until needs at")
        if a == "flow" and not self.bundle:
            raise ValueError("action flow needs bundle")
        if a == "tool" and not self.call:
            raise ValueError("action tool needs call: module:function")
        return self

    @property
    def is_consequential(self) -> bool:
        return self.consequential or self.effect is not None

    @property
    def is_durable_kind(self) -> bool:
        return self.action in DURABLE_KINDS


class StartFact(Postcondition):
    """A postcondition of the screen a bundle starts from, judged on one frame before any input."""

    @model_validator(mode="after")
    def _one_frame(self) -> "StartFact":
        if self.region_changed is not None:
            raise ValueError("region_changed needs a screen before it; a start fact is judged on one frame")
        if self.relative_to is not None:
            raise ValueError("relative_to: a start fact has no target to be placed by")
        return self


class Reset(Strict):
    """How to bring the app back to the bundle's start state (spec §22): restart it (`command`, then wait until
    `wait_for` holds, within `timeout_s`) or a "home" sequence of GUI steps, each verified like any step."""

    command: list[str] | None = Field(default=None, min_length=1)
    wait_for: StartFact | None = None
    timeout_s: float = Field(default=60.0, gt=0, le=3600)
    steps: list[Step] | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _one_form(self) -> "Reset":
        if (self.command is None) == (self.steps is None):
            raise ValueError("a reset needs exactly one of command (with wait_for) or steps")
        if self.command is not None and self.wait_for is None:
            raise ValueError("a reset command needs wait_for: the fact that shows the app is back")
        if self.steps is not None and self.wait_for is not None:
            raise ValueError("wait_for goes with command; reset steps are verified by their own expect")
        for s in self.steps or []:
            if s.is_durable_kind or s.approval is not None:
                raise ValueError(
                    f"reset step {s.id!r}: a reset runs unattended between items: GUI actions only "
                    f"({', '.join(GUI_ACTIONS)}), no approval"
                )
        return self


class Bundle(Strict):
    schema_: Literal["openadapt-flow/bundle@1"] = Field(alias="schema")
    name: str = Field(min_length=1)
    description: str | None = None
    screen: Screen
    params: dict[str, Param] = Field(default_factory=dict)
    # the screen the steps start from (spec §22): checked on one frame before a run's first input
    start: list[StartFact] = Field(default_factory=list)
    reset: Reset | None = None
    reset_before_each: bool = False  # a batch resets before every item, not only after a halted one
    steps: list[Step] = Field(min_length=1)

    @field_validator("reset_before_each")
    @classmethod
    def _reset_needs(cls, v: bool, info: ValidationInfo) -> bool:
        if v and info.data.get("reset") is None:
            raise ValueError("needs a reset: (command or steps) to run before each item")
        return v

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @property
    def needs_durable(self) -> bool:
        return any(s.is_durable_kind or s.approval == "before" for s in self.steps)
