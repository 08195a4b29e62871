"""SPEC §16: every bad input gets one line naming what and where, the right exit code, no traceback, no run dir."""

import json
import socket

import pytest
import yaml

from tests.support.bundles import minimal_flow, write_bundle
from tests.support.cli import flow_env, run_flow

pytestmark = pytest.mark.timeout(120)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def ws(tmp_path):
    write_bundle(
        tmp_path / "bundle",
        minimal_flow(
            params={
                "vendor": {"type": "string", "required": True},
                "amount": {"type": "number"},
                "pw": {"type": "string", "secret": True},
            }
        ),
    )
    (tmp_path / "cfg-unknown.yaml").write_text("schema: openadapt-flow/config@1\nbackend: {kind: vnc, colour: red}\n")
    (tmp_path / "cfg-malformed.yaml").write_text("schema: openadapt-flow/config@1\nbackend: {kind: vnc\n")
    (tmp_path / "cfg-schema.yaml").write_text("schema: something/else@1\n")
    (tmp_path / "cfg-pwenv.yaml").write_text(
        "schema: openadapt-flow/config@1\nbackend: {url: 'vnc://127.0.0.1:5999', password_env: 'not a name'}\n"
    )
    (tmp_path / "cfg-policy.yaml").write_text("schema: openadapt-flow/config@1\npolicy: {max_steps: -3}\n")
    (tmp_path / "params-list.yaml").write_text("- a\n- b\n")
    (tmp_path / "notempty").mkdir()
    (tmp_path / "notempty" / "x").write_text("x")
    (tmp_path / "oldrun").mkdir()
    (tmp_path / "oldrun" / "manifest.json").write_text("{}")
    bad_png = write_bundle(tmp_path / "badpng", minimal_flow())
    (bad_png / "templates/ok.png").write_bytes(b"not a png at all")
    return tmp_path


V = ["--param", "vendor=ACME"]
CASES = [
    ("missing bundle", ["replay", "nope", "--url", "vnc://127.0.0.1:5999"] + V, 2, "bundle folder not found"),
    ("bundle not png", ["replay", "badpng", "--url", "vnc://127.0.0.1:5999"] + V, 2, "is not a PNG"),
    ("unknown url scheme", ["replay", "bundle", "--url", "http://127.0.0.1:5900"] + V, 2, "bad backend URL"),
    (
        "credentials in url",
        ["replay", "bundle", "--url", "vnc://user:hunter2@127.0.0.1"] + V,
        2,
        "credentials are not allowed",
    ),
    ("port out of range", ["replay", "bundle", "--url", "vnc://127.0.0.1:99999"] + V, 2, "bad backend URL"),
    (
        "param without =",
        ["replay", "bundle", "--url", "vnc://127.0.0.1:5999", "--param", "vendor"],
        2,
        "expected NAME=VALUE",
    ),
    (
        "undeclared param",
        ["replay", "bundle", "--url", "vnc://127.0.0.1:5999", "--param", "colour=red"] + V,
        2,
        "not declared",
    ),
    (
        "secret by flag",
        ["replay", "bundle", "--url", "vnc://127.0.0.1:5999", "--param", "pw=hunter2"] + V,
        2,
        "FLOW_SECRET_PW",
    ),
    ("missing required param", ["replay", "bundle", "--url", "vnc://127.0.0.1:5999"], 2, "param 'vendor' is required"),
    (
        "mistyped param",
        ["replay", "bundle", "--url", "vnc://127.0.0.1:5999", "--param", "amount=lots"] + V,
        2,
        "not a valid number",
    ),
    ("config unknown key", ["replay", "bundle", "--config", "cfg-unknown.yaml"] + V, 2, "unknown key 'colour'"),
    ("config malformed", ["replay", "bundle", "--config", "cfg-malformed.yaml"] + V, 2, "invalid YAML"),
    ("config missing", ["replay", "bundle", "--config", "nope.yaml"] + V, 2, "file not found"),
    ("config wrong schema", ["replay", "bundle", "--config", "cfg-schema.yaml"] + V, 2, "schema must be"),
    ("config bad password_env", ["replay", "bundle", "--config", "cfg-pwenv.yaml"] + V, 2, "password_env"),
    (
        "config bad policy",
        ["replay", "bundle", "--config", "cfg-policy.yaml", "--url", "vnc://127.0.0.1:5999"] + V,
        2,
        "policy.max_steps",
    ),
    ("no backend", ["replay", "bundle"] + V, 2, "no backend"),
    ("unknown backend kind", ["replay", "bundle", "--backend", "telepathy"] + V, 2, "unknown backend kind"),
    ("url and rdp-host", ["replay", "bundle", "--url", "vnc://127.0.0.1", "--rdp-host", "h"] + V, 2, "not both"),
    (
        "params file not mapping",
        ["replay", "bundle", "--url", "vnc://127.0.0.1:5999", "--params-file", "params-list.yaml"],
        2,
        "expected a mapping",
    ),
    (
        "params file missing",
        ["replay", "bundle", "--url", "vnc://127.0.0.1:5999", "--params-file", "nope.yaml"],
        2,
        "params file not found",
    ),
    ("unknown flag", ["replay", "bundle", "--colour", "red"], 2, "--colour"),
    ("status not a run", ["status", "notempty"], 2, "not a run directory"),
    ("status missing", ["status", "nowhere"], 2, "run directory not found"),
    ("runs root missing", ["runs", "nowhere"], 2, "runs root not found"),
    ("report not a run", ["report", "notempty"], 2, "not a run directory"),
    ("unknown schema", ["schema", "colour"], 2, "unknown schema 'colour'"),
    ("validate bad bundle", ["validate", "badpng"], 2, "is not a PNG"),
]


@pytest.mark.parametrize("name,args,code,needle", CASES, ids=[c[0] for c in CASES])
def test_bad_input(ws, name, args, code, needle):
    r = run_flow(args, ws)
    assert r.returncode == code, (r.stdout, r.stderr)
    err = r.stderr.strip()
    assert needle in err, err
    assert "Traceback" not in r.stderr + r.stdout
    assert "hunter2" not in r.stderr + r.stdout
    if name != "unknown flag":
        assert len(err.splitlines()) == 1, err
    assert not (ws / "runs").exists(), "a run directory was created for bad input"


def test_unreachable_vnc_port_is_a_clear_backend_error(ws):
    port = free_port()
    r = run_flow(["replay", "bundle", "--url", f"vnc://127.0.0.1:{port}"] + V, ws)
    assert r.returncode == 75, r.stderr  # the environment, not the input: EX_TEMPFAIL, a retry loop retries
    assert str(port) in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert not (ws / "runs").exists()


def test_run_dir_that_is_not_empty_or_holds_a_run(ws):
    for d, needle in (("notempty", "not empty"), ("oldrun", "already holds a run")):
        r = run_flow(
            ["replay", "bundle", "--backend", "screen", "--run-dir", d] + V, ws, env=flow_env(ws, DISPLAY=":4099")
        )
        assert r.returncode == 2, r.stderr
        assert needle in r.stderr


def test_validate_ok_and_json(ws):
    r = run_flow(["validate", "bundle", "--json"], ws)
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["ok"] and info["steps"] == 1 and info["digest"].startswith("sha256:")


def test_schema_prints_json_schema(ws):
    r = run_flow(["schema", "bundle"], ws)
    assert r.returncode == 0
    assert "steps" in json.loads(r.stdout)["properties"]


def test_openadapt_entry_point_and_help(ws):
    import shutil
    import sys
    from pathlib import Path

    exe = Path(sys.executable).parent / "openadapt"
    if not exe.exists():
        exe = Path(shutil.which("openadapt") or "openadapt")
    import subprocess

    r = subprocess.run(
        [str(exe), "flow", "validate", "bundle"], cwd=ws, env=flow_env(ws), capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("ok: t")
    _ = yaml
