"""`python -m openadapt_flow.bench` on a tiny run: the results file's shape, and that our rows are right, not fast."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from openadapt_flow.bench.__main__ import main
from openadapt_flow.bench.frames import CASES
from tests.support.cli import flow_env
from tests.support.tty import run_on_tty

pytestmark = [
    pytest.mark.timeout(240),
    pytest.mark.skipif(shutil.which("Xvnc") is None, reason="needs TigerVNC's Xvnc (make setup installs it)"),
]


def test_one_iteration_writes_every_row_and_never_a_wrong_click(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, work = tmp_path / "results.json", tmp_path / "work"
    args = [
        "--sizes",
        "1024x768",
        "--reps",
        "1",
        "--ocr-reps",
        "1",
        "--skip",
        "orig,engine,resume,replay,batch,drift,fleet,console",
        "--out",
        str(out),
        "--work",
        str(work),
    ]
    assert main(args) == 0
    res = json.loads(out.read_text())
    assert res["schema"] == "openadapt-flow/bench@1" and res["sizes"] == ["1024x768"]
    assert res["machine"]["cpus"] >= 1 and res["machine"]["ocr_backend"] in ("library", "cli")
    assert {(r["case"], r["area"]) for r in res["template"]} == {(c, a) for c in CASES for a in ("local", "full")}
    assert {r["case"] for r in res["ocr"]} == set(CASES)
    for row in res["template"] + res["ocr"]:
        assert row["n"] == 5 and row["median_ms"] <= row["p95_ms"] and row["targets"] == 5
        assert row["wrong"] == 0, row  # ours halts on the twin Save buttons rather than guess
    healthy = [r for r in res["template"] if r["case"] == "healthy"]
    assert all(r["hits"] == 5 for r in healthy)
    twin = [r for r in res["template"] if r["case"] == "twin"]
    assert all(r["hits"] == 4 for r in twin)  # every step but the ambiguous Save
    ps = [r for r in res["compare"] if r["engine"] == "pyscreeze"]
    assert {r["variant"] for r in ps} == {"exact", "conf=0.9"}
    assert any(r["case"] == "twin" and r["wrong"] == 1 for r in ps)  # pyscreeze clicks one of the twins
    assert [t["met"] for t in res["targets"] if t["name"].startswith("engine overhead")] == [None]
    assert not work.exists()
    printed = capsys.readouterr().out
    assert "| template, window first | 1024x768 | healthy |" in printed


def test_on_a_terminal_the_bench_shows_a_spinner_with_its_lines_above(tmp_path: Path) -> None:
    """`make bench` on a TTY: a live spinner on stderr while it measures (here with every part skipped, so only the
    results file is written), and its table on stdout as without a terminal."""
    parts = "template,ocr,pyscreeze,orig,engine,resume,replay,batch,drift,fleet,console"
    code, shown, out = run_on_tty(
        [
            sys.executable,
            "-m",
            "openadapt_flow.bench",
            "--skip",
            parts,
            "--out",
            str(tmp_path / "r.json"),
            "--work",
            str(tmp_path / "w"),
        ],
        tmp_path,
        flow_env(tmp_path),
    )
    assert code == 0, shown + out
    assert "\x1b[" in shown and "make bench: measuring" in shown, shown
    assert "openadapt-flow" in out and (tmp_path / "r.json").is_file()
