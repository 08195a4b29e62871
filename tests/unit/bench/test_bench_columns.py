"""The bench's matcher-only and as-called columns: both measured for every compared engine row, on the same cases
and targets, and printed side by side. Structure only: no assertion here is about how fast anything is."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from openadapt_flow.bench import report, resolve
from openadapt_flow.bench.frames import TARGETS, Case

pytestmark = pytest.mark.timeout(120)

BOTH = re.compile(r"^(\d+(\.\d+)?) / (\d+(\.\d+)?) ms \(×\d+(\.\d+)?\), \d+/\d+")


def _noise_case(name: str) -> Case:
    """One textured frame serves every screen; each step's truth is its recorded region (its template's place)."""
    frame = np.random.default_rng(7).integers(0, 256, (768, 1024, 3), dtype=np.uint8)
    truth = {}
    for step in resolve.bundle_steps():
        assert step.target is not None and step.target.region is not None
        truth[step.id] = tuple(step.target.region)
    return Case(name, (1024, 768), {screen: frame for screen, _ in TARGETS.values()}, truth)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[dict], list[dict]]:
    cases = [_noise_case("healthy"), _noise_case("twin")]
    steps = resolve.bundle_steps()
    templates = resolve.recorded_templates(cases[0], steps)
    folder: Path = tmp_path_factory.mktemp("needles")
    return resolve.bench_template(cases, steps, templates, 2, folder)


def test_every_pyscreeze_row_has_both_figures_over_the_same_targets(measured: tuple[list[dict], list[dict]]) -> None:
    ours, theirs = measured
    keys = {(v, a, c) for v in resolve.PYSCREEZE_VARIANTS for a in resolve.AREAS for c in ("healthy", "twin")}
    assert {(r["variant"], r["area"], r["case"]) for r in theirs} == keys
    assert {(r["area"], r["case"]) for r in ours} == {(a, c) for a in resolve.AREAS for c in ("healthy", "twin")}
    for row in theirs:
        matcher = row["matcher_only"]
        assert row["n"] == matcher["n"] == 2 * len(TARGETS), row  # every rep timed both ways
        assert row["targets"] == matcher["targets"] == len(TARGETS)
        assert {"median_ms", "p95_ms"} <= row.keys() and {"median_ms", "p95_ms"} <= matcher.keys()
        # the same matcher on the same pixels gives the same answer either way it is handed them
        assert (row["hits"], row["wrong"]) == (matcher["hits"], matcher["wrong"]) == (len(TARGETS), 0), row
    assert all(r["hits"] == len(TARGETS) and r["wrong"] == 0 for r in ours)


def test_the_table_prints_matcher_only_beside_as_called_for_each_engine(
    measured: tuple[list[dict], list[dict]],
) -> None:
    ours, theirs = measured
    orig = [{**r, "engine": "openadapt-flow 2.4.0", "variant": "template"} for r in theirs if r["variant"] == "exact"]
    orig_ocr = {
        "engine": "openadapt-flow 2.4.0",
        "variant": "ocr",
        "size": "1024x768",
        "case": "healthy",
        "area": "local",
        "n": 5,
        "median_ms": 400.0,
        "p95_ms": 500.0,
        "hits": 5,
        "wrong": 0,
        "targets": 5,
    }
    ocr = [
        {
            "size": "1024x768",
            "case": "healthy",
            "n": 5,
            "median_ms": 20.0,
            "p95_ms": 30.0,
            "hits": 5,
            "wrong": 0,
            "targets": 5,
        }
    ]
    results = {
        "sizes": ["1024x768"],
        "template": ours,
        "ocr": ocr,
        "compare": theirs + orig + [orig_ocr],
        "orig_version": "openadapt-flow 2.4.0",
    }
    lines = report.table(results).splitlines()
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    assert head[5:] == [
        f"{e} (matcher only / as called)" for e in ("pyscreeze exact", "pyscreeze conf=0.9", "openadapt-flow 2.4.0")
    ]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]
    template_rows = [r for r in rows if r[0].startswith("template")]
    assert len(template_rows) == len(ours) == 4
    for r in template_rows:
        assert all(BOTH.match(cell) for cell in r[5:8]), r
    ocr_row = next(r for r in rows if r[0].startswith("OCR"))
    assert ocr_row[7].startswith("400 ms (×20.0)")  # timed as called only: one figure, not a made-up pair
