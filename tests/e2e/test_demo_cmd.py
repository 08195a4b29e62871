import json
import os
import shutil

import pytest
from typer.testing import CliRunner

from openadapt_flow.cli import demo as demo_module
from openadapt_flow.cli.app import app
from openadapt_flow.vision.ocr import OcrUnavailable
from tests.support.cli import flow_env, run_flow

pytestmark = pytest.mark.timeout(120)


def no_x_env(tmp_path):
    """No DISPLAY, and a PATH that holds tesseract only: no Xvnc, no X tools."""
    bin_dir = tmp_path.parent / f"{tmp_path.name}-bin"
    bin_dir.mkdir()
    tesseract = shutil.which("tesseract")
    if tesseract:
        os.symlink(tesseract, bin_dir / "tesseract")
    env = flow_env(tmp_path, PATH=str(bin_dir))
    env.pop("DISPLAY", None)
    return env


@pytest.mark.timeout(180)
def test_flow_demo_replays_the_recorded_fixture_over_rfb_with_no_x_and_opens_only_its_run_dir(tmp_path):
    r = run_flow(["demo", "--json"], tmp_path, env=no_x_env(tmp_path), timeout=170)
    assert r.returncode == 0, r.stderr + r.stdout
    out = json.loads(r.stdout)
    assert out["state"] == "COMPLETED" and out["target"] == "recorded fixture (normal) over RFB"
    assert [row[1:] for row in out["rows"]] == [["ACME Corp", 1250.5]]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "install.key",
        "runs",
    ]  # the key is FLOW_KEY_FILE, set by the test
    assert (tmp_path / out["run_dir"] / "report.html").is_file()
    steps = json.loads((tmp_path / out["run_dir"] / "report.json").read_text())["steps"]
    assert [s["status"] for s in steps] == ["verified"] * 5
    # the halt → approve → resume loop that follows, in the same JSON object
    loop = out["loop"]
    assert loop["halt"]["category"] == "ambiguous" and loop["halt"]["transaction_outcome"] == "HALTED_BEFORE_EFFECT"
    assert loop["state"] == "COMPLETED" and [row[1:] for row in loop["rows"]] == [["ACME Corp", 1250.5]]
    assert [c.split()[1] for c in loop["commands"]] == ["replay", "approve", "resume"]
    assert (tmp_path / loop["run_dir"] / "report.html").is_file()


@pytest.mark.skipif(shutil.which("Xvnc") is None, reason="--live needs TigerVNC's Xvnc")
def test_flow_demo_live_runs_the_real_app_on_xvnc(tmp_path):
    r = run_flow(["demo", "--live", "--no-loop", "--json"], tmp_path)  # the loop runs on the recordings either way
    assert r.returncode == 0, r.stderr + r.stdout
    out = json.loads(r.stdout)
    assert out["state"] == "COMPLETED" and out["target"] == "live app (normal) on Xvnc"
    assert [row[1:] for row in out["rows"]] == [["ACME Corp", 1250.5]]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["install.key", "runs"]


def test_without_tesseract_demo_says_how_to_install_it_and_starts_nothing(tmp_path, monkeypatch):
    def missing(*_a, **_k):
        raise OcrUnavailable("OCR needs the tesseract binary")

    monkeypatch.setattr(demo_module, "OcrEngine", missing)
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(app, ["demo"])
    assert r.exit_code == 2
    assert "Tesseract OCR, which is not installed" in r.stderr and "apt-get install tesseract-ocr" in r.stderr
    assert list(tmp_path.iterdir()) == []


def test_variants_without_a_recording_need_live(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(app, ["demo", "--variant", "twin"])
    assert r.exit_code == 2 and "use --live" in r.stderr and "dark, normal" in r.stderr


def _demo(tmp_path, *args):
    r = run_flow(["demo", *args], tmp_path, env=no_x_env(tmp_path), timeout=170)
    assert r.returncode == 0, r.stderr + r.stdout
    return r


@pytest.mark.timeout(180)
def test_flow_demo_shows_the_halt_approve_resume_loop_in_plain_words(tmp_path):
    out = _demo(tmp_path).stdout
    lines = out.splitlines()
    loop_dir = next(w for w in out.split() if w.startswith("runs/loop-"))
    commands = [line[2:] for line in lines if line.startswith("$ flow ")]
    # the three commands a user would type, in order, exactly as they were run
    assert [c.split()[:2] for c in commands] == [["flow", "replay"], ["flow", "approve"], ["flow", "resume"]]
    assert "--durable" in commands[0] and f"--run-dir {loop_dir}" in commands[0]
    assert commands[1].startswith(f"flow approve {loop_dir} --decision teach --point 230,308 ")
    assert commands[2] == f"flow resume {loop_dir} --require-approval"
    # the pause, in plain words, before the operator's command
    pause = out.index("Step 'save' stopped and waits for an operator")
    assert out.index("$ flow replay") < pause < out.index("$ flow approve") < out.index("$ flow resume")
    assert "never guesses between look-alikes" in out and "nothing was written" in out
    assert "PAUSED: run dir" in out and "COMPLETED: run dir" in out
    # the row the resumed run wrote, shown last before what to do next (record your own, the console)
    story, _, after = out.partition("== What next ==")
    assert story.rstrip().splitlines()[-1].split() == ["1", "ACME", "Corp", "1250.5"]
    assert "make demo-record" in after and "flow console" in after
    # the run directory tells the same story
    run = tmp_path / loop_dir
    rep = json.loads((run / "report.json").read_text())
    assert rep["state"] == "COMPLETED"
    assert [d["decision"] for d in rep["decisions"]] == ["teach"]
    records = [json.loads(x) for x in (run / "journal.jsonl").read_text().splitlines()]
    dispatched = [x["step"] for x in records if x["type"] == "action_dispatched"]
    assert dispatched.count("save") == 1  # the halt sent no input; the resumed, taught step clicked once
    assert sorted(p.name for p in tmp_path.iterdir()) == ["install.key", "runs"]


@pytest.mark.timeout(180)
def test_a_loop_that_does_not_halt_is_reported_as_the_tools_bug_not_shown_as_a_success(tmp_path, monkeypatch):
    from openadapt_flow.cli import demo_loop
    from tests.support.cli import REPO

    # the look-alike recording swapped for the healthy one: the durable run completes instead of pausing
    monkeypatch.setattr(demo_loop, "LOOKALIKE", "normal")
    for name, value in flow_env(tmp_path).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    monkeypatch.setenv("FLOW_DECISION_KEY_FILE", str(tmp_path / "decision.key"))
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(app, ["demo"])
    assert r.exit_code == 70, r.output
    assert r.stderr.strip().splitlines()[-1] == "error: the durable run was meant to pause (exit 3) and exited 0"
    assert "flow approve" not in r.stdout and "Traceback" not in r.output
