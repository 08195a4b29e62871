"""The durable CLI script loop on both run stores (SPEC §18: every command that takes RUN_DIR also takes RUN_ID with
--store).

A `memory:` run lives as long as its process, so a `flow` subprocess per command (tests/e2e/test_durable_cli.py, on
the filesystem) cannot show it. Here the same commands run in this one process (typer's runner, the real command
functions, exit codes and output), against the demo bundle on its recorded fixture played in process, once per store:
pause → `resume --require-approval` refused → approve → resume completes with exactly one write → the decision is
spent (resume is a no-op, approving again is refused).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from openadapt_flow.cli.app import app
from tests.support.cli import flow_env, run_flow
from tests.support.demo_invoices import BUNDLE, FIXTURES, PARAMS, invoice_rows
from tests.support.pg import pg_server, store_spec  # noqa: F401 — pg_server: the session's PostgreSQL server

pytestmark = pytest.mark.timeout(180)
FIXTURE = FIXTURES / "normal"


def gated_bundle(tmp_path: Path) -> Path:
    """The demo bundle with an operator's approval before its first step (the fixture starts afresh per connection,
    so the pause comes before any input: a resume sees the screen the run paused on)."""
    bundle = tmp_path / "bundle"
    shutil.copytree(BUNDLE, bundle)
    doc = yaml.safe_load((bundle / "flow.yaml").read_text())
    doc["steps"][0]["approval"] = "before"
    (bundle / "flow.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return bundle


def store_args(request: pytest.FixtureRequest, store: str, tmp_path: Path) -> tuple[list[str], str]:
    """The --store flags and the --run-dir reference of a run in `store`."""
    if store == "postgres":
        spec = store_spec(
            request.getfixturevalue("pg_server"),
            f"loop_{tmp_path.name.lower()}",
            request.getfixturevalue("monkeypatch"),
        )
        return ["--store", spec], "pg:r1"
    if store == "memory":
        return ["--store", "memory:"], f"memory:{tmp_path.name}"
    return ["--store", str(tmp_path / "runs")], str(tmp_path / "runs" / "r1")


@pytest.mark.parametrize("store", ["filesystem", "memory", "postgres"])
def test_pause_approve_resume_by_run_id_on_either_store(tmp_path, monkeypatch, store, request):
    db = tmp_path / "sor.db"
    for var, value in {
        "FLOW_KEY_FILE": tmp_path / "install.key",
        "FLOW_DECISION_KEY_FILE": tmp_path / "decision.key",
        "FLOW_FIXTURE_DB": db,
        "DEMO_DB_DSN": f"sqlite:///{db}",
    }.items():
        monkeypatch.setenv(var, str(value))
    monkeypatch.chdir(tmp_path)
    where, run_dir = store_args(request, store, tmp_path)
    cli = CliRunner()

    def flow(*args: str) -> tuple[int, str]:
        r = cli.invoke(app, list(args))
        assert r.exception is None or isinstance(r.exception, SystemExit), r.output
        assert "Traceback" not in r.output, r.output
        return r.exit_code, r.output

    code, out = flow(
        "replay",
        str(gated_bundle(tmp_path)),
        "--url",
        f"fixture:{FIXTURE}",
        "--run-dir",
        run_dir,
        *where,
        "--json",
        *PARAMS,
    )
    assert code == 3, out  # PAUSED before the first step: nothing sent
    assert json.loads(out)["run_dir"] == run_dir
    code, out = flow("status", run_dir, "--json", *where)
    st = json.loads(out)
    assert (code, st["state"], st["pending_decision"]["step"]) == (0, "PAUSED", "open-form")
    run_id = st["run_id"]
    assert flow("runs", *where, "--json")[1].count(run_id) == 1
    assert flow("resume", run_id, *where, "--require-approval")[0] == 6  # no decision yet
    assert flow("approve", run_id, *where, "--decision", "continue", "--operator", "ops")[0] == 0
    code, out = flow("resume", run_id, *where, "--json")
    assert (code, json.loads(out)["state"]) == (0, "COMPLETED"), out
    assert invoice_rows(db) == [("ACME Corp", 1250.5)]  # exactly one write
    code, out = flow("resume", run_id, *where, "--json")
    assert code == 0 and "already terminal" in json.loads(out)["message"] and len(invoice_rows(db)) == 1
    assert flow("approve", run_id, *where, "--decision", "continue", "--operator", "ops") == (
        0,
        "already recorded: continue\n",
    )
    assert (
        flow("approve", run_id, *where, "--decision", "reject", "--operator", "ops")[0] == 6
    )  # the pause is gone: refused
    code, out = flow("status", run_id, *where, "--json")
    assert json.loads(out)["state"] == "COMPLETED"
    assert (tmp_path / "runs" / "r1" / "report.json").is_file() == (store == "filesystem")


def test_a_memory_run_is_not_found_by_another_process(tmp_path):
    r = run_flow(["status", "run-0123456789ab", "--store", "memory:"], tmp_path, env=flow_env(tmp_path))
    assert (
        r.returncode == 2
        and "no run with this id or name in --store memory:" in r.stderr
        and "Traceback" not in r.stderr
    )
