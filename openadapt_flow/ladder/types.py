"""What the ladder returns: a point (or none) and the evidence of every rung it tried."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Box = tuple[int, int, int, int]  # x, y, w, h in live-frame pixels
Point = tuple[int, int]

Verdict = Literal["hit", "miss", "ambiguous", "error", "skipped"]

# Two candidates whose scores (the template rung's rank, the recorded crop's correlation at OCR readings, the model
# check's correlation) lie within TIE_MARGIN of each other are a tie: `ambiguous`, never a pick (docs/decisions.md,
# "Ties"). Landmarks separate by their own clear margin, in tolerances (`ladder.landmarks.LANDMARK_MARGIN`).
TIE_MARGIN = 0.05


@dataclass
class Seen:
    """One candidate a rung weighed: where, how well it matched, and where a click on it would land."""

    box: Box
    score: float
    point: Point


@dataclass
class Evidence:
    """What one rung saw. Journaled and shown in the report for every rung tried."""

    rung: str  # template | template-edges | ocr | model
    verdict: Verdict
    elapsed_ms: float
    score: float | None = None
    rank: float | None = None  # template: shape and content together, the score the margin applies to
    runner_up: float | None = None  # template: the runner-up's rank; ocr: its similarity
    point: Point | None = None
    box: Box | None = None  # best candidate, even on a miss
    search: Box | None = None  # where it looked (window or whole frame)
    scale: float | None = None
    ocr_conf: float | None = None
    detail: str = ""
    candidates: list[Seen] | None = None  # when it weighed several (look-alikes): each, for the report to mark

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None and v != ""}


@dataclass
class Resolution:
    """A unique, confident point, or the reason there is none (category resolution|ambiguous)."""

    point: Point | None
    rung: str | None
    evidence: list[Evidence] = field(default_factory=list)
    category: Literal["resolution", "ambiguous"] | None = None
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.point is not None

    @property
    def winning(self) -> Evidence | None:
        for e in self.evidence:
            if e.verdict == "hit":
                return e
        return None
