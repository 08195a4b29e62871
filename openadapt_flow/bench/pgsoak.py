"""The PostgreSQL restart soak (issue 34; `make soak`): runs queued on fleet workers while the store's server is
restarted twice mid-drain (`pg_ctl restart -m fast`, then `-m immediate`), on the fleet bench's rig (a throwaway
PostgreSQL with fsync on, served fixture desktops: runtime/fleet on real RFB).

What it checks, printed as one figure line (and exit 1 if any does not hold):
- every run ends terminal (COMPLETED, FAILED, BLOCKED; or INTERRUPTED with a step dispatched and never verified,
  which waits for an operator's `flow resume`: spec §19) or PAUSED with a reason — nothing left PENDING or RUNNING;
- no worker gone: each is still running, and heartbeats on the restarted server;
- 0 double rows: no run dispatched its save twice, and the system of record holds no more rows than saves dispatched;
- 0 wrong rows: every row is the submitted invoice.

    python -m openadapt_flow.bench.pgsoak [--runs 8] [--workers 2] [--desks 6]
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from openadapt_flow.bench.engine_cost import bench_env
from openadapt_flow.bench.fleet import PARAMS, Rig, bundles
from openadapt_flow.demo.xvnc import wait_until
from openadapt_flow.procs import stop_process
from openadapt_flow.records.states import RecordType, RunState, is_a
from openadapt_flow.runtime.fleet.submit import submit

SETTLED = (RunState.COMPLETED, RunState.FAILED, RunState.BLOCKED, RunState.PAUSED)
RESTARTS = ("fast", "immediate")
INVOICE = ("ACME Corp", 1250.5)


def _open_steps(rig: Rig, name: str) -> set[str]:
    """Steps the run dispatched and never verified (or skipped)."""
    open_steps: set[str] = set()
    with rig.connect() as c:
        for t, step in c.execute(
            "SELECT j.type, j.step FROM flow_journal j JOIN flow_runs r ON r.id = j.run "
            "WHERE r.name = %s ORDER BY j.seq",
            (name,),
        ).fetchall():
            rec = {"type": t}
            if is_a(rec, RecordType.ACTION_DISPATCHED):
                open_steps.add(step)
            elif is_a(rec, RecordType.STEP_VERIFIED, RecordType.STEP_SKIPPED):
                open_steps.discard(step)
    return open_steps


def _states(rig: Rig, names: list[str]) -> dict[str, str]:
    with rig.connect() as c:
        return {
            str(n): str(s)
            for n, s in c.execute("SELECT name, state FROM flow_runs WHERE name = ANY(%s)", (names,)).fetchall()
        }


def _settled(rig: Rig, names: list[str]) -> bool:
    states = _states(rig, names)
    return len(states) == len(names) and all(
        s in SETTLED or (s == RunState.INTERRUPTED and _open_steps(rig, n)) for n, s in states.items()
    )


def _mid_drain(rig: Rig, names: list[str], after: int) -> bool:
    """At least `after` runs settled, and a run on a desktop has sent input since its last verified step."""
    states = _states(rig, names)
    done = sum(1 for s in states.values() if s in SETTLED)
    return done >= after and any(s == RunState.RUNNING and _open_steps(rig, n) for n, s in states.items())


def _saves(rig: Rig, names: list[str]) -> dict[str, int]:
    with rig.connect() as c:
        rows = c.execute(
            "SELECT r.name, count(j.seq) FROM flow_runs r LEFT JOIN flow_journal j ON j.run = r.id "
            "AND j.type = 'action_dispatched' AND j.step = 'save' WHERE r.name = ANY(%s) GROUP BY r.name",
            (names,),
        ).fetchall()
    return {str(n): int(k) for n, k in rows}


def _rows(rig: Rig) -> list[tuple[str, float]]:
    if not rig.db.exists():
        return []
    with sqlite3.connect(rig.db) as c:
        return [(str(v), float(a)) for v, a in c.execute("SELECT vendor, amount FROM invoices").fetchall()]


def soak(work: Path, runs: int = 8, n_workers: int = 2, desks: int = 6, timeout_s: float = 600.0) -> dict[str, Any]:
    """The soak's figures (see the module docstring)."""
    work.mkdir(parents=True, exist_ok=True)
    invoice, _ = bundles(work)
    with bench_env(work) as env:
        return _soak(Rig(work, env, desks=desks), work, invoice, runs, n_workers, timeout_s)


def _soak(rig: Rig, work: Path, invoice: Path, runs: int, n_workers: int, timeout_s: float) -> dict[str, Any]:
    t0 = time.monotonic()
    try:
        (work / "deploy.yaml").write_text("schema: openadapt-flow/config@1\nruntime: {lease_ttl_s: 5}\n")
        names = [submit(rig.spec, invoice, PARAMS, "invoices").removeprefix("pg:") for _ in range(runs)]
        workers = [
            rig._spawn(
                [
                    "worker",
                    "--store",
                    rig.spec,
                    "--targets",
                    str(rig.targets),
                    "--concurrency",
                    "1",
                    "--config",
                    str(work / "deploy.yaml"),
                    "--name",
                    f"soak-w{i}",
                ],
                f"soak-w{i}",
            )
            for i in range(n_workers)
        ]
        try:
            for i, mode in enumerate(RESTARTS):
                wait_until(lambda: _mid_drain(rig, names, after=2 * i), timeout_s, f"mid-drain before restart {i + 1}")
                rig.server.restart(mode)
            restarted = time.time()
            wait_until(
                lambda: _settled(rig, names) or any(w.poll() is not None for w in workers),
                timeout_s,
                "every run settled",
            )
            with rig.connect() as c:
                row = c.execute(
                    "SELECT count(*) FROM procrastinate_workers WHERE last_heartbeat > to_timestamp(%s)", (restarted,)
                ).fetchone()
            beating = int(row[0]) if row else 0
            alive = sum(1 for w in workers if w.poll() is None)
        finally:
            for w in workers:
                stop_process(w)
        states = _states(rig, names)
        saves = _saves(rig, names)
        rows = _rows(rig)
        dispatched = sum(saves.values())
        counts = {s: sum(1 for v in states.values() if v == s) for s in sorted(set(states.values()))}
        return {
            "runs": runs,
            "workers": n_workers,
            "desks": len(rig.desks),
            "restarts": list(RESTARTS),
            "states": counts,
            "settled": _settled(rig, names),
            "workers_alive": alive,
            "workers_heartbeating": beating,
            "double_rows": sum(max(0, k - 1) for k in saves.values()) + max(0, len(rows) - dispatched),
            "wrong_rows": sum(1 for r in rows if r != INVOICE),
            "rows": len(rows),
            "wall_s": round(time.monotonic() - t0, 1),
            "logs": {p.name: p.read_text(errors="replace")[-1500:] for p in sorted(work.glob("soak-w*.log"))},
        }
    finally:
        rig.close()


def figure(out: dict[str, Any]) -> str:
    states = ", ".join(
        f"{k} {s}" + (" (a step uncertain: for an operator's flow resume)" if s == RunState.INTERRUPTED else "")
        for s, k in out["states"].items()
    )
    return (
        f"pg restart soak: {out['runs']} runs on {out['workers']} workers, PostgreSQL restarted "
        f"{len(out['restarts'])}x mid-drain ({', '.join(out['restarts'])}): {states}; settled "
        f"{'yes' if out['settled'] else 'NO'}; workers alive {out['workers_alive']}/{out['workers']} "
        f"(heartbeating after the restarts: {out['workers_heartbeating']}); double rows {out['double_rows']}; "
        f"wrong rows {out['wrong_rows']}; {out['rows']} rows; {out['wall_s']} s"
    )


def ok(out: dict[str, Any]) -> bool:
    return bool(
        out["settled"]
        and out["workers_alive"] == out["workers"] == out["workers_heartbeating"]
        and out["double_rows"] == 0
        and out["wrong_rows"] == 0
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m openadapt_flow.bench.pgsoak", description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--desks", type=int, default=6, help="fixture desktops (a run cut mid-form leaves its own dirty)")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="flow-pgsoak-"))
    try:
        out = soak(work, args.runs, args.workers, args.desks)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(figure(out))
    if not ok(out):
        for name, tail in out["logs"].items():
            print(f"--- {name} (last lines)\n{tail}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
