"""Fencing guards the input, not only the record (issue 34, finding 3): a `flow` process frozen (SIGSTOP) inside an
action — right after journaling its dispatch, or between two batches of the text it types — and woken after its
lease expired and another owner took the run sends the desktop nothing more. Counted AT THE DESKTOP: the run drives a
real Xvnc through an RFB relay that counts every KeyEvent and PointerEvent (tests/support/netns.py's RfbInputs), not
from the journal, which never shows a fenced process's input.

Before every input call the run's backend re-checks its lease (runtime/start/fenced.py); without that, the woken
process finished the action it was in (the click and 16+ key events of the vendor field) in a form that was no
longer its run's."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import psycopg
import pytest

from openadapt_flow.backends.fake import FakeBackend
from openadapt_flow.runtime.fleet.desks import DeskLost, Desks
from openadapt_flow.runtime.fleet.targets import load_targets
from openadapt_flow.runtime.start.fenced import FencedBackend
from openadapt_flow.store.lease import LeaseLost, boot_id, read_lease
from openadapt_flow.store.select import postgres_store
from tests.support.cli import flow_env
from tests.support.demo_invoices import BUNDLE
from tests.support.netns import Relay, RfbInputs
from tests.support.pg import store_spec
from tests.support.stopping import stop_procs
from tests.support.xserver import wait_until

pytestmark = pytest.mark.timeout(180)
TTL_S = 2.0
VENDOR = "ACME Corporation Worldwide"  # 26 characters: typed in four fenced batches


def _stopped(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"
    except OSError:
        return False


class Frozen:
    """A durable `flow replay` of the demo invoice on the demo app, through a counting relay, frozen at `point`."""

    def __init__(self, store: str, point: str, root: Path, app, spec: str | None) -> None:
        self.store, self.root, self.spec = store, root, spec
        self.inputs = RfbInputs()
        self.relay = Relay("127.0.0.1", app.xvnc.port, self.inputs)
        (root / "deploy.yaml").write_text(f"schema: openadapt-flow/config@1\nruntime: {{lease_ttl_s: {TTL_S}}}\n")
        self.ref = f"pg:fenced-{root.name[-12:].lower()}" if store == "postgres" else str(root / "runs" / "fenced")
        env = flow_env(
            root,
            DEMO_DB_DSN=f"sqlite:///{app.db_path}",
            FLOW_DECISION_KEY_FILE=str(root / "decision.key"),
            FLOW_CRASH_AT=point,
            FLOW_CRASH_SIGNAL="STOP",
        )
        args = [
            "replay",
            str(BUNDLE),
            "--url",
            f"vnc://127.0.0.1:{self.relay.port}",
            "--durable",
            "--run-dir",
            self.ref,
            "--config",
            str(root / "deploy.yaml"),
            "--param",
            f"vendor={VENDOR}",
            "--param",
            "amount=1250.50",
        ]
        if spec is not None:
            args += ["--store", spec]
        self.log = root / "flow.log"
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "openadapt_flow", *args], cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT
            )

    def lease_expired(self) -> bool:
        if self.store == "postgres":
            row = postgres_store(str(self.spec)).one(
                "SELECT l.expires_at <= now() FROM flow_leases l JOIN flow_runs r ON r.id = l.run WHERE r.name = %s",
                (self.ref.removeprefix("pg:"),),
            )
            return bool(row and row[0])
        info = read_lease(Path(self.ref))
        return info is not None and time.time() - info.heartbeat_epoch > TTL_S

    def take_over(self):
        """Another owner takes the expired lease: the store's own takeover on PostgreSQL (this process, its lock
        free to take since the row expired); on the filesystem, what an owner on another host writes (a process on
        this host cannot: the frozen one still holds the OS lock)."""
        if self.store == "postgres":
            return postgres_store(str(self.spec)).open_run(self.ref).lease(TTL_S).acquire()
        run = Path(self.ref)
        old = read_lease(run)
        assert old is not None
        body = {
            "schema": "openadapt-flow/lease@1",
            "host": f"not-{socket.gethostname()}",
            "pid": 4242,
            "start_time": None,
            "boot_id": boot_id(),
            "heartbeat_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "heartbeat_epoch": time.time(),
            "generation": old.generation + 1,
        }
        (run / "lease.json.tmp").write_text(json.dumps(body))
        os.replace(run / "lease.json.tmp", run / "lease.json")
        return None

    def close(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGCONT)
        stop_procs([self.proc])
        self.relay.close()


@pytest.mark.parametrize("point", ["after:action_dispatched@vendor", "input:batch"])
@pytest.mark.parametrize("store", ["postgres", "filesystem"])
def test_a_process_frozen_inside_an_action_sends_no_input_after_its_lease_was_taken(
    store, point, request, tmp_path, monkeypatch
):
    spec = (
        store_spec(request.getfixturevalue("pg_server"), f"fi_{tmp_path.name[-12:].lower()}", monkeypatch)
        if store == "postgres"
        else None
    )
    app = request.getfixturevalue("demo_app")("normal")
    run = Frozen(store, point, tmp_path, app, spec)
    new_owner = None
    try:
        wait_until(lambda: _stopped(run.proc.pid) or run.proc.poll() is not None, 90, f"flow frozen at {point}")
        assert run.proc.poll() is None, run.log.read_text()
        # what the frozen process sent before it stopped reaches the relay (its own threads forward it): the
        # open-form click, and frozen mid-typing, the vendor's first batch (8 characters, 16 key events)
        keys = 2 * 8 if point == "input:batch" else 0
        wait_until(
            lambda: 5 in run.inputs.kinds and run.inputs.kinds.count(4) >= keys, 10, "the inputs sent before the freeze"
        )
        assert not run.inputs.errors, run.inputs.errors
        wait_until(run.lease_expired, 30, "the frozen owner's lease expired")
        new_owner = run.take_over()
        taken = time.monotonic()

        os.kill(run.proc.pid, signal.SIGCONT)
        code = run.proc.wait(timeout=60)

        late = run.inputs.count("127.0.0.1", after=taken)
        assert late == 0, f"{late} inputs reached the desktop after another owner took the run:\n{run.log.read_text()}"
        assert code == 6 and "must not act" in run.log.read_text(), (code, run.log.read_text())
        assert not run.inputs.errors
    finally:
        if new_owner is not None:
            new_owner.release()
        run.close()


def test_input_stops_the_moment_the_desktops_lock_session_is_gone(pg_server, tmp_path, monkeypatch):
    """The server ended the session that holds a fleet worker's desktop lock (what it does to a host that stopped
    answering): another worker may take that desktop now, so the run on it sends no further input — not the rest of
    the text it is typing. The desk's fence, as the fleet hands it to the run (ReplayRequest.fence)."""
    spec = store_spec(pg_server, f"fd_{tmp_path.name[-12:].lower()}", monkeypatch)
    (tmp_path / "t.yaml").write_text(
        'schema: openadapt-flow/targets@1\ntargets: [{name: desk0, backend: {url: "vnc://127.0.0.1:5999"}}]\n'
    )
    desks = Desks(spec, load_targets(tmp_path / "t.yaml"))
    fake = FakeBackend(np.zeros((40, 40, 3), np.uint8))
    try:
        with desks.hold(None) as target:
            backend = FencedBackend(fake, desks.fence(target.name))
            backend.type_text("ACME")  # held: typed
            pid = desks._sessions[target.name].info.backend_pid
            ended = []

            def server_ends_the_session_after_the_first_batch(b: FakeBackend, ev: tuple) -> None:
                if not ended:
                    with psycopg.connect(spec, autocommit=True) as c:
                        ended.append(c.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone()[0])
                    wait_until(lambda: not _alive(spec, pid), 10, "the desk session gone")

            fake.on_event = server_ends_the_session_after_the_first_batch
            with pytest.raises(DeskLost) as lost:
                backend.type_text("ACME Corporation Worldwide")
            assert isinstance(lost.value, LeaseLost) and ended == [True]  # fenced as a lost lease is
            assert [e[1] for e in fake.events] == ["ACME", "ACME Cor"]  # the batch in flight, then nothing
            with pytest.raises(DeskLost):
                backend.click(5, 5)
            assert fake.events[-1] == ("type", "ACME Cor")
    finally:
        desks.close()


def _alive(spec: str, pid: int) -> bool:
    with psycopg.connect(spec, autocommit=True) as c:
        return bool(c.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()[0])
