"""Planning a resume writes nothing (issue 36 item 2): `runtime.resume.plan` reads the journal, state, checkpoint, the
pause's views and approvals and returns a plan; every write is the executor's (resume/execute.py).

For a paused run (with and without an operator's approval) and for runs killed mid-step (their owner dead, a view
lagging the journal), on the filesystem store and the PostgreSQL store: every file under the test's directory — the
run directory, the run ledger, the keys — keeps its bytes and its mtime, and every row of every table of the store's
schema is the same, after `plan`. Then the resume itself makes the writes the plan named, and completes.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import psycopg
import pytest

from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.runtime.operate.approval import approve
from openadapt_flow.runtime.resume import plan
from openadapt_flow.runtime.resume.acts import FinalizeInterrupted, RebuildCheckpoint
from openadapt_flow.runtime.runs import replay, resume
from openadapt_flow.runtime.start.launch import ReplayRequest
from openadapt_flow.runtime.start.runref import open_ref
from tests.support.pg import pg_server, store_spec  # noqa: F401 — pg_server is a session fixture (one server per worker)
from tests.unit.runtime.test_durable import AFTER, SAVE, App, env, home, rows  # noqa: F401 (env: a fixture)
from tests.unit.runtime.test_durable_stores import killed_at
from tests.unit.runtime.test_engine import make_bundle

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(params=["filesystem", "postgres"])
def where(request, tmp_path, monkeypatch, env):
    """(store kind, config, run reference, the schema's connection or None); the run ledger under tmp_path."""
    monkeypatch.setenv("FLOW_STATE_DIR", str(tmp_path / "state"))
    runtime: dict[str, object] = {"runs_root": str(tmp_path / "runs"), "settle_quiet_s": 0.01, "durable": True}
    conn = None
    if request.param == "postgres":
        server = request.getfixturevalue("pg_server")
        schema = f"p{abs(hash(request.node.nodeid)):x}"
        runtime["store"] = spec = store_spec(server, schema, monkeypatch)
        conn = (spec, server.password, schema)
        ref = "pg:run"
    else:
        ref = str(tmp_path / "run")
    config = DeployConfig.model_validate({"schema": "openadapt-flow/config@1", "runtime": runtime})
    return request.param, config, ref, conn


def start(tmp_path, where, app):
    _, config, ref, _ = where
    make_bundle(tmp_path / "b", [SAVE, AFTER])
    req = ReplayRequest(
        bundle=tmp_path / "b", params={"vendor": "ACME"}, backend=BackendSpec(kind="fake"), config=config, run_dir=ref
    )
    return replay(req, backend_factory=lambda spec: app.connect())


def files(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file and folder under `root`: its bytes (a folder: none) and its mtime."""
    out: dict[str, tuple[bytes, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames:
            p = Path(dirpath, name)
            out[str(p.relative_to(root)) + "/"] = (b"", p.stat().st_mtime_ns)
        for name in filenames:
            p = Path(dirpath, name)
            out[str(p.relative_to(root))] = (p.read_bytes(), p.stat().st_mtime_ns)
    return out


def tables(conn) -> dict[str, list[str]]:
    """Every row of every table of the store's schema (sorted: a table's order is not its contents)."""
    if conn is None:
        return {}
    spec, password, schema = conn
    with psycopg.connect(spec, password=password, autocommit=True) as c:
        names = [
            r[0]
            for r in c.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (schema,)
            ).fetchall()
        ]
        return {
            n: sorted(repr(row) for row in c.execute(f'SELECT * FROM "{schema}"."{n}"'.encode()).fetchall())
            for n in sorted(names)
        }


def snapshot(tmp_path, where):
    return files(tmp_path), tables(where[3])


def assert_plan_writes_nothing(tmp_path, where):
    before = snapshot(tmp_path, where)
    assert before[0] and (where[0] == "filesystem") == any(k.startswith("run/") for k in before[0])
    assert where[3] is None or before[1]["flow_runs"], "the PostgreSQL store holds the run's rows"
    planned = plan(where[2])
    after = snapshot(tmp_path, where)
    assert sorted(after[0]) == sorted(before[0]), "planning created or removed a file"
    assert [k for k in before[0] if after[0][k] != before[0][k]] == [], "planning rewrote or touched a file"
    assert after[1] == before[1], "planning changed a table's rows"
    return planned


def test_planning_a_paused_run_writes_nothing(tmp_path, where, env):
    app = App(env, refute=True)
    assert start(tmp_path, where, app).state == "PAUSED"
    p = assert_plan_writes_nothing(tmp_path, where)
    assert p.refusal is not None and "awaiting an operator decision" in str(p.refusal)  # no decision yet: refused
    run = open_ref(where[2])
    app.refute = False
    app.show(home())
    approve(run, "continue", "alice")
    p = assert_plan_writes_nothing(tmp_path, where)
    assert (p.refusal, p.stop, p.decision, p.pending["step"] if p.pending else None) == (None, None, "continue", "post")
    assert resume(run, backend_factory=lambda spec: app.connect()).state == "COMPLETED" and rows(env) == 1


@pytest.mark.parametrize(
    "point, act",
    [
        (
            "after:action_sent@post",
            FinalizeInterrupted,
        ),  # the input sent, nothing verified: the owner's death to record
        ("after:step_verified@post", RebuildCheckpoint),  # verified and journaled, checkpoint.json never written
    ],
)
def test_planning_an_interrupted_run_writes_nothing(tmp_path, where, env, monkeypatch, point, act):
    app = App(env)
    with killed_at(where, monkeypatch, point):
        start(tmp_path, where, app)
    assert open_ref(where[2]).state()["state"] == "RUNNING" and rows(env) == 1  # died mid-step, the write landed
    p = assert_plan_writes_nothing(tmp_path, where)
    assert p.refusal is None and p.stop is None and str(p.state) == "INTERRUPTED"
    assert any(isinstance(a, act) for a in p.acts), [a.describe() for a in p.acts]
    assert assert_plan_writes_nothing(tmp_path, where).acts == p.acts  # planned twice: the same plan (nothing moved)
    res = resume(open_ref(where[2]), backend_factory=lambda spec: app.connect())
    assert res.state == "COMPLETED", res.message
    assert rows(env) == 1 and len([e for e in app.events if e[0] == "click"]) == 1  # never sent again


def flow_cli(monkeypatch, capsys, *argv: str) -> tuple[int, str, str]:
    """`flow ARGV` in this process, through its real entry point: (exit code, stdout, stderr)."""
    from openadapt_flow.cli import app as app_module

    monkeypatch.setattr(sys, "argv", ["flow", *argv])
    capsys.readouterr()
    with pytest.raises(SystemExit) as done:
        app_module.main()
    out = capsys.readouterr()
    return done.value.code or 0, out.out, out.err


@pytest.mark.parametrize("where", ["filesystem"], indirect=True)
def test_flow_resume_dry_run_prints_the_plan_and_writes_nothing(tmp_path, where, env, monkeypatch, capsys):
    app = App(env, refute=True)
    start(tmp_path, where, app)
    before = snapshot(tmp_path, where)
    code, out, err = flow_cli(monkeypatch, capsys, "resume", where[2], "--dry-run")
    assert (
        code == 6 and "state: PAUSED" in out and "awaiting an operator decision" in err
    )  # resume would refuse: says so
    assert snapshot(tmp_path, where) == before
    approve(open_ref(where[2]), "continue", "alice")
    before = snapshot(tmp_path, where)
    code, out, err = flow_cli(monkeypatch, capsys, "resume", where[2], "--dry-run")
    assert code == 0, err
    assert "resolves pause" in out and "at step 'post'" in out and "applies decision continue by alice" in out
    assert snapshot(tmp_path, where) == before  # no file, mtime or row changed
    code, out, _ = flow_cli(monkeypatch, capsys, "resume", where[2], "--dry-run", "--json")
    assert code == 0 and json.loads(out)["refused"] is None and json.loads(out)["state"] == "PAUSED"
    assert snapshot(tmp_path, where) == before
