"""`make bench`'s fleet and console parts on a tiny run (a real PostgreSQL, 4 served fixture desktops, fleet workers;
a 200-step paused run, a served console and a `flow worker RUNS`): every queued run completes exactly once, every
latency is measured for every run, and the results file and the printed lines carry them. Nothing about speed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from openadapt_flow.bench.__main__ import main
from openadapt_flow.bench.pgserver import why_not_available

pytestmark = [
    pytest.mark.timeout(600),
    pytest.mark.skipif(why_not_available() is not None, reason=str(why_not_available())),
    pytest.mark.skipif(shutil.which("Xvnc") is None, reason="needs TigerVNC's Xvnc (make setup installs it)"),
]
OTHERS = "template,ocr,pyscreeze,orig,engine,resume,replay,batch,drift"


def test_fleet_and_console_parts_measure_every_run_and_lose_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, work = tmp_path / "results.json", tmp_path / "work"
    assert (
        main(
            [
                "--skip",
                OTHERS,
                "--fleet-runs",
                "3",
                "--fleet-workers",
                "1,2",
                "--fleet-drain",
                "6",
                "--console-iterations",
                "3",
                "--console-clicks",
                "1",
                "--out",
                str(out),
                "--work",
                str(work),
            ]
        )
        == 0
    )
    res = json.loads(out.read_text())
    assert res["notes"] == []
    fleet = res["fleet"]
    assert [t["workers"] for t in fleet["throughput"]] == [1, 2]
    for t in fleet["throughput"]:
        assert t["completed"] == t["runs"] == 3 and t["runs_per_min"] > 0
        assert (
            t["claim_to_first_action_ms"]["n"] == 3
            and 0 < t["claim_to_run_started_ms"]["p50"] < t["claim_to_first_action_ms"]["p50"]
        )
        assert t["workers_cpu_s"] > 0 and t["server_cpu_s"] > 0 and t["cpus"] >= 1
    assert fleet["throughput"][0]["efficiency"] == 1.0
    drain = fleet["drain"]
    assert (drain["completed"], drain["lost"], drain["not_once"], drain["sor_rows"]) == (6, 0, 0, 6)
    console = res["console"]
    assert console["page"]["steps_verified"] == 200 and console["page"]["iterations"] == 3
    assert console["click"]["clicks"] == 1 and console["click"]["p50_ms"] > 0
    goals = {t["name"]: t for t in res["targets"] if t["name"].startswith("issue")}
    assert goals["issue 15 drain: none lost, none run twice"]["met"] is True
    assert goals["issue 16 200-step paused run's page p99 (served)"]["measured"] == console["page"]["p99_ms"]
    assert (
        goals["issue 16 200-step paused run's page p99 (first view after a change)"]["measured"]
        == console["page"]["fold_p99_ms"]
    )
    printed = capsys.readouterr().out
    assert (
        "drain: 6 queued 3-step runs, 2 workers: 6 COMPLETED, 0 lost" in printed
        and "console: paused run's page" in printed
    )
    assert not work.exists()
