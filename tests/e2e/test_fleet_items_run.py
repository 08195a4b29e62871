"""The runs of `flow submit --items` executed by fleet workers on a real PostgreSQL and four served fixture desktops
that save into one system of record: a worker SIGKILLed mid-item, another picking up — every item's row exactly once,
none twice, and the killed item's desktop clean again once its own run completed there."""

from __future__ import annotations

import json
import signal
import subprocess

import pytest

from tests.e2e.test_fleet import Fleet, _all, _journal_types, _saves, _sql, _stuck, fleet  # noqa: F401 — fleet: fixture
from tests.support.demo_invoices import BUNDLE
from tests.support.pg import pg_server  # noqa: F401 — the session's server, for the fleet fixture
from tests.support.xserver import wait_until

pytestmark = pytest.mark.timeout(240)
ITEMS = [
    ("INV-1", "Acme", "12.5"),
    ("INV-2", "Globex", "99"),
    ("INV-3", "Initech", "7.25"),
    ("INV-4", "Umbrella", "3"),
    ("INV-5", "Hooli", "41"),
    ("INV-6", "Stark", "18.75"),
]


def _killable(fleet: Fleet, names: list[str], worker: subprocess.Popen[bytes]) -> str | None:
    """SIGSTOP the worker; keep it stopped (and name the run) if one of its runs is mid-item with no input in flight —
    a step verified after the last dispatch, its save still to send; else let it go on."""
    worker.send_signal(signal.SIGSTOP)
    saves = _saves(fleet, names)
    for name, state in fleet.states(names).items():
        if state != "RUNNING" or saves.get(name):
            continue
        types = _journal_types(fleet, name)
        dispatched = [i for i, t in enumerate(types) if t == "action_dispatched"]
        verified = [i for i, t in enumerate(types) if t == "step_verified"]
        if dispatched and verified and verified[-1] > dispatched[-1]:
            return name
    worker.send_signal(signal.SIGCONT)
    return None


def test_submitted_items_run_exactly_once_when_a_worker_is_killed_mid_item(fleet):
    items = fleet.tmp / "invoices.csv"
    items.write_text("invoice,vendor,amount\n" + "".join(f"{k},{v},{a}\n" for k, v, a in ITEMS))
    args = ["submit", str(BUNDLE), "--items", str(items), "--key", "invoice", "--json", "--store", fleet.spec]
    from tests.support.cli import run_flow

    queued = json.loads(run_flow(args, fleet.tmp, fleet.env).stdout)
    names = [q["run_id"].removeprefix("pg:") for q in queued]
    assert len(names) == len(ITEMS) and all(q["queued"] for q in queued)

    doomed = fleet._spawn(
        [
            "worker",
            "--store",
            fleet.spec,
            "--targets",
            str(fleet.targets),
            "--config",
            str(fleet.tmp / "deploy.yaml"),
            "--name",
            "w1",
            "--concurrency",
            "1",
        ],
        "w1",
    )
    killed: list[str] = []

    def mid_item() -> bool:
        name = _killable(fleet, names, doomed)
        if name is not None:
            killed.append(name)
        return name is not None

    wait_until(mid_item, 90, "the worker frozen mid-item, between two steps")
    doomed.send_signal(signal.SIGKILL)
    doomed.wait(10)
    [victim] = killed
    assert fleet.states([victim]) == {victim: "RUNNING"}  # its owner vanished; the store was not told
    dirty = _sql(fleet, "SELECT run_ref, reason FROM flow_desk_dirty")
    assert dirty == [(f"pg:{victim}", f"run pg:{victim} began on it and has not ended")]  # a killed run leaves it dirty

    again = json.loads(run_flow(args, fleet.tmp, fleet.env).stdout)  # the file submitted again after the crash
    assert [q["queued"] for q in again] == [False] * len(ITEMS)
    for w in ("w2", "w3"):
        fleet.worker(w)
    try:
        wait_until(lambda: _all(fleet, names, "COMPLETED"), 150, "every item's run COMPLETED")
    except TimeoutError:
        raise AssertionError(_stuck(fleet, names)) from None
    assert _journal_types(fleet, victim).count("interrupted") == 1
    assert _saves(fleet, names) == {n: 1 for n in names}  # each item's write sent once
    assert sorted(fleet.rows()) == sorted((v, float(a)) for _, v, a in ITEMS)  # each item's row once, none twice
    assert _sql(fleet, "SELECT count(*) FROM flow_runs") == [(len(ITEMS),)]
    # the killed item's run completed on its desktop: clean again (written by its worker just after the run's end)
    wait_until(lambda: _sql(fleet, "SELECT count(*) FROM flow_desk_dirty") == [(0,)], 30, "every desktop clean")
