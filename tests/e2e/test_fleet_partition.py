"""A real network partition of a fleet worker (SPEC §19, issue 15): the worker runs in its own network namespace and
reaches PostgreSQL and its fixture desktop only through a veth; its packets are dropped silently (tests/support/netns.py)
past its lease TTL, so another worker's reconciler finalises its run and resumes it; when the partition heals, the
cut-off worker sends no further input to the desktop (counted there, from its RFB stream), the store refuses its next
write with LeaseLost, and the run completes exactly once, with one row in the system of record."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from openadapt_flow.runtime.fleet.submit import submit
from tests.support.cli import REPO, flow_env
from tests.support.demo_invoices import BUNDLE, invoice_rows
from tests.support.netns import Gate, Namespace, Relay, RfbInputs
from tests.support.pg import PgServer, pg_server, store_spec  # noqa: F401 — pg_server: the session's server
from tests.support.stopping import stop_procs
from tests.support.xserver import free_port, wait_until

pytestmark = pytest.mark.timeout(120)
TTL_S = 5
# `flow` with procrastinate's job outcomes logged ("… ended with status: Success, … - Result: fenced: …"): a fenced
# job ends quietly otherwise, and its result is how the test sees the store's LeaseLost in the cut-off worker
FLOW_LOGGING_JOBS = (
    "import logging; logging.basicConfig(format='%(name)s %(message)s'); "
    "logging.getLogger('procrastinate.worker').setLevel(logging.INFO); "
    "from openadapt_flow.cli.app import main; main()"
)


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


class PartitionedFleet:
    """One fixture desktop and PostgreSQL on loopback, both relayed onto the root side of a namespace's veth; the
    desktop's URL (in the shared targets file) is the relay's, so every worker's input is counted by `inputs`."""

    def __init__(self, tmp: Path, server: PgServer, spec: str) -> None:
        self.tmp, self.spec = tmp, spec
        self.procs: list[subprocess.Popen[bytes]] = []
        self.relays: list[Relay] = []
        self.inputs = RfbInputs()
        self.ns = Namespace()
        try:
            self._start(server)
        except BaseException:
            self.close()
            raise

    def _start(self, server: PgServer) -> None:
        tmp, spec = self.tmp, self.spec
        self.db = tmp / "app.db"
        self.env = flow_env(tmp, PGPASSWORD=server.password, DEMO_DB_DSN=f"sqlite:///{self.db}")
        port = free_port()
        self._spawn(
            [],
            [
                "fixture",
                "serve",
                str(REPO / "fixtures" / "normal"),
                "--keep-state",
                "--port",
                str(port),
                "--db",
                str(self.db),
            ],
            "desk",
        )
        wait_until(lambda: _listening(port), 30, f"fixture desktop on {port}")
        # the hold point: the namespace's worker recording `save`'s dispatch (flow_append's Bind message carries both
        # as parameters, each after its 4-byte length)
        self.gate = Gate(b"\x00\x00\x00\x11action_dispatched", b"\x00\x00\x00\x04save")
        self.relays = [Relay(self.ns.outer, port, self.inputs), Relay(self.ns.outer, server.port, self.gate)]
        self.ns_spec = spec.replace(f"127.0.0.1:{server.port}", f"{self.ns.outer}:{self.relays[1].port}")
        self.targets = tmp / "targets.yaml"
        self.targets.write_text(
            "schema: openadapt-flow/targets@1\ntargets:\n"
            f'  - {{name: desk0, labels: [invoices], backend: {{kind: vnc, url: "vnc://{self.ns.outer}:{self.relays[0].port}"}}}}\n'
        )
        (tmp / "deploy.yaml").write_text(f"schema: openadapt-flow/config@1\nruntime: {{lease_ttl_s: {TTL_S}}}\n")

    def _spawn(self, prefix: list[str], args: list[str], log: str) -> subprocess.Popen[bytes]:
        with open(self.tmp / f"{log}.log", "wb") as out:
            proc = subprocess.Popen(
                [*prefix, sys.executable, "-c", FLOW_LOGGING_JOBS, *args],
                cwd=self.tmp,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        self.procs.append(proc)
        return proc

    def worker(self, name: str, partitioned: bool) -> subprocess.Popen[bytes]:
        """A fleet worker in the namespace (through the relays) or in the root namespace (PostgreSQL directly)."""
        prefix = self.ns.command([]) if partitioned else []
        return self._spawn(
            prefix,
            [
                "worker",
                "--store",
                self.ns_spec if partitioned else self.spec,
                "--targets",
                str(self.targets),
                "--config",
                str(self.tmp / "deploy.yaml"),
                "--name",
                name,
            ],
            name,
        )

    def sql(self, query: str, *args: object) -> list[tuple]:
        with psycopg.connect(self.spec, autocommit=True, password=self.env["PGPASSWORD"]) as c:
            return c.execute(query, args).fetchall()  # type: ignore[arg-type]

    def journal(self, name: str) -> list[tuple[str, str | None, int | None]]:
        """(type, step, lease generation of an action_dispatched) of every record of run `name`, in order."""
        rows = self.sql(
            "SELECT j.type, j.step, j.line FROM flow_journal j JOIN flow_runs r ON r.id = j.run "
            "WHERE r.name = %s ORDER BY j.seq",
            name,
        )
        return [
            (t, s, json.loads(bytes(line))["data"].get("lease_generation") if t == "action_dispatched" else None)
            for t, s, line in rows
        ]

    def log(self, name: str) -> str:
        return (self.tmp / f"{name}.log").read_text(errors="replace")

    def close(self) -> None:
        try:
            stop_procs(self.procs)
            for r in self.relays:
                r.close()
        finally:
            self.ns.close()


@pytest.fixture
def fleet(pg_server: PgServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[PartitionedFleet]:
    spec = store_spec(pg_server, f"p_{tmp_path.name.lower()}", monkeypatch)
    f = PartitionedFleet(tmp_path, pg_server, spec)
    try:
        yield f
    finally:
        f.close()


def test_a_worker_partitioned_from_postgresql_past_its_lease_is_fenced_and_the_run_completes_once(fleet):
    name = submit(fleet.spec, BUNDLE, {"vendor": "ACME Corp", "amount": "1250.50"}, "invoices").removeprefix("pg:")
    cut_off = fleet.worker("w1", partitioned=True)
    wait_until(lambda: fleet.journal(name), 60, "the worker in the namespace started the run")
    fleet.worker("w2", partitioned=False)  # starts up meanwhile; idle: the only run is w1's
    wait_until(fleet.gate.held.is_set, 60, "w1 sending `save`'s action_dispatched (held at the relay)")
    fleet.ns.cut()  # between two steps: `amount` verified, `save`'s dispatch not yet recorded, no input in flight
    cut_at = fleet.ns.cut_at
    assert cut_at is not None
    before = fleet.inputs.count(fleet.ns.inner)
    wait_until(
        lambda: "interrupted" in [t for t, _, _ in fleet.journal(name)],
        30,
        "w2's reconciler finalising the partitioned worker's run INTERRUPTED (its lease expired)",
    )
    assert cut_off.poll() is None  # a silent partition: no error took the worker down, it is still waiting on TCP
    fleet.ns.heal()
    fleet.gate.release()  # the dispatch record caught in the partition reaches PostgreSQL now
    fenced = re.compile(
        rf"Job flow\.start\[\d+\]\(name='{name}'\) ended with status: Success, .* - Result: fenced: "
        rf"pg:{name}: lease generation \d+ is no longer held"
    )
    wait_until(lambda: fenced.search(fleet.log("w1")), 30, "the store refusing w1's `save` dispatch (LeaseLost)")
    wait_until(
        lambda: fleet.sql("SELECT state FROM flow_runs WHERE name = %s", name) == [("COMPLETED",)],
        30,
        "the run resumed under a new lease and COMPLETED",
    )
    # the cut-off run attempt (its desktop connection, opened before the cut) sent nothing after the cut
    assert before > 0 and fleet.inputs.count(fleet.ns.inner, opened_before=cut_at, after=cut_at) == 0
    assert fleet.inputs.count(fleet.ns.inner, after=cut_at) + fleet.inputs.count(fleet.ns.outer, after=cut_at) > 0
    assert fleet.inputs.errors == []
    records = fleet.journal(name)
    cut = [t for t, _, _ in records].index("interrupted")
    first = {g for t, _, g in records[:cut] if t == "action_dispatched"}
    then = {g for t, _, g in records[cut:] if t == "action_dispatched"}
    assert len(first) == 1 and then and min(then) > max(first), records  # every later input under a new lease
    saves = [i for i, (t, s, _) in enumerate(records) if t == "action_dispatched" and s == "save"]
    assert len(saves) == 1 and saves[0] > cut, records  # the held dispatch was refused; the resumed run's went through
    assert sorted(invoice_rows(fleet.db)) == [("ACME Corp", 1250.5)]
    assert fleet.sql("SELECT count(*) FROM flow_runs") == [(1,)]
