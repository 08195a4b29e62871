"""report.json, REPORT.md and report.html of real runs (the demo bundle on its recorded fixture, in process): the
summary's numbers are the journal's, every step's frame links to a saved frame, a halt lists every look-alike with
its score and the exact commands to run next — and the page needs no network and no script."""

from __future__ import annotations

import html
import json
import re
import shlex
from pathlib import Path
from typing import Any

import cv2
import pytest
from typer.testing import CliRunner

from openadapt_flow.cli.app import app
from openadapt_flow.report.model import build_report
from openadapt_flow.report.page import render_html
from openadapt_flow.store import RunDir
from openadapt_flow.vision.annotate import BEST, SEARCH
from tests.support.demo_invoices import BUNDLE
from tests.unit.report.report_runs import BUTTON, TWIN_AT, ambiguous_run, healthy_run, run_env

pytestmark = pytest.mark.timeout(120)


def journal(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "journal.jsonl").read_text().splitlines()]


def counts_from_journal(recs: list[dict[str, Any]]) -> dict[str, int]:
    verified = {r["step"]: r["data"].get("verification") for r in recs if r["type"] == "step_verified"}
    return {
        "verified": sum(1 for v in verified.values() if v != "weak"),
        "weak": sum(1 for v in verified.values() if v == "weak"),
        "halted": len({r["step"] for r in recs if r["type"] == "halted" and r["step"] and r["step"] not in verified}),
    }


@pytest.fixture
def env(tmp_path, monkeypatch):
    run_env(tmp_path, monkeypatch)
    return tmp_path


def test_a_healthy_runs_summary_is_its_journals_counts_and_its_page_stands_alone(env):
    run_dir = Path(healthy_run(env).run_dir)
    rep, recs = json.loads((run_dir / "report.json").read_text()), journal(run_dir)
    s = rep["summary"]
    assert (
        {k: s[k] for k in ("verified", "weak", "halted")}
        == counts_from_journal(recs)
        == {"verified": 5, "weak": 0, "halted": 0}
    )
    assert (s["state"], s["exit_code"], s["steps_total"], s["not_run"]) == ("COMPLETED", 0, 5, 0)
    elapsed = {r["step"]: round(r["data"]["elapsed_ms"], 1) for r in recs if r["type"] == "step_verified"}
    assert {t["id"]: t["ms"] for t in s["step_ms"]} == elapsed
    assert 0 < s["duration_s"] < 60 and rep["next_commands"] == []
    page = (run_dir / "report.html").read_text()
    for key, value in (("outcome", "COMPLETED"), ("verified", "5"), ("weak", "0"), ("halted", "0"), ("not run", "0")):
        assert f'data-summary="{key}">{value}<' in page
    assert page.index('id="summary"') < page.index('class="steps"')  # the summary comes first
    assert page.count('<rect class="bar"') == 5
    links = re.findall(r'<a class="frame [a-z]+" href="([^"]+)"', page)
    assert len(links) == 10 and all((run_dir / rel).is_file() for rel in links)  # before and after per step, full size
    assert (
        page.count("<details>") == 5
        and page.count('class="before-click"') == 5
        and page.count('class="before-box"') == 5
    )
    assert "<script" not in page and not re.search(r"(src|href)=\"(https?:)?//", page)  # offline, no script


def test_the_page_shows_only_frames_the_run_saved(env):
    """Secrets masking holds: the runtime masks every frame it saves, and the report draws from nothing else."""
    run = RunDir(Path(healthy_run(env).run_dir))
    read: list[str] = []

    class Watched(RunDir):
        def get_artifact(self, rel: str) -> bytes | None:
            read.append(rel)
            return super().get_artifact(rel)

    render_html(Watched(run.path), build_report(run))
    assert read and all(rel.startswith("frames/") and rel[len("frames/") :] in run.frame_names() for rel in read)


def test_an_ambiguous_durable_halt_lists_both_look_alikes_and_the_commands_to_teach_or_decide(env):
    run_dir = Path(ambiguous_run(env).run_dir)
    rep, recs = json.loads((run_dir / "report.json").read_text()), journal(run_dir)
    assert {k: rep["summary"][k] for k in ("verified", "weak", "halted")} == counts_from_journal(recs)
    assert (rep["summary"]["halted"], rep["summary"]["not_run"], rep["summary"]["exit_code"]) == (1, 4, 3)
    halt = rep["halt"]
    halted = next(r for r in recs if r["type"] == "halted")
    ambiguous = next(e for e in halted["data"]["evidence"] if e["verdict"] == "ambiguous")
    assert [c["box"] for c in ambiguous["candidates"]] == [
        list(BUTTON),
        [*TWIN_AT, *BUTTON[2:]],
    ]  # recorded by the runtime
    assert [(c["label"], c["box"], c["point"]) for c in halt["candidates"]] == [
        ("A", list(BUTTON), [130, 112]),
        ("B", [*TWIN_AT, *BUTTON[2:]], [130, 172]),
    ]
    assert all(c["scores"]["template"] == 1.0 and "ocr" in c["scores"] for c in halt["candidates"])
    assert halt["show_frame"] == "frames/halt-open-form-raw.png"  # unannotated: no candidate drawn as "the best"
    run = shlex.quote(str(run_dir))
    assert rep["next_commands"] == [
        f'flow approve {run} --decision teach --point 130,112 --operator "$USER"',
        f'flow approve {run} --decision teach --point 130,172 --operator "$USER"',
        f'flow approve {run} --decision continue --operator "$USER"',
        f'flow approve {run} --decision reject --operator "$USER"',
        f'flow approve {run} --decision escalate --operator "$USER"',
        f"flow resume {run} --require-approval",
    ]
    page = (run_dir / "report.html").read_text()
    assert page.count("<tr class='candidate'>") == 2 and page.count('class="halt-label"') == 2
    assert page.count('class="halt-dashed"') == 2 and "halt-box" not in page  # both drawn alike, none as the answer
    assert "None of them is the answer" in page and all(html.escape(c) in page for c in rep["next_commands"])
    md = (run_dir / "REPORT.md").read_text()
    assert "- A: template 1.00 · ocr 1.00 at box [40, 90, 180, 44], click point 130,112" in md
    assert rep["next_commands"][-1] in md


def test_an_ambiguous_plain_halt_says_to_replay_it_durable(env):
    run_dir = Path(ambiguous_run(env, durable=False).run_dir)
    rep = json.loads((run_dir / "report.json").read_text())
    assert rep["state"] == "FAILED" and len(rep["halt"]["candidates"]) == 2
    assert rep["halt"]["show_frame"] == "frames/halt-open-form.png"  # no raw frame is kept for a plain run
    annotated = cv2.imread(str(run_dir / "frames/halt-open-form.png"))[..., ::-1]
    assert not (annotated == BEST).all(axis=2).any()  # the runtime marks neither look-alike as the best candidate
    assert (annotated == SEARCH).all(axis=2).any()  # only where it searched
    fixture = shlex.quote(f"fixture:{env / 'twin-fixture'}")
    assert rep["next_commands"] == [
        f"flow replay {shlex.quote(str(BUNDLE))} --durable --param 'vendor=ACME Corp' --param amount=1250.5 --url {fixture}"
    ]


def test_the_printed_teach_command_is_one_flow_approve_accepts(env):
    run_dir = Path(ambiguous_run(env).run_dir)
    teach = json.loads((run_dir / "report.json").read_text())["next_commands"][1]
    args = shlex.split(teach.replace('"$USER"', "ops"))
    assert args[:2] == ["flow", "approve"]
    r = CliRunner().invoke(app, args[1:])
    assert r.exit_code == 0, r.output
    approval = json.loads((run_dir / "approval.json").read_text())
    assert (approval["decision"], approval["operator"]) == ("teach", "ops")
    assert CliRunner().invoke(app, ["report", str(run_dir)]).exit_code == 0  # `flow report` re-renders it
    rep = json.loads((run_dir / "report.json").read_text())  # the decision now waits for its resume
    assert rep["next_commands"] == [f"flow resume {shlex.quote(str(run_dir))} --require-approval"]
