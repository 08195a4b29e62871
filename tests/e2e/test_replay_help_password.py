"""`flow replay` tells a newcomer how to do the real job (issue 37, item 4): its --help has an example line, the exit
codes and `--password-env`; a password-protected VNC desktop is replayed with `--password-env` and no deploy file
(the served demo fixture requires a password); the viewer's port is `--viewer-port` in `flow record` as in
`flow demo --record`, the old `--port` still accepted."""

from __future__ import annotations

import json

import pytest

from tests.support.cli import flow_env, run_flow
from tests.support.demo_invoices import BUNDLE, FIXTURES, PARAMS, invoice_rows
from tests.support.fixtures import Served

pytestmark = pytest.mark.timeout(120)


def test_replay_help_shows_an_example_the_exit_codes_and_password_env(tmp_path):
    r = run_flow(["replay", "--help"], tmp_path, env=flow_env(tmp_path, COLUMNS="200"))
    assert r.returncode == 0, r.stderr
    text = " ".join(r.stdout.split())
    assert "flow replay bundles/post-invoice --url vnc://10.0.0.5:5901 --password-env LEDGER_VNC_PASSWORD" in text
    assert "--password-env" in text.split("Options")[-1]
    for line in ("0 ok COMPLETED", "3 paused PAUSED", "5 interrupted INTERRUPTED", "75 unavailable"):
        assert line in text, line


def test_a_password_protected_desktop_replays_with_password_env_and_no_config(tmp_path):
    db = tmp_path / "sor.db"
    env = flow_env(tmp_path, DESK_PW="s3cret-pw", DEMO_DB_DSN=f"sqlite:///{db}")
    with Served(FIXTURES / "normal", tmp_path, "--db", str(db), "--password-env", "DESK_PW", env=env) as served:
        r = run_flow(
            ["replay", str(BUNDLE), "--url", served.url, "--run-dir", "run", "--json", *PARAMS], tmp_path, env=env
        )
        assert (
            r.returncode == 2
            and "requires a password: name the environment variable that holds it: --password-env NAME" in r.stderr
        ), r.stderr  # without it: the error names the option
        r = run_flow(
            [
                "replay",
                str(BUNDLE),
                "--url",
                served.url,
                "--password-env",
                "DESK_PW",
                "--run-dir",
                "run2",
                "--json",
                *PARAMS,
            ],
            tmp_path,
            env=env,
        )
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(r.stdout)["state"] == "COMPLETED"
    assert invoice_rows(db) == [("ACME Corp", 1250.5)]
    manifest = (tmp_path / "run2" / "manifest.json").read_text()
    assert '"password_env": "DESK_PW"' in manifest and "s3cret-pw" not in manifest  # the name, never the value
    for path in (tmp_path / "run2").rglob("*"):
        if path.is_file():
            assert b"s3cret-pw" not in path.read_bytes(), path


def test_password_env_without_a_desktop_is_one_line_exit_2(tmp_path):
    r = run_flow(["replay", str(BUNDLE), "--password-env", "DESK_PW", *PARAMS], tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.strip() == (
        "error: --password-env is the password of a VNC or RDP desktop: give --url vnc://… or "
        "--rdp-host (or a config with one)"
    )
    assert not (tmp_path / "runs").exists()


def test_the_viewer_port_has_one_name_in_record_and_the_tutorial(tmp_path):
    for cmd in (["record"], ["fixture", "record"], ["demo"]):
        r = run_flow([*cmd, "--help"], tmp_path, env=flow_env(tmp_path, COLUMNS="200"))
        assert "--viewer-port" in r.stdout and "--port " not in r.stdout, (cmd, r.stdout)
    # the old name still works, and two names that disagree are refused in one line before anything starts
    r = run_flow(
        ["record", "--url", "vnc://127.0.0.1:1", "--out", "b", "--port", "5999", "--viewer-port", "5998"], tmp_path
    )
    assert r.returncode == 2 and "--viewer-port 5998 and --port 5999 (its old name) disagree" in r.stderr, r.stderr
