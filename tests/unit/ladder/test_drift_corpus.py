"""The template rung alone (labels withheld) on the drift corpus of real apps (tests/data/drift, read-only).

galculator and mousepad (GTK 3) and sqlitebrowser (Qt 5), each recorded at 1024x768 and captured again under
drift: window moved, a 1920x1080 screen with the app at its natural size, dark theme, text scale 1.25, and a
resized window whose buttons stretch (galculator: "x" and "9" nearly tie). A resolve may halt; it may never
click outside the target's true box.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import cv2
import numpy as np
import pytest

from openadapt_flow.bundle.models import Target
from openadapt_flow.ladder.ladder import Ladder

pytestmark = pytest.mark.timeout(180)

CORPUS = Path(__file__).resolve().parents[2] / "data" / "drift"
APPS = ("galculator", "mousepad", "sqlitebrowser")


@cache
def spec(app: str) -> dict:
    return json.loads((CORPUS / app / "targets.json").read_text())


@cache
def image(app: str, name: str) -> np.ndarray:
    return cv2.cvtColor(cv2.imread(str(CORPUS / app / name)), cv2.COLOR_BGR2RGB)


def ladder(app: str) -> Ladder:
    s = spec(app)
    crops = {t["template"]: image(app, t["template"]) for t in s["targets"]}
    return Ladder(crops, tuple(s["recorded_size"]))


def resolve_all(app: str, drift: str) -> list[tuple[str, tuple[int, int] | None, list[int], str]]:
    """(target id, point or None, true box, rung) for every target the drift has a truth for."""
    s, lad, out = spec(app), ladder(app), []
    for t in s["targets"]:
        truth = t["truth"].get(drift)
        if truth is None:
            continue
        frame = image(app, s["drifts"][drift]["frames"][t["screen"]])
        res = lad.resolve(frame, Target(template=t["template"], region=tuple(t["region"])))
        out.append((t["id"], res.point, truth["box"], res.rung or ""))
    return out


def inside(point: tuple[int, int], box: list[int]) -> bool:
    x, y, w, h = box
    return x <= point[0] < x + w and y <= point[1] < y + h


@pytest.mark.parametrize("app", APPS)
def test_no_drift_of_a_real_app_gets_a_click_outside_its_target(app: str) -> None:
    wrong = [
        (drift, tid, point, box)
        for drift in spec(app)["drifts"]
        for tid, point, box, _ in resolve_all(app, drift)
        if point is not None and not inside(point, box)
    ]
    assert wrong == []


@pytest.mark.parametrize("app", APPS)
def test_a_bigger_screen_with_the_app_at_its_natural_size_is_resolved_by_the_template_rung(app: str) -> None:
    got = resolve_all(app, "natural")
    assert got and all(p is not None and inside(p, box) and rung == "template" for _, p, box, rung in got), got
