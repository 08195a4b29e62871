"""Timing summaries: medians and percentiles of millisecond samples, and hit counts."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any


def p95(samples: list[float]) -> float:
    """Nearest-rank 95th percentile."""
    return percentile(samples, 95)


def percentile(samples: list[float], pct: float) -> float:
    """Nearest-rank percentile (`pct` in 0..100) of a non-empty list."""
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(pct / 100 * len(ordered)) - 1)]


@dataclass
class Cell:
    """Samples of one measured thing: times in ms and, per distinct target, whether it was right."""

    ms: list[float] = field(default_factory=list)
    hits: int = 0
    wrong: int = 0  # a confident answer at the wrong place: worse than a miss
    targets: int = 0

    def score(self, point_ok: bool | None) -> None:
        """Count one target: True = right place, False = wrong place, None = no answer."""
        self.targets += 1
        self.hits += point_ok is True
        self.wrong += point_ok is False

    @property
    def median(self) -> float:
        return statistics.median(self.ms) if self.ms else math.nan

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"n": len(self.ms)}
        if self.ms:
            out |= {"median_ms": round(self.median, 3), "p95_ms": round(p95(self.ms), 3)}
        if self.targets:
            out |= {
                "hits": self.hits,
                "wrong": self.wrong,
                "targets": self.targets,
                "hit_rate": round(self.hits / self.targets, 3),
            }
        return out
