"""A SIGKILL on the PostgreSQL store (SPEC §5, §8, §18): `flow replay --durable --store postgresql://…` killed right
after `action_dispatched` of the consequential step committed — before its input — is finalised INTERRUPTED by
`flow reconcile --store`, and resumed (the uncertain write re-read ABSENT, an operator's continue) to COMPLETED with
exactly one row in the system of record. The demo app runs on a real Xvnc (the crash matrix's desktop)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openadapt_flow.store import PostgresStore
from tests.crash.crash_support import (  # noqa: F401  (desk: the crash matrix's desktop fixture)
    CONSEQUENTIAL,
    STEPS,
    Desktop,
    desk,
    flow,
    uncertain,
    verified,
)
from tests.support.pg import PgServer, pg_server, store_spec  # noqa: F401  (pg_server: the session's server)

pytestmark = pytest.mark.timeout(240)


def test_a_kill_after_action_dispatched_resumes_to_exactly_one_row(
    desk: Desktop, pg_server: PgServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    spec = store_spec(pg_server, f"crash_{tmp_path.name.lower()}", monkeypatch)
    root, amount = desk.case()
    env = dict(desk.env(), PGPASSWORD=pg_server.password)
    args = desk.replay_args(Path("unused"), amount, desk.fast_bundle())
    args[args.index("--run-dir") + 1] = "pg:crash"
    killed = flow([*args, "--store", spec], root, dict(env, FLOW_CRASH_AT=f"after:action_dispatched@{CONSEQUENTIAL}"))
    assert killed.killed, killed.stderr[-500:]
    store = PostgresStore(spec)
    run = store.open_run("pg:crash")
    key = Path(env["FLOW_KEY_FILE"]).read_bytes().strip()
    records = run.load_journal(key).records
    assert records[-1]["type"] == "action_dispatched" and uncertain(records, CONSEQUENTIAL) and desk.rows(amount) == 0

    rc = flow(["reconcile", "--store", spec, "--json"], root, env)
    assert rc.returncode == 0 and run.state()["state"] == "INTERRUPTED", rc.stdout + rc.stderr
    for _ in range(4):  # the re-read of the uncertain write: ABSENT once its timeout passed → an operator's continue
        res = flow(["resume", "pg:crash", "--store", spec, "--json"], root, env)
        if res.returncode == 0:
            break
        st = run.state()
        assert (st["state"], st.get("paused_reason")) == ("PAUSED", "awaiting_approval"), res.stderr[-500:]
        ap = flow(["approve", "pg:crash", "--store", spec, "--decision", "continue", "--operator", "ops"], root, env)
        assert ap.returncode == 0, ap.stderr
    assert json.loads(res.stdout)["state"] == "COMPLETED", res.stdout + res.stderr
    assert desk.rows(amount) == 1  # exactly one row
    after = run.load_journal(key).records
    assert verified(after) == STEPS
    assert run.read_checkpoint()["next_index"] == len(STEPS)
    again = flow(["resume", "pg:crash", "--store", spec], root, env)
    assert again.returncode == 0 and desk.rows(amount) == 1  # resuming a COMPLETED run does nothing
