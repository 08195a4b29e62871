"""`flow replay` as a subprocess over real RFB to a real Xvnc running the demo app, with real Tesseract and SQLite."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from tests.e2e.demo_harness import BUNDLE_DIR
from tests.support.cli import flow_env, run_flow
from tests.support.xserver import start_xvnc

pytestmark = pytest.mark.timeout(180)
PARAMS = ["--param", "vendor=ACME Corp", "--param", "amount=1250.50"]


def replay(
    tmp_path: Path,
    app,
    bundle: Path = BUNDLE_DIR,
    extra: list[str] | None = None,
    params: list[str] = PARAMS,
    **env: str,
):
    run_dir = tmp_path / "run"
    args = ["replay", str(bundle), "--url", app.xvnc.url, "--run-dir", str(run_dir), "--json", *params, *(extra or [])]
    r = run_flow(args, tmp_path, env=flow_env(tmp_path, DEMO_DB_DSN=f"sqlite:///{app.db_path}", **env))
    assert "Traceback" not in r.stderr, r.stderr
    return r, run_dir


def report(run_dir: Path) -> dict:
    return json.loads((run_dir / "report.json").read_text())


def journal(run_dir: Path) -> list[dict]:
    return [json.loads(l) for l in (run_dir / "journal.jsonl").read_text().splitlines()]


def test_healthy_replay_writes_the_row_and_a_full_report(tmp_path, demo_app):
    app = demo_app("normal")
    r, run_dir = replay(tmp_path, app)
    assert r.returncode == 0, r.stderr + r.stdout
    assert json.loads(r.stdout)["state"] == "COMPLETED"
    rows = app.rows()
    assert [(v, a) for _, v, a, _ in rows] == [("ACME Corp", 1250.5)]
    rep = report(run_dir)
    assert [s["status"] for s in rep["steps"]] == ["verified"] * 5
    assert all(s["rung"] == "template" for s in rep["steps"]), [s.get("rung") for s in rep["steps"]]
    save = next(s for s in rep["steps"] if s["id"] == "save")
    assert save["effect"]["verdict"] == "CONFIRMED"
    assert any(c["kind"] == "identity" and c["ok"] for c in save["checks"])
    for f in ("REPORT.md", "report.html", "manifest.json", "state.json", "bundle/flow.yaml"):
        assert (run_dir / f).is_file(), f
    assert "data:image/png;base64," in (run_dir / "report.html").read_text()
    assert rep["model_calls"] == 0


def test_a_digit_merged_with_the_text_cursor_is_read_back_right(tmp_path, demo_app):
    # The demo's caret does not blink and sits 1 px after the text: Tesseract reads "Acme 8|" as "Acme g|".
    app = demo_app("normal")
    r, run_dir = replay(tmp_path, app, params=["--param", "vendor=Acme 8", "--param", "amount=18.88"])
    assert r.returncode == 0, r.stderr + r.stdout
    assert [(v, a) for _, v, a, _ in app.rows()] == [("Acme 8", 18.88)]
    vendor = next(s for s in report(run_dir)["steps"] if s["id"] == "vendor")
    readback = next(c for c in vendor["checks"] if c["kind"] == "readback")
    assert readback["ok"] and "text cursor" in readback["detail"], readback


def test_dark_theme_succeeds_through_a_lower_rung(tmp_path, demo_app):
    app = demo_app("dark")
    r, run_dir = replay(tmp_path, app)
    assert r.returncode == 0, r.stderr + r.stdout
    assert len(app.rows()) == 1
    rungs = [s["rung"] for s in report(run_dir)["steps"]]
    assert any(rung in ("template-edges", "ocr") for rung in rungs), rungs


def test_shifted_layout_succeeds_outside_the_recorded_region(tmp_path, demo_app):
    app = demo_app("shifted")
    r, run_dir = replay(tmp_path, app)
    assert r.returncode == 0, r.stderr + r.stdout
    assert len(app.rows()) == 1
    steps = report(run_dir)["steps"]
    # the recorded window missed at least once, and the step was found elsewhere (whole frame or OCR)
    assert any(any(e["verdict"] != "hit" for e in s["evidence"]) for s in steps), steps


def test_two_identical_save_buttons_halt_ambiguous_without_clicking(tmp_path, demo_app):
    app = demo_app("twin")
    r, run_dir = replay(tmp_path, app)
    assert r.returncode == 1, r.stderr + r.stdout
    out = json.loads(r.stdout)
    assert (out["state"], out["category"]) == ("FAILED", "ambiguous")
    recs = journal(run_dir)
    assert not any(x["type"] == "action_dispatched" and x["step"] == "save" for x in recs)
    assert app.rows() == []
    assert (run_dir / "frames/halt-save.png").is_file()
    rep = report(run_dir)
    assert rep["halt"]["category"] == "ambiguous" and rep["transaction_outcome"] == "HALTED_BEFORE_EFFECT"


def test_wrong_identity_halts_before_the_save_click(tmp_path, demo_app):
    app = demo_app("normal")
    bundle = tmp_path / "bundle"
    shutil.copytree(BUNDLE_DIR, bundle)
    flow = yaml.safe_load((bundle / "flow.yaml").read_text())
    save = next(s for s in flow["steps"] if s["id"] == "save")
    save["identity"]["text"] = "GLOBEX"
    (bundle / "flow.yaml").write_text(yaml.safe_dump(flow, sort_keys=False))
    r, run_dir = replay(tmp_path, app, bundle=bundle)
    assert r.returncode == 1
    assert json.loads(r.stdout)["category"] == "identity"
    assert not any(x["type"] == "action_dispatched" and x["step"] == "save" for x in journal(run_dir))
    assert app.rows() == []


def test_refuted_save_halts_with_positive_absence(tmp_path, demo_app):
    app = demo_app("normal", refute_save=True)
    r, run_dir = replay(tmp_path, app)
    assert r.returncode == 1
    assert json.loads(r.stdout)["category"] == "effect"
    assert app.rows() == []
    state = json.loads((run_dir / "state.json").read_text())
    assert state["transaction_outcome"] == "HALTED_BEFORE_EFFECT"


def test_screen_backend_on_the_xvnc_display(tmp_path, demo_app):
    app = demo_app("normal")
    run_dir = tmp_path / "run"
    env = flow_env(
        tmp_path,
        DEMO_DB_DSN=f"sqlite:///{app.db_path}",
        DISPLAY=f":{app.xvnc.display}",
        XAUTHORITY=app.xvnc.env["XAUTHORITY"],
    )
    r = run_flow(
        ["replay", str(BUNDLE_DIR), "--backend", "screen", "--run-dir", str(run_dir), *PARAMS], tmp_path, env=env
    )
    assert r.returncode == 0, r.stderr + r.stdout
    assert [(v, a) for _, v, a, _ in app.rows()] == [("ACME Corp", 1250.5)]


def test_wrong_vnc_password_is_a_clear_error(tmp_path):
    server = start_xvnc(640, 480, password="right-pass")
    try:
        r = run_flow(
            ["replay", str(BUNDLE_DIR), "--config", str(_cfg(tmp_path, server.port)), *PARAMS],
            tmp_path,
            env=flow_env(tmp_path, VNC_PW="wrong-pass", DEMO_DB_DSN=f"sqlite:///{tmp_path / 'invoices.db'}"),
        )
        assert r.returncode == 2, r.stderr
        assert "auth" in r.stderr.lower() and len(r.stderr.strip().splitlines()) == 1
        assert "wrong-pass" not in r.stderr
        assert not (tmp_path / "runs").exists()
    finally:
        server.stop()


def _cfg(tmp_path: Path, port: int) -> Path:
    p = tmp_path / "deploy.yaml"
    p.write_text(f"schema: openadapt-flow/config@1\nbackend: {{url: 'vnc://127.0.0.1:{port}', password_env: VNC_PW}}\n")
    return p


def test_screen_backend_pinned_to_the_second_monitor_sees_and_clicks_there(tmp_path):
    import subprocess
    import sys

    from openadapt_flow.demo.xvnc import wait_until
    from openadapt_flow.procs import stop_process

    # A real two-monitor X desktop: Xvnc split into two RandR monitors side by side; the app on the right one.
    xvnc = start_xvnc(2048, 768, monitors=[(0, 0, 1024, 768), (1024, 0, 1024, 768)])
    db, ready = tmp_path / "invoices.db", tmp_path / "ready.json"
    app = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "openadapt_flow.demo.app",
            "--db",
            str(db),
            "--ready-file",
            str(ready),
            "--position",
            "1024,0",
        ],
        env=xvnc.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(lambda: ready.exists() or app.poll() is not None, 20, "the demo app on the second monitor")
        env = flow_env(tmp_path, DEMO_DB_DSN=f"sqlite:///{db}", XAUTHORITY=xvnc.env["XAUTHORITY"])

        def replay_on(monitor: int, name: str):
            cfg = tmp_path / f"{name}.yaml"
            cfg.write_text(
                yaml.safe_dump(
                    {
                        "schema": "openadapt-flow/config@1",
                        "backend": {"kind": "screen", "display": f":{xvnc.display}", "monitor": monitor},
                    }
                )
            )
            return run_flow(
                ["replay", str(BUNDLE_DIR), "--config", str(cfg), "--run-dir", str(tmp_path / name), "--json", *PARAMS],
                tmp_path,
                env=env,
            )

        first = replay_on(1, "left")  # the left monitor is empty: nothing to find, nothing clicked
        assert first.returncode == 1, first.stdout + first.stderr
        assert json.loads(first.stdout)["category"] == "resolution"
        r = replay_on(2, "right")  # frames are the right monitor's own pixels; clicks land 1024 px to the right
        assert r.returncode == 0, r.stdout + r.stderr
        import sqlite3

        with sqlite3.connect(db) as con:
            assert con.execute("SELECT vendor, amount FROM invoices").fetchall() == [("ACME Corp", 1250.5)]
        frame = report(tmp_path / "right")["steps"][0]
        assert frame["rung"] == "template"
    finally:
        stop_process(app)
        xvnc.stop()
