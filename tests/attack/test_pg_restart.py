"""PostgreSQL restarted under the fleet and under a run (issue 34, findings 1 and 2): a real server, restarted with
`pg_ctl restart -m fast` (a clean shutdown) and `-m immediate` (a crash, recovered from its WAL).

- A run's writer restarted right after the Submit click (`action_sent`, committed asynchronously, lost by the crash):
  its journal stays continuous (the writer re-reads the durable tail before it appends again), and resume/reconcile
  finish the run with exactly one row.
- Fleet workers, idle and mid-drain: each rides through the restart (reconnects, logs it, keeps draining); a run
  submitted after the restart completes; and a worker whose store never comes back exits 75 with one line.

Each test has its own server (a restart would cut every other test's sessions). The server's WAL writer waits 10 s
between flushes here, so an asynchronously committed record is still in its buffers when the crash comes (by default
it is flushed within 200 ms: the same loss, at a rate that depends on timing)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from openadapt_flow.store import PostgresStore
from tests.crash.crash_support import (  # noqa: F401  (desk: the crash matrix's desktop fixture)
    CONSEQUENTIAL, STEPS, Desktop, desk, flow, uncertain, verified,
)
from tests.support.pg import PgServer, start_pg, store_spec, why_not_available
from tests.support.xserver import wait_until

pytestmark = [pytest.mark.timeout(300),
              pytest.mark.skipif(why_not_available() is not None, reason=str(why_not_available()))]

LAZY_WAL = "-c wal_writer_delay=10000 -c wal_writer_flush_after=0"  # async commits stay in the WAL buffers for 10 s


@pytest.fixture
def own_pg() -> Iterator[PgServer]:
    server = start_pg(settings=LAZY_WAL)
    try:
        yield server
    finally:
        server.stop()


def _stopped(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"
    except OSError:
        return False


def _journal_seqs(spec: str, password: str, name: str) -> list[tuple[int, str]]:
    with psycopg.connect(spec, autocommit=True, password=password) as c:
        return [(int(s), t) for s, t in c.execute(
            "SELECT j.seq, j.type FROM flow_journal j JOIN flow_runs r ON r.id = j.run WHERE r.name = %s ORDER BY j.seq",
            (name,)).fetchall()]


@pytest.mark.parametrize("mode", ["immediate", "fast"])
def test_a_writer_restarted_right_after_its_submit_keeps_a_continuous_journal_and_resumes_to_one_row(
        desk: Desktop, own_pg: PgServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str):
    spec = store_spec(own_pg, f"w_{tmp_path.name.lower()}", monkeypatch)
    root, amount = desk.case()
    env = dict(desk.env(), PGPASSWORD=own_pg.password)
    args = desk.replay_args(Path("unused"), amount, desk.fast_bundle())
    args[args.index("--run-dir") + 1] = "pg:restart"
    frozen = dict(env, FLOW_CRASH_AT=f"after:action_sent@{CONSEQUENTIAL}", FLOW_CRASH_SIGNAL="STOP")
    out = open(tmp_path / "writer.log", "wb")
    writer = subprocess.Popen([sys.executable, "-m", "openadapt_flow", *args, "--store", spec], cwd=root, env=frozen,
                              stdout=out, stderr=subprocess.STDOUT)
    try:
        # the writer froze itself right after journaling its Submit click's action_sent (the row is in the app)
        wait_until(lambda: _stopped(writer.pid) or writer.poll() is not None, 120, "the writer frozen after action_sent")
        assert writer.poll() is None, (tmp_path / "writer.log").read_text()[-2000:]
        own_pg.restart(mode)
        os.kill(writer.pid, signal.SIGCONT)  # it wakes up with every connection cut and goes on
        writer.wait(120)
    finally:
        if writer.poll() is None:
            os.kill(writer.pid, signal.SIGCONT)
            writer.kill()
            writer.wait(10)
    log = (tmp_path / "writer.log").read_text()
    assert desk.rows(amount) == 1, log[-2000:]
    seqs = _journal_seqs(spec, own_pg.password, "restart")
    assert [s for s, _ in seqs] == list(range(1, len(seqs) + 1)), seqs  # no hole, whatever the crash lost
    store = PostgresStore(spec)
    run = store.open_run("pg:restart")
    key = Path(env["FLOW_KEY_FILE"]).read_bytes().strip()
    run.load_journal(key)  # the chain verifies: no "journal chain broken"

    for _ in range(4):  # resume: the uncertain save is re-read (the row is there: CONFIRMED), or an operator decides
        res = flow(["resume", "pg:restart", "--store", spec, "--json"], root, env)
        if res.returncode == 0:
            break
        st = run.state()
        assert (st["state"], st.get("paused_reason")) == ("PAUSED", "awaiting_approval"), res.stdout + res.stderr[-800:]
        ap = flow(["approve", "pg:restart", "--store", spec, "--decision", "reconcile", "--operator", "ops"], root, env)
        assert ap.returncode == 0, ap.stderr
    assert json.loads(res.stdout)["state"] == "COMPLETED", res.stdout + res.stderr[-800:]
    assert desk.rows(amount) == 1  # exactly one row: the save was never sent again
    after = run.load_journal(key).records
    assert verified(after) == STEPS
    assert [r["seq"] for r in after] == list(range(1, len(after) + 1))
