"""`flow record` end to end: the demo app on a real Xvnc, the recording proxy as a subprocess, our VncBackend as
the viewer doing the task once; the compiled bundle is then replayed with other values and writes their row."""

from __future__ import annotations

import json

import pytest
import yaml

from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.backends.vnc import VncBackend
from openadapt_flow.runtime.act.settle import settle
from tests.support.cli import flow_env, load_script, record_via_proxy, run_flow

pytestmark = pytest.mark.timeout(240)


def drive(port: int) -> None:
    """The demo's five steps, as a user would do them in a viewer: the app ends on its list again."""
    script = load_script("record_demo_fixture")
    viewer = VncBackend(BackendSpec(kind="vnc", host="127.0.0.1", port=port, io_timeout_s=15))
    try:
        settle(viewer, 0.2, 5)
        for _, action, x, y, text in script.STEPS[:5]:
            script.perform(viewer, action, x, y, text)
            settle(viewer, 0.35, 10, expect_change_s=2.0)  # the recorder cuts on settled screens too
    finally:
        viewer.close()


@pytest.fixture(params=["normal", "dark"])
def recorded(request, tmp_path, demo_app):
    app = demo_app(request.param)
    r = record_via_proxy(
        [
            "--url",
            app.xvnc.url,
            "--out",
            str(tmp_path / "bundle"),
            "--fixture",
            str(tmp_path / "fx"),
            "--recording",
            str(tmp_path / "rec"),
            "--watch-sqlite",
            str(app.db_path),
            "--dsn-env",
            "DEMO_DB_DSN",
            "--name",
            "invoice-entry",
            "--json",
        ],
        tmp_path,
        drive,
    )
    assert r.returncode == 0, r.stderr
    out, err = r.stdout, r.stderr
    return app, tmp_path / "bundle", json.loads(out), err


def test_a_recorded_demonstration_compiles_to_a_bundle_that_replays_with_other_values(tmp_path, recorded):
    app, bundle, summary, log = recorded
    assert "Traceback" not in log, log
    doc = yaml.safe_load((bundle / "flow.yaml").read_text())
    steps = {s["id"]: s for s in doc["steps"]}
    assert [s["action"] for s in doc["steps"]] == ["click", "type", "type", "click", "click"]
    assert doc["params"]["vendor"]["example"] == "ACME Corp"  # named after the column the value landed in
    assert doc["params"]["amount"] == {"type": "number", "required": True, "example": 1250.5}
    save = doc["steps"][3]
    assert save["consequential"] is True
    # the whole change the save made: one row, its typed columns bound (id and created_at free); nothing else
    assert save["effect"]["changes"] == [{"table": "invoices", "added": {"vendor": "{vendor}", "amount": "{amount}"}}]
    assert save["identity"]["text"] == "{vendor}"
    assert any("text_present" in e for e in doc["steps"][0]["expect"])  # the form's words appeared
    assert all("ACME" not in json.dumps(s.get("expect", [])) for s in steps.values())  # no fact on a typed value
    assert (tmp_path / "fx" / "fixture.yaml").is_file()

    env = flow_env(tmp_path, DEMO_DB_DSN=f"sqlite:///{app.db_path}")
    assert run_flow(["validate", str(bundle)], tmp_path, env=env).returncode == 0
    before = len(app.rows())
    r = run_flow(
        [
            "replay",
            str(bundle),
            "--url",
            app.xvnc.url,
            "--run-dir",
            str(tmp_path / "run"),
            "--json",
            "--param",
            "vendor=Globex Ltd",
            "--param",
            "amount=99.5",
        ],
        tmp_path,
        env=env,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    rows = app.rows()
    assert len(rows) == before + 1 and rows[-1][1:3] == ("Globex Ltd", 99.5)
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert next(s for s in report["steps"] if s["id"] == save["id"])["effect"]["verdict"] == "CONFIRMED"


def test_a_kept_recording_compiles_again_to_the_same_bundle(tmp_path, recorded):
    _, bundle, _, _ = recorded
    r = run_flow(
        [
            "compile",
            str(tmp_path / "rec"),
            "--out",
            str(tmp_path / "again"),
            "--name",
            "invoice-entry",
            "--dsn-env",
            "DEMO_DB_DSN",
        ],
        tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "again" / "flow.yaml").read_text() == (bundle / "flow.yaml").read_text()
    for png in (bundle / "templates").iterdir():
        assert (tmp_path / "again" / "templates" / png.name).read_bytes() == png.read_bytes()


@pytest.mark.parametrize("recorded", ["normal"], indirect=True)
def test_a_compiled_bundle_survives_a_drifted_layout(tmp_path, recorded, demo_app):
    app, bundle, _, _ = recorded
    app.stop()
    drifted = demo_app("shifted", db_path=app.db_path)  # a banner, every block moved 30-96 px, wider fields
    env = flow_env(tmp_path, DEMO_DB_DSN=f"sqlite:///{app.db_path}")
    r = run_flow(
        [
            "replay",
            str(bundle),
            "--url",
            drifted.xvnc.url,
            "--run-dir",
            str(tmp_path / "drift"),
            "--json",
            "--param",
            "vendor=Initech",
            "--param",
            "amount=7",
        ],
        tmp_path,
        env=env,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert drifted.rows()[-1][1:3] == ("Initech", 7.0)
