"""`--baseline`: the baseline checkout's template medians printed beside ours, row by row (structure only: nothing
here is about how fast anything is)."""

from __future__ import annotations

from pathlib import Path

import pytest

from openadapt_flow.bench import baseline


def _row(case: str, area: str, ms: float, hits: int = 5) -> dict[str, object]:
    return {"size": "1920x1080", "case": case, "area": area, "median_ms": ms, "hits": hits, "targets": 5}


def test_rows_are_paired_by_size_area_and_case_with_the_ratio() -> None:
    ours = [_row("dark", "local", 5.0), _row("healthy", "local", 0.5), _row("healthy", "full", 2.0)]
    base = {
        "checkout": "/old",
        "engine": "numpy",
        "template": [_row("healthy", "local", 1.5), _row("dark", "local", 10.0, 4)],
    }
    out = baseline.lines(ours, base, "opencv 5.1.0")
    assert out[0].startswith("template rung medians, this checkout (opencv 5.1.0) beside /old (numpy)")
    rows = [line for line in out if line.startswith("| 1920x1080")]
    assert rows == [
        "| 1920x1080 | full | healthy | 2.00 (5/5) | – | – |",
        "| 1920x1080 | local | healthy | 0.50 (5/5) | 1.50 (5/5) | 3.0x |",
        "| 1920x1080 | local | dark | 5.00 (5/5) | 10.00 (4/5) | 2.0x |",
    ]


def test_a_baseline_without_a_venv_is_named_with_how_to_make_one(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match=r"no venv at .*\.venv/bin/python"):
        baseline.baseline_template(tmp_path, ("template",), [(1024, 768)], 1, tmp_path)
