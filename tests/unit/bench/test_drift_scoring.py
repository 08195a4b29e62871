"""The drift bench's scoring: right / wrong / halted per target, and the verdicts drawn from the rows."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from openadapt_flow.bench.__main__ import main
from openadapt_flow.bench.drift import DriftCell, bench_ours
from openadapt_flow.bench.drift_corpus import CORPUS_DIR, Truth, classify, load_corpus
from openadapt_flow.bench.drift_report import table, verdicts

pytestmark = pytest.mark.timeout(60)

BOX = Truth(box=(10, 20, 30, 40), unambiguous=True, source="derived")
TWIN = Truth(box=None, unambiguous=False, source="annotated", note="two identical cells")


@pytest.mark.parametrize(
    ("point", "truth", "outcome"),
    [
        ((10, 20), BOX, "right"),  # top-left corner is inside
        ((39, 59), BOX, "right"),  # last pixel inside
        ((40, 20), BOX, "wrong"),  # one past the right edge
        ((25, 60), BOX, "wrong"),  # one past the bottom
        ((500, 500), BOX, "wrong"),
        (None, BOX, "halted"),
        ((15, 25), TWIN, "wrong"),  # any click on an ambiguous target is a guess
        (None, TWIN, "halted"),
    ],
)
def test_classify(point: tuple[int, int] | None, truth: Truth, outcome: str) -> None:
    assert classify(point, truth) == outcome


def test_cell_counts_unambiguous_targets_apart() -> None:
    cell = DriftCell()
    cell.add("right", True, "template")
    cell.add("halted", True, None)
    cell.add("halted", False, None)  # the right answer for an ambiguous target
    cell.add("wrong", True, "ocr")
    cell.ms += [1.0, 2.0, 3.0]
    row = cell.to_json()
    assert (row["right"], row["wrong"], row["halted"]) == (1, 1, 2)
    assert (row["unambiguous"], row["unambiguous_right"]) == (3, 1)
    assert row["rungs"] == {"ocr": 1, "template": 1} and row["median_ms"] == 2.0


def _row(
    engine: str,
    drift: str,
    ms: float,
    right: int,
    wrong: int = 0,
    halted: int = 0,
    app: str = "calc",
    unambiguous: int | None = None,
) -> dict[str, Any]:
    n = right + wrong + halted
    return {
        "app": app,
        "drift": drift,
        "engine": engine,
        "right": right,
        "wrong": wrong,
        "halted": halted,
        "unambiguous": n if unambiguous is None else unambiguous,
        "unambiguous_right": right,
        "n": n,
        "median_ms": ms,
        "p95_ms": ms,
    }


def test_verdicts_met_and_missed() -> None:
    good = {
        "rows": [
            _row("template", "natural", 4.0, 4),
            _row("ladder", "natural", 4.0, 4),
            _row("orig", "natural", 20.0, 4),
            _row("template", "dark", 30.0, 4),
            _row("ladder", "dark", 30.0, 4),
            _row("orig", "dark", 90.0, 0, halted=4),
        ]
    }
    assert [v["met"] for v in verdicts(good)] == [True] * 6
    bad = {
        "rows": [
            _row("template", "natural", 150.0, 0, halted=4),
            _row("ladder", "natural", 300.0, 3, halted=1),
            _row("orig", "natural", 20.0, 4),
            _row("template", "dark", 30.0, 3, wrong=1),
            _row("ladder", "dark", 30.0, 3, wrong=1),
            _row("orig", "dark", 90.0, 4),
        ]
    }
    got = {v["name"]: v for v in verdicts(bad)}
    assert [v["met"] for v in got.values()] == [False] * 6
    assert got["0 wrong clicks (ladder)"]["shown"] == "1 wrong (calc dark 1)"
    assert "6/8" in got["every unambiguous target resolved (ladder)"]["shown"]
    assert "slower: calc natural 300 vs 20.0 ms" in next(v["shown"] for n, v in got.items() if n.startswith("faster"))


def test_verdicts_not_measured_without_rows() -> None:
    assert all(v["met"] is None for v in verdicts({"rows": []}))


def test_ours_on_the_corpus_scores_every_target_once_per_drift() -> None:
    app = next(a for a in load_corpus() if a.model.app == "galculator")
    rows = bench_ours(app, reps=1, ocr=None)
    assert {r["drift"] for r in rows} == set(app.model.drifts) and {r["engine"] for r in rows} == {"template"}
    for r in rows:
        assert r["right"] + r["wrong"] + r["halted"] == len(app.model.targets) == r["n"]
    healthy = next(r for r in rows if r["drift"] == "healthy")
    assert healthy["right"] == len(app.model.targets)  # templates cut from this very frame
    printed = table({"rows": rows})
    assert "| galculator | healthy | 4 (4) | 4/0/0, " in printed


@pytest.mark.timeout(180)
def test_drift_part_alone_writes_rows_and_verdicts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "corpus"
    shutil.copytree(CORPUS_DIR / "galculator", corpus / "galculator")
    out = tmp_path / "results.json"
    args = [
        "--reps",
        "1",
        "--skip",
        "template,ocr,pyscreeze,orig,engine,resume,replay,batch,fleet,console",
        "--drift-corpus",
        str(corpus),
        "--out",
        str(out),
        "--work",
        str(tmp_path / "work"),
    ]
    assert main(args) == 0
    drift = json.loads(out.read_text())["drift"]
    assert drift["orig_version"] is None and drift["apps"][0].startswith("galculator (galculator ")
    engines = {r["engine"] for r in drift["rows"]}
    assert engines == {"template", "ladder", "pyscreeze conf=0.9", "pyscreeze exact"}
    assert len(drift["rows"]) == len(engines) * 6
    assert drift["verdicts"][-1]["met"] is None  # 2.4.0 not run: its comparison is not measured
    printed = capsys.readouterr().out
    assert "| galculator | twin | 4 (4) |" in printed and "issue 12 0 wrong clicks (ladder):" in printed
