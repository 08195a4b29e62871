"""What an effect verifier can conclude (spec §8), and equality as a reader of a system of record means it.

CONFIRMED (the effect holds), ABSENT (read at least `timeout_s` after dispatch and not there), CONFLICTING (a
change, but not the declared one: for a whole-change effect, a collateral write), UNAVAILABLE (could not read, or
no baseline to compare with), INDETERMINATE (the baseline already satisfied the expectation, so no reading can
tell). Only CONFIRMED lets a step be verified.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final

from openadapt_flow.records.models import ChangeDoc, EffectVerdictName

CONFIRMED: Final = "CONFIRMED"
ABSENT: Final = "ABSENT"
CONFLICTING: Final = "CONFLICTING"
UNAVAILABLE: Final = "UNAVAILABLE"
INDETERMINATE: Final = "INDETERMINATE"

NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


@dataclass(frozen=True)
class Judgement:
    """One reading judged against the baseline: the verdict, and for a whole-change effect why and what changed."""

    verdict: EffectVerdictName
    detail: str | None = None
    changes: list[ChangeDoc] | None = None


def number(value: Any) -> Decimal | None:
    """A finite number read from an int, a float or a plain decimal string; None for anything else.

    Booleans, `nan`, `inf`, `1_000` and hex are not numbers here, so they never take part in arithmetic."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        return Decimal(repr(value)) if math.isfinite(value) else None  # repr: 0.1 stays 0.1, as it was written
    if isinstance(value, str) and NUMBER.fullmatch(value.strip()):
        return Decimal(value.strip())
    return None


def same(a: Any, b: Any) -> bool:
    """Equality as a reader of the system of record means it: numbers as numbers ('11.50' = 11.5), a boolean
    only equal to a boolean, anything else by value (a non-finite float as its text, so nan = nan)."""
    na, nb = number(a), number(b)
    if na is not None or nb is not None:
        return na is not None and nb is not None and na == nb
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    a = str(a) if isinstance(a, float) else a
    b = str(b) if isinstance(b, float) else b
    return bool(a == b)
