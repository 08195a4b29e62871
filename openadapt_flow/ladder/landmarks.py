"""Landmarks: stable text at a recorded offset from a target's click point, and when they tell candidates apart.

A landmark's *error* at a candidate point is how far the nearest reading of its text lies from where the
recording had it relative to that point, in tolerances (the word's half-width is slack along the line:
a header centred over a column moves when the column's width changes). Error at most 1: the landmark *fits*.
A landmark read nowhere has an infinite error. A `column` landmark (a table column's header) is held only along
the row: read anywhere above the point, its error is how far it lies beside where the recording had it — a table
one row taller moves the cell, not its header.

The one rule (docs/decisions.md, "Ties"): landmarks decide between candidates only by a clear margin — the
winner fits every landmark it has, and every rival has a landmark off by at least LANDMARK_MARGIN tolerances more
than the winner's. A rival one row lower than a winner whose own landmark is already most of a tolerance off (a
table grown by a row) is not told apart: that is a tie.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from openadapt_flow.bundle.models import Landmark
from openadapt_flow.ladder.types import Box, Point
from openadapt_flow.vision.ocr import TextMatch

# How much worse (in tolerances) a rival's landmark must sit than the winner's for the landmark to tell them apart.
LANDMARK_MARGIN = 1.0
LANDMARK_SLACK = 24  # px of tolerance at any distance (recorded-frame pixels), plus a tenth of the distance


def tolerance(lm: Landmark, base: float, slack: int = LANDMARK_SLACK) -> float:
    """How far (live px) a landmark may sit from its recorded offset and still fit: farther text drifts more (a
    column's header only as far as it lies beside the cell)."""
    return (slack + 0.1 * (abs(lm.dx) if lm.column else math.hypot(lm.dx, lm.dy))) * base


def expected(point: Point, lm: Landmark, base: float) -> tuple[float, float]:
    """Where the landmark's centre should be for a click at `point`."""
    return (point[0] + lm.dx * base, point[1] + lm.dy * base)


def search_box(point: Point, lm: Landmark, base: float, slack: int = LANDMARK_SLACK) -> Box:
    """The area to read around the landmark's expected place: far enough to tell fit from clearly off."""
    ex, ey = expected(point, lm, base)
    reach = tolerance(lm, base, slack) * (1 + LANDMARK_MARGIN)
    bw = (80 + 20 * len(lm.text)) * base + 2 * reach
    if lm.column:  # the header anywhere above the cell, however many rows the table grew by
        return (round(ex - bw / 2), 0, round(bw), max(1, point[1]))
    bh = 40 * base + 2 * reach
    return (round(ex - bw / 2), round(ey - bh / 2), round(bw), round(bh))


def error(point: Point, lm: Landmark, readings: Sequence[TextMatch], base: float, slack: int = LANDMARK_SLACK) -> float:
    """The landmark's error at `point` in tolerances (inf when none of `readings` of its text is anywhere)."""
    ex, ey = expected(point, lm, base)
    tol = tolerance(lm, base, slack)
    best = math.inf
    for m in readings:
        mx, my = m.centre
        along = max(0.0, abs(mx - ex) - m.box[2] / 2)
        if lm.column:
            if my >= point[1]:
                continue  # a header is above its cell
            off = along
        else:
            off = max(along, abs(my - ey))
        best = min(best, off / tol)
    return best


def fits(err: float) -> bool:
    return err <= 1.0


def contradicted(errors: Sequence[float]) -> bool:
    """Do a lone candidate's landmarks say it is a look-alike: none fits, and one is read somewhere (a landmark
    read nowhere, a small header a read missed, is no evidence either way)?"""
    return bool(errors) and not any(fits(e) for e in errors) and not all(e == math.inf for e in errors)


@dataclass(frozen=True)
class Verdict:
    """Which candidate the landmarks decide for (None: they do not), and why, in one line."""

    winner: int | None
    detail: str


def decide(errors: Sequence[Sequence[float]], names: Sequence[str]) -> Verdict:
    """`errors[i][j]`: landmark j's error at candidate i. The one candidate every landmark fits, when every other
    candidate has a landmark off by LANDMARK_MARGIN more than the winner's; else no winner."""
    fitting = [i for i, errs in enumerate(errors) if errs and all(fits(e) for e in errs)]
    if not fitting:
        return Verdict(None, "no candidate has every landmark (" + ", ".join(map(repr, names)) + ") where recorded")
    if len(fitting) > 1:
        return Verdict(None, f"landmarks fit {len(fitting)} candidates alike")
    win = fitting[0]
    gaps = [max(e - w for e, w in zip(errs, errors[win])) for i, errs in enumerate(errors) if i != win]
    if min(gaps) < LANDMARK_MARGIN:
        return Verdict(
            None,
            f"landmarks fit one candidate, but another sits only {min(gaps):.1f} tolerances worse "
            f"(a clear margin is {LANDMARK_MARGIN:g})",
        )
    return Verdict(win, "landmark " + ", ".join(map(repr, names)) + " decides by a clear margin")
