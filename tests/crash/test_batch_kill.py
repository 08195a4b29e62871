"""A `flow batch` SIGKILLed in the middle of an item, then run again: every item exactly once (issue 33).

Each case: a batch of one item (INV-1) done; the file grows to three items and the batch runs again with
FLOW_CRASH_AT naming a point of INV-2's run (its first run in that process, so the kill lands in INV-2); then the batch
runs again with nothing injected, and once more. Counted in the SQLite file the demo fixture saves to (FLOW_FIXTURE_DB):
every item's row exactly once, whatever the point — INV-2 is sent again only when nothing of it can have landed (its
run never reached its write, or the write, read again, was ABSENT), and otherwise it is reported, never re-sent.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.crash.crash_support import flow, flow_env
from tests.support.demo_invoices import BUNDLE, FIXTURES

pytestmark = pytest.mark.timeout(300)

ITEMS = {"INV-1": ("ACME", 12.5), "INV-2": ("Globex", 99.0), "INV-3": ("Initech", 7.25)}
# the start-up, a typed field, every journal point of the consequential save, the last step and the run's end
POINTS = [
    "start:dir_created",
    "start:manifest_written",
    "after:run_started",
    "after:action_sent@vendor",
    "after:effect_baseline@save",
    "after:action_dispatched@save",
    "after:action_sent@save",
    "after:postconditions@save",
    "after:effect_verified@save",
    "after:step_verified@save",
    "after:action_sent@back",
    "after:run_finished",
]
LANDED = {
    "after:action_sent@save",
    "after:postconditions@save",
    "after:effect_verified@save",
    "after:step_verified@save",
    "after:action_sent@back",
}


def _fast_bundle(root: Path) -> Path:
    """The demo bundle with its effect's timeout_s cut from 5 to 1: an uncertain write is read again that long after
    it was sent, before it is judged ABSENT."""
    dest = root / "bundle-fast"
    if not dest.exists():
        shutil.copytree(BUNDLE, dest)
        text = (dest / "flow.yaml").read_text()
        (dest / "flow.yaml").write_text(text.replace("timeout_s: 5", "timeout_s: 1"))
    return dest


def _items(path: Path, keys: list[str]) -> Path:
    path.write_text("invoice,vendor,amount\n" + "".join(f"{k},{ITEMS[k][0]},{ITEMS[k][1]}\n" for k in keys))
    return path


def _rows(db: Path) -> dict[str, int]:
    with sqlite3.connect(db) as conn:
        seen = conn.execute("SELECT vendor, amount, count(*) FROM invoices GROUP BY vendor, amount").fetchall()
    by = {(v, a): n for v, a, n in seen}
    assert sum(by.values()) == sum(by.get(v, 0) for v in ITEMS.values()), seen  # no row but the items' own
    return {k: by.get(v, 0) for k, v in ITEMS.items()}


@pytest.mark.parametrize("point", POINTS)
def test_a_batch_killed_mid_item_and_run_again_does_every_item_exactly_once(tmp_path, point):
    db = tmp_path / "app.db"
    env = flow_env(tmp_path, FLOW_FIXTURE_DB=str(db), DEMO_DB_DSN=f"sqlite:///{db}")
    bundle = _fast_bundle(tmp_path)
    items = tmp_path / "invoices.csv"
    args = ["batch", str(bundle), "--items", str(items), "--key", "invoice", "--url", f"fixture:{FIXTURES / 'normal'}"]

    _items(items, ["INV-1"])
    assert flow(args, tmp_path, env).returncode == 0
    _items(items, ["INV-1", "INV-2", "INV-3"])
    killed = flow(args, tmp_path, {**env, "FLOW_CRASH_AT": point})
    assert killed.returncode == -9, (point, killed.stdout, killed.stderr)
    assert _rows(db)["INV-3"] == 0  # the kill came in INV-2: INV-3 never started

    again = flow(args + ["--json"], tmp_path, env)
    events = [json.loads(x) for x in again.stdout.splitlines()]
    status = {e["key"]: e["status"] for e in events if e["event"] == "item"}
    assert _rows(db) == {"INV-1": 1, "INV-2": 1, "INV-3": 1}, (point, events, again.stderr)
    assert status["INV-1"] == "skipped_done" and status["INV-3"] == "done", (point, events)
    if point in LANDED:  # the write landed and the run did not finish: reported, never sent again
        assert status["INV-2"] == "failed_after_effect", (point, events)
        assert again.returncode == 1
    else:  # never reached the write, or the write was read again ABSENT: sent again; or the run had finished
        assert status["INV-2"] == ("skipped_done" if point == "after:run_finished" else "done"), (point, events)
        assert again.returncode == 0, (point, events)

    third = flow(args + ["--json"], tmp_path, env)
    events3 = [json.loads(x) for x in third.stdout.splitlines() if '"event": "item"' in x]
    assert _rows(db) == {"INV-1": 1, "INV-2": 1, "INV-3": 1}
    assert [e["status"] for e in events3 if e["key"] != "INV-2"] == ["skipped_done", "skipped_done"]
    assert next(e["status"] for e in events3 if e["key"] == "INV-2") == (
        "failed_after_effect" if point in LANDED else "skipped_done"
    )


# the point -> INV-2's status and rows after the batch runs again: a run cut before its manifest never began (sent
# again); past its first input, the fixture cannot be where the run was (paused); the click on Save landed (1 row)
DURABLE = {
    "after:run_started": ("done", 1),
    "after:step_verified@vendor": ("paused", 0),
    "after:action_dispatched@save": ("paused", 0),
    "after:action_sent@save": ("paused", 1),
}


@pytest.mark.parametrize("point", DURABLE)
def test_a_durable_batch_killed_mid_item_never_sends_an_item_twice(tmp_path, point):
    """A durable item's run is resumed, not sent again: the runtime re-reads its uncertain write and re-proves its
    checkpoint first. The recorded fixture starts again at its first screen, so a resume after the first input
    cannot re-prove where the run was: the item waits for an operator (paused), and nothing is ever sent twice."""
    db = tmp_path / "app.db"
    env = flow_env(
        tmp_path,
        FLOW_FIXTURE_DB=str(db),
        DEMO_DB_DSN=f"sqlite:///{db}",
        FLOW_DECISION_KEY_FILE=str(tmp_path / "decision.key"),
    )
    items = tmp_path / "invoices.csv"
    args = [
        "batch",
        str(_fast_bundle(tmp_path)),
        "--items",
        str(items),
        "--key",
        "invoice",
        "--durable",
        "--url",
        f"fixture:{FIXTURES / 'normal'}",
        "--json",
    ]
    _items(items, ["INV-1"])
    assert flow(args, tmp_path, env).returncode == 0
    _items(items, ["INV-1", "INV-2", "INV-3"])
    assert flow(args, tmp_path, {**env, "FLOW_CRASH_AT": point}).returncode == -9
    want, rows2 = DURABLE[point]
    for n in range(2):
        again = flow(args, tmp_path, env)
        status = {e["key"]: e["status"] for e in map(json.loads, again.stdout.splitlines()) if e["event"] == "item"}
        rows = _rows(db)
        assert status["INV-1"] == "skipped_done" and rows["INV-1"] == 1
        assert (status["INV-2"], rows["INV-2"]) == (want if n == 0 or want != "done" else "skipped_done", rows2), (
            point,
            status,
            again.stderr,
        )
        assert rows["INV-3"] <= 1, (point, rows)


def test_a_batch_stopped_by_sigterm_stops_at_a_safe_boundary_and_the_next_one_finishes_it(tmp_path):
    """SIGTERM (a service stop, Ctrl+C) in the middle of INV-2: its run stops at the next safe boundary (INTERRUPTED),
    INV-3 is not sent; the batch run again sends INV-2 afresh (nothing consequential was sent) and INV-3."""
    db = tmp_path / "app.db"
    env = flow_env(tmp_path, FLOW_FIXTURE_DB=str(db), DEMO_DB_DSN=f"sqlite:///{db}")
    items = tmp_path / "invoices.csv"
    args = [
        "batch",
        str(BUNDLE),
        "--items",
        str(items),
        "--key",
        "invoice",
        "--url",
        f"fixture:{FIXTURES / 'normal'}",
        "--json",
    ]
    _items(items, ["INV-1"])
    assert flow(args, tmp_path, env).returncode == 0
    _items(items, ["INV-1", "INV-2", "INV-3"])
    stopped = flow(args, tmp_path, {**env, "FLOW_CRASH_AT": "after:step_verified@vendor", "FLOW_CRASH_SIGNAL": "TERM"})
    events = [json.loads(x) for x in stopped.stdout.splitlines()]
    assert stopped.returncode == 1, (stopped.stdout, stopped.stderr)
    assert [e.get("status") for e in events[:-1]] == ["skipped_done", "halted", "not_run"]
    assert "stopped by signal" in events[1]["reason"] and "interrupted" in events[2]["reason"]
    assert json.loads((tmp_path / events[1]["run_dir"] / "state.json").read_text())["state"] == "INTERRUPTED"
    again = flow(args, tmp_path, env)
    assert [json.loads(x).get("status") for x in again.stdout.splitlines()][:-1] == ["skipped_done", "done", "done"]
    assert _rows(db) == {"INV-1": 1, "INV-2": 1, "INV-3": 1}


def _whole_change_bundle(root: Path) -> Path:
    """The fast demo bundle with its save's effect declared as the whole change (one invoices row added, holding the
    item's values) instead of a count: the uncertain write is read again by the whole-change verifier."""
    dest = root / "bundle-whole"
    if not dest.exists():
        shutil.copytree(_fast_bundle(root), dest)
        text = (dest / "flow.yaml").read_text()
        count = (
            "    query: SELECT count(*) FROM invoices WHERE vendor = :vendor AND amount = :amount\n"
            "    expect: {increase_by: 1}\n"
        )
        assert count in text
        whole = "    changes:\n      - table: invoices\n        added: {vendor: \"{vendor}\", amount: \"{amount}\"}\n"
        (dest / "flow.yaml").write_text(text.replace(count, whole))
    return dest


@pytest.mark.parametrize(
    "point,status", [("after:action_dispatched@save", "done"), ("after:action_sent@save", "failed_after_effect")]
)
def test_a_killed_items_whole_change_write_is_read_again_by_its_own_verifier(tmp_path, point, status):
    """A whole-change effect read again after a kill: ABSENT (nothing sent) sends the item again, CONFIRMED (the
    Save click landed) reports it; every item's row exactly once, the batch never fails on the re-read itself."""
    db = tmp_path / "app.db"
    env = flow_env(tmp_path, FLOW_FIXTURE_DB=str(db), DEMO_DB_DSN=f"sqlite:///{db}")
    bundle = _whole_change_bundle(tmp_path)
    items = tmp_path / "invoices.csv"
    args = ["batch", str(bundle), "--items", str(items), "--key", "invoice", "--url", f"fixture:{FIXTURES / 'normal'}"]
    _items(items, ["INV-1"])
    assert flow(args, tmp_path, env).returncode == 0
    _items(items, ["INV-1", "INV-2", "INV-3"])
    assert flow(args, tmp_path, {**env, "FLOW_CRASH_AT": point}).returncode == -9
    again = flow(args + ["--json"], tmp_path, env)
    events = [json.loads(x) for x in again.stdout.splitlines()]
    got = {e["key"]: e for e in events if e.get("event") == "item"}
    assert _rows(db) == {"INV-1": 1, "INV-2": 1, "INV-3": 1}, (point, events, again.stderr[-2000:])
    assert got["INV-2"]["status"] == status, (point, got["INV-2"], again.stderr[-2000:])
    assert "Traceback" not in again.stderr, again.stderr[-2000:]
