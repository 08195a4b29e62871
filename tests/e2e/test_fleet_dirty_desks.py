"""Clean and dirty desktops (spec §22) on a real PostgreSQL with a fleet worker and one served fixture desktop whose
app keeps its state between connections: a run that halted after typing leaves the form open; the next run is handed
that desktop only once its bundle's reset brought the app back to the start state — or, with no reset, not at all until
an operator marks it clean. Inputs are counted at the desktop, through an RFB relay (tests/support/netns.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import yaml

from openadapt_flow.runtime.fleet.submit import submit
from tests.support.cli import REPO, flow_env, run_flow
from tests.support.demo_invoices import BUNDLE, invoice_rows
from tests.support.netns import Relay, RfbInputs
from tests.support.pg import PgServer, pg_server, store_spec  # noqa: F401 — pg_server: the session's server
from tests.support.stopping import stop_procs
from tests.support.xserver import free_port, wait_until

pytestmark = pytest.mark.timeout(180)
KEY, POINTER = 4, 5  # RFB client message types
START = """start:
  - text_present: Invoices
    region: [44, 33, 134, 23]
  - text_absent: Vendor
    region: [41, 122, 72, 15]
"""
RESET = """reset:
  steps:
    - id: discard
      intent: Close the open form, discarding it
      action: key
      keys: [escape]
      expect:
        - text_present: Invoices
          region: [44, 33, 134, 23]
"""
SETTLED = {"COMPLETED", "PAUSED", "HALTED", "FAILED", "BLOCKED", "FAILED_AFTER_EFFECT"}


def _bundle(tmp: Path, name: str, *, reset: bool, halts: bool) -> Path:
    """The demo bundle with a start state (and a reset by steps); `halts`: its save button is looked for as a text the
    form never shows, so the run halts after typing both fields — the form left open, nothing saved."""
    out = tmp / name
    shutil.copytree(BUNDLE, out)
    flow = out / "flow.yaml"
    text = flow.read_text().replace("steps:\n", START + (RESET if reset else "") + "steps:\n", 1)
    if halts:
        text = text.replace("    template: templates/save.png\n", "", 1).replace(
            "    text: Save\n", "    text: Submit now\n", 1
        )
        text = text.replace("  consequential: true\n", "  consequential: true\n  timeout_s: 2\n", 1)
    flow.write_text(text)
    return out


class Desk:
    """One served fixture desktop (the demo app's recording, plus Escape closing the form) behind an input-counting
    relay, one fleet worker driving it, and the store."""

    def __init__(self, tmp: Path, spec: str, password: str) -> None:
        self.tmp, self.spec = tmp, spec
        self.db = tmp / "app.db"
        self.env = flow_env(tmp, PGPASSWORD=password, DEMO_DB_DSN=f"sqlite:///{self.db}")
        fixture = tmp / "fixture"
        shutil.copytree(REPO / "fixtures" / "normal", fixture)
        doc = yaml.safe_load((fixture / "fixture.yaml").read_text())
        doc["transitions"].append({"from": "s2", "on": {"event": "key", "key": "escape"}, "to": "s1"})
        (fixture / "fixture.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
        port = free_port()
        self.procs: list[subprocess.Popen[bytes]] = []
        self._spawn(
            ["fixture", "serve", str(fixture), "--keep-state", "--port", str(port), "--db", str(self.db)], "serve"
        )
        self.inputs = RfbInputs()
        wait_until(lambda: _listening(port), 30, "the fixture desktop")
        self.relay = Relay("127.0.0.1", port, self.inputs)
        (tmp / "targets.yaml").write_text(
            "schema: openadapt-flow/targets@1\ntargets:\n  - {name: desk0, backend: "
            f'{{kind: vnc, url: "vnc://127.0.0.1:{self.relay.port}"}}}}\n'
        )
        (tmp / "deploy.yaml").write_text("schema: openadapt-flow/config@1\nruntime: {lease_ttl_s: 5}\n")
        self.log = tmp / "w1.log"
        self._spawn(
            [
                "worker",
                "--store",
                spec,
                "--targets",
                str(tmp / "targets.yaml"),
                "--config",
                str(tmp / "deploy.yaml"),
                "--name",
                "w1",
            ],
            "w1",
        )

    def _spawn(self, args: list[str], log: str) -> None:
        out = open(self.tmp / f"{log}.log", "wb")
        self.procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "openadapt_flow", *args],
                cwd=self.tmp,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        )

    def state(self, ref: str) -> str | None:
        with psycopg.connect(self.spec, autocommit=True, password=self.env["PGPASSWORD"]) as c:
            row = c.execute("SELECT state FROM flow_runs WHERE name = %s", (ref.removeprefix("pg:"),)).fetchone()
        return row[0] if row else None

    def settled(self, ref: str) -> str:
        wait_until(lambda: self.state(ref) in SETTLED, 90, f"{ref} settled")
        return str(self.state(ref))

    def flow(self, *args: str) -> subprocess.CompletedProcess[str]:
        return run_flow([*args, "--store", self.spec], self.tmp, self.env)

    def dirty(self) -> list[dict[str, str]]:
        r = self.flow("desk", "list", "--json")
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)

    def events_after(self, t: float) -> list[tuple[int, int]]:
        """(connection number, message type) of every input that reached the desktop after monotonic time `t`."""
        return [(c, k) for (c, at), k in zip(self.inputs.events, self.inputs.kinds) if at > t]

    def close(self) -> None:
        stop_procs(self.procs)
        self.relay.close()


def _listening(port: int) -> bool:
    import socket

    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture
def desk(pg_server: PgServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Desk]:
    d = Desk(tmp_path, store_spec(pg_server, f"d_{tmp_path.name.lower()}", monkeypatch), pg_server.password)
    try:
        yield d
    finally:
        d.close()


def _halted_first(desk: Desk, reset: bool) -> tuple[str, float]:
    """A run that halts after typing into the form; the desktop is dirty with it. Its ref, and when it settled."""
    halted = submit(
        desk.spec, _bundle(desk.tmp, "halts", reset=reset, halts=True), {"vendor": "Halt Co", "amount": "64.5"}, None
    )
    assert desk.settled(halted) == "PAUSED"  # durable: the halt waits for an operator
    ended = time.monotonic()
    marked = [("desk0", halted, f"run {halted} ended PAUSED")]  # written by the worker just after the run's end
    wait_until(lambda: [(d["desk"], d["run"], d["reason"]) for d in desk.dirty()] == marked, 30, "the desktop dirty")
    return halted, ended


def test_a_halted_runs_desktop_is_reset_before_the_next_run_sends_anything(desk):
    halted, ended = _halted_first(desk, reset=True)
    assert desk.inputs.errors == [] and desk.events_after(0), "the halted run typed into the form"
    nxt = submit(
        desk.spec, _bundle(desk.tmp, "next", reset=True, halts=False), {"vendor": "Next Co", "amount": "31.25"}, None
    )
    assert desk.settled(nxt) == "COMPLETED", desk.flow("status", nxt).stdout  # on main: PAUSED at its start check
    assert invoice_rows(desk.db) == [("Next Co", 31.25)]  # the halted item's typing was never saved
    after = desk.events_after(ended)
    conns = list(dict.fromkeys(c for c, _ in after))  # connections that sent input, in the order they did
    first_keys = [k for c, k in after if c == conns[0]]
    assert first_keys.count(KEY) == 2, after  # the reset's Escape (down, up) came first, on a connection of its own…
    assert all(c != conns[0] for c, _ in after[len(first_keys) :]), after  # …before any input of the next run
    assert len(conns) >= 2 and desk.inputs.errors == []
    wait_until(lambda: desk.dirty() == [], 30, "the desktop clean: the run that followed the reset completed")
    assert "desktop desk0 reset (run " in desk.log.read_text()


def test_without_a_reset_a_dirty_desktop_waits_for_an_operator_and_the_start_check_still_guards(desk):
    halted, ended = _halted_first(desk, reset=False)
    nxt = submit(
        desk.spec, _bundle(desk.tmp, "next", reset=False, halts=False), {"vendor": "Next Co", "amount": "31.25"}, None
    )
    told = "desktop desk0 is dirty (run {} ended PAUSED): the bundle 'demo-invoice' has no reset".format(halted)
    wait_until(lambda: told in desk.log.read_text(), 60, "the worker saying why it passes the desktop over")
    assert "flow desk clean desk0" in desk.log.read_text()
    assert desk.state(nxt) == "PENDING" and desk.events_after(ended) == []  # not handed the desktop: nothing sent

    bad = desk.flow("desk", "clean", "desk9")
    assert (
        bad.returncode == 2
        and bad.stderr.strip() == "error: desktop 'desk9' is not dirty (`flow desk list` names the dirty ones)"
    )
    cleaned = desk.flow("desk", "clean", "desk0")
    assert (
        cleaned.returncode == 0
        and cleaned.stdout.strip() == f"desk0: marked clean (was dirty: run {halted} ended PAUSED)"
    )
    # the operator was wrong (the form is still open): the run's own start check halts it before any input
    assert desk.settled(nxt) == "PAUSED"
    status = json.loads(desk.flow("status", nxt, "--json").stdout)
    assert "not where the recording started" in json.dumps(status), status
    assert [k for _, k in desk.events_after(ended)].count(KEY) == 0 and invoice_rows(desk.db) == []
    assert [d["run"] for d in desk.dirty()] == [nxt]
