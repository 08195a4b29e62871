"""The fleet bench (issue 15, spec §19): fleet workers on a throwaway PostgreSQL over 4 served fixture desktops.

- Throughput in runs/minute for 1, 2 and 4 worker processes (`flow worker --concurrency 1` each) and the scaling
  efficiency throughput_N / (N x throughput_1). The runs (the demo's 5-step invoice without its effect probe: runs on
  different desktops all save the one recorded invoice into one system of record) are all queued before the workers
  start; the window is from the first job claimed to the last `run_finished` record.
- Claim-to-first-action latency: from the moment procrastinate marks a run's start job `doing` (a bench-only trigger
  on procrastinate_jobs stamps the todo→doing update with PostgreSQL's clock_timestamp(); the last claim of the
  job before the run acted) to the `ts` of the run's first `action_dispatched` record in its journal (the worker's
  clock; the same machine's).
- A drain: D queued short runs (3 steps: open the form, save, back to the list; one desktop's state cycles) with
  none lost (every submission has exactly one run row, COMPLETED) and none run twice (exactly one dispatch per step
  per run, and exactly D rows in the desktops' system of record, one per save click).
- Beside every figure: the user+sys CPU seconds of the workers, of the PostgreSQL server and of the desktops, the
  machine's busy share of all its cores over the window, and the 1-minute load average at its end.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import psycopg
import yaml

from openadapt_flow.bench.cpu import MachineCpu, cpu_s, tree_cpu_s
from openadapt_flow.bench.frames import BUNDLE_DIR
from openadapt_flow.bench.pgserver import PgServer, schema_spec, start_pg
from openadapt_flow.bench.replay50 import FIXTURE_DIR
from openadapt_flow.bench.stats import percentile
from openadapt_flow.demo.xvnc import free_port, wait_until
from openadapt_flow.procs import stop_process
from openadapt_flow.records.states import RecordType, RunState
from openadapt_flow.runtime.fleet.submit import submit

DESKS = 4
PARAMS = {"vendor": "ACME Corp", "amount": "1250.50"}
CLAIMS = """
CREATE TABLE IF NOT EXISTS bench_claims (job_id bigint, name text, claimed_at timestamptz);
CREATE OR REPLACE FUNCTION bench_claim() RETURNS trigger AS $$ BEGIN
  IF NEW.status = 'doing' AND OLD.status IS DISTINCT FROM 'doing' AND NEW.task_name = 'flow.start' THEN
    INSERT INTO bench_claims VALUES (NEW.id, NEW.args->>'name', clock_timestamp());
  END IF;
  RETURN NEW;
END $$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS bench_claim ON procrastinate_jobs;
CREATE TRIGGER bench_claim AFTER UPDATE OF status ON procrastinate_jobs FOR EACH ROW EXECUTE FUNCTION bench_claim();
"""
Progress = Callable[[str], None]


def _epoch(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def bundles(work: Path) -> tuple[Path, Path]:
    """The throughput bundle (the demo's 5 steps, no effect probe) and the drain's 3-step one (open, save, back)."""
    flow = yaml.safe_load((BUNDLE_DIR / "flow.yaml").read_text())
    for step in flow["steps"]:
        step.pop("effect", None)
    out = []
    for name, keep in (("fleet-invoice", None), ("fleet-short", ("open-form", "save", "back"))):
        root = work / name
        shutil.rmtree(root, ignore_errors=True)
        shutil.copytree(BUNDLE_DIR / "templates", root / "templates")
        steps = [dict(s) for s in flow["steps"] if keep is None or s["id"] in keep]
        if keep is not None:
            for s in steps:
                s.pop("identity", None)  # nothing typed: the vendor is not on the screen to check
            short = {k: v for k, v in flow.items() if k != "params"}
            (root / "flow.yaml").write_text(yaml.safe_dump({**short, "name": name, "steps": steps}, sort_keys=False))
        else:
            (root / "flow.yaml").write_text(yaml.safe_dump({**flow, "name": name, "steps": steps}, sort_keys=False))
        out.append(root)
    return out[0], out[1]


class Rig:
    """A throwaway PostgreSQL server, a migrated store schema with the fleet's queue, and DESKS (4) served fixture
    desktops unless told another number."""

    def __init__(self, work: Path, env: dict[str, str], desks: int = DESKS) -> None:
        self.work = work
        self.n_desks = desks
        self._pgpassword: str | None = None
        self.server: PgServer = start_pg(
            fsync=True
        )  # as deployed: action_dispatched's synchronous commit hits the disk
        self.procs: list[subprocess.Popen[bytes]] = []
        self.desks: list[subprocess.Popen[bytes]] = []
        try:
            self.spec = schema_spec(self.server, "bench_fleet")
            self.env = {**env, "PGPASSWORD": self.server.password}
            self._pgpassword = os.environ.get("PGPASSWORD")
            os.environ["PGPASSWORD"] = self.server.password  # this process's submits and queries; put back by close
            with self.connect() as c:
                c.execute(CLAIMS.encode())
            self.db = work / "fleet-sor.db"
            self.env["DEMO_DB_DSN"] = f"sqlite:///{self.db}"
            self.targets = self._serve_desks()
        except BaseException:
            self.close()
            raise

    def connect(self) -> psycopg.Connection[Any]:
        return psycopg.connect(self.spec, autocommit=True, password=self.server.password)

    def _spawn(self, args: list[str], log: str) -> subprocess.Popen[bytes]:
        out = open(self.work / f"{log}.log", "wb")
        proc = subprocess.Popen(
            [sys.executable, "-m", "openadapt_flow", *args],
            cwd=self.work,
            env=self.env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        out.close()
        self.procs.append(proc)
        return proc

    def _serve_desks(self) -> Path:
        ports = [free_port() for _ in range(self.n_desks)]
        for port in ports:
            self.desks.append(
                self._spawn(
                    [
                        "fixture",
                        "serve",
                        str(FIXTURE_DIR.resolve()),
                        "--keep-state",
                        "--port",
                        str(port),
                        "--db",
                        str(self.db),
                    ],
                    f"desk-{port}",
                )
            )
        for port in ports:
            wait_until(lambda: _listening(port), 30, f"fixture desktop on port {port}")
        lines = [
            f'  - {{name: desk{i}, labels: [invoices], backend: {{kind: vnc, url: "vnc://127.0.0.1:{p}"}}}}'
            for i, p in enumerate(ports)
        ]
        targets = self.work / "targets.yaml"
        targets.write_text("schema: openadapt-flow/targets@1\ntargets:\n" + "\n".join(lines) + "\n")
        return targets

    def workers(self, n: int, tag: str) -> list[subprocess.Popen[bytes]]:
        return [
            self._spawn(
                [
                    "worker",
                    "--store",
                    self.spec,
                    "--targets",
                    str(self.targets),
                    "--concurrency",
                    "1",
                    "--name",
                    f"{tag}-w{i}",
                ],
                f"{tag}-w{i}",
            )
            for i in range(n)
        ]

    def sor_rows(self) -> int:
        if not self.db.exists():
            return 0
        with sqlite3.connect(self.db) as c:
            return int(c.execute("SELECT count(*) FROM invoices").fetchone()[0])

    def close(self) -> None:
        for p in self.procs:
            stop_process(p)
        self.server.stop()
        if self._pgpassword is None:
            os.environ.pop("PGPASSWORD", None)
        else:
            os.environ["PGPASSWORD"] = self._pgpassword


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _submit_all(rig: Rig, bundle: Path, n: int, progress: Progress) -> list[str]:
    params = PARAMS if "params" in yaml.safe_load((bundle / "flow.yaml").read_text()) else {}
    names = []
    for i in range(n):
        names.append(submit(rig.spec, bundle, params, "invoices").removeprefix("pg:"))
        if (i + 1) % 100 == 0:
            progress(f"queued {i + 1}/{n}")
    return names


def _states(rig: Rig, names: list[str]) -> dict[str, int]:
    with rig.connect() as c:
        rows = c.execute(
            "SELECT state, count(*) FROM flow_runs WHERE name = ANY(%s) GROUP BY state", (names,)
        ).fetchall()
    return {str(s): int(k) for s, k in rows}


def _wait_done(rig: Rig, names: list[str], timeout: float, progress: Progress) -> None:
    """Until every run is final (COMPLETED or not); progress about every 10 s."""
    deadline, last = time.monotonic() + timeout, 0.0
    while True:
        states = _states(rig, names)
        final = sum(
            k
            for s, k in states.items()
            if s in (RunState.COMPLETED, RunState.FAILED, RunState.BLOCKED, RunState.PAUSED)
        )
        if final >= len(names):
            return
        if time.monotonic() - last >= 10:
            last = time.monotonic()
            progress(f"{states.get(RunState.COMPLETED, 0)}/{len(names)} completed, {os.getloadavg()[0]:.1f} load")
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"{len(names) - final} of {len(names)} runs not finished after {timeout:.0f} s: {states}"
            )
        time.sleep(0.5)


def _timeline(rig: Rig, names: list[str]) -> dict[str, dict[str, Any]]:
    """Per run: its claims, its first action_dispatched ts, its run_finished ts, and its dispatches per step."""
    out: dict[str, dict[str, Any]] = {
        n: {"claims": [], "dispatches": {}, "first": None, "started": None, "finished": None} for n in names
    }
    with rig.connect() as c:
        for name, at in c.execute(
            "SELECT name, extract(epoch FROM claimed_at) FROM bench_claims WHERE name = ANY(%s)", (names,)
        ).fetchall():
            out[name]["claims"].append(float(at))
        rows = c.execute(
            "SELECT r.name, j.type, j.step, j.line FROM flow_journal j JOIN flow_runs r ON r.id = j.run "
            "WHERE r.name = ANY(%s) AND j.type IN ('run_started', 'action_dispatched', 'run_finished') ORDER BY j.seq",
            (names,),
        ).fetchall()
    for name, type_, step, line in rows:
        ts = _epoch(json.loads(bytes(line))["ts"])
        run = out[name]
        if type_ == RecordType.RUN_FINISHED:
            run["finished"] = ts
        elif type_ == RecordType.RUN_STARTED:
            run["started"] = ts
        else:
            run["dispatches"][step] = run["dispatches"].get(step, 0) + 1
            run["first"] = run["first"] if run["first"] is not None else ts
    return out


def _latencies(timeline: dict[str, dict[str, Any]], until: str = "first") -> list[float]:
    """Per run, ms from the last claim of its start job at or before its first action to that action (`until`
    "started": to its `run_started` record instead: the part spent before the run exists)."""
    out = []
    for run in timeline.values():
        claims = [c for c in run["claims"] if run["first"] is not None and c <= run["first"]]
        if claims and run[until] is not None:
            out.append((run[until] - max(claims)) * 1000)
    return out


class Meter:
    """CPU and load over one measured window."""

    def __init__(self, rig: Rig, workers: list[subprocess.Popen[bytes]]) -> None:
        self.rig, self.workers = rig, workers
        self.start = self._read()

    def _read(self) -> dict[str, Any]:
        return {
            "workers": sum(cpu_s(w.pid) for w in self.workers),
            "server": tree_cpu_s(self.rig.server.pid),
            "desks": sum(cpu_s(d.pid) for d in self.rig.desks),
            "machine": MachineCpu.now(),
            "wall": time.monotonic(),
        }

    def stop(self) -> dict[str, Any]:
        end = self._read()
        return {
            **{f"{k}_cpu_s": round(end[k] - self.start[k], 1) for k in ("workers", "server", "desks")},
            "machine_busy": round(end["machine"].busy_share(self.start["machine"]), 2),
            "wall_s": round(end["wall"] - self.start["wall"], 1),
            "load_avg_1m": round(os.getloadavg()[0], 2),
            "cpus": os.cpu_count(),
        }


def throughput(rig: Rig, bundle: Path, n_workers: int, runs: int, progress: Progress) -> dict[str, Any]:
    """`runs` queued, then `n_workers` workers start: runs/minute from the first claim to the last run_finished."""
    names = _submit_all(rig, bundle, runs, progress)
    workers = rig.workers(n_workers, f"t{n_workers}")
    meter = Meter(rig, workers)
    try:
        _wait_done(rig, names, 60 + runs * 30, progress)
        cpu = meter.stop()
    finally:
        for w in workers:
            stop_process(w)
    timeline = _timeline(rig, names)
    claims = [c for r in timeline.values() for c in r["claims"]]
    ends = [r["finished"] for r in timeline.values() if r["finished"] is not None]
    window = max(ends) - min(claims)
    lat = _latencies(timeline)
    states = _states(rig, names)
    return {
        "workers": n_workers,
        "runs": runs,
        "completed": states.get(RunState.COMPLETED, 0),
        "window_s": round(window, 2),
        "runs_per_min": round(runs / window * 60, 1),
        "claim_to_first_action_ms": _pcts(lat),
        "claim_to_run_started_ms": _pcts(_latencies(timeline, "started")),
        **cpu,
    }


def _pcts(ms: list[float]) -> dict[str, Any]:
    if not ms:
        return {"n": 0}
    return {
        "n": len(ms),
        "p50": round(percentile(ms, 50), 1),
        "p99": round(percentile(ms, 99), 1),
        "max": round(max(ms), 1),
    }


def drain(rig: Rig, bundle: Path, runs: int, n_workers: int, progress: Progress) -> dict[str, Any]:
    """`runs` short runs queued, drained by `n_workers`: none lost, none run twice."""
    rows_before = rig.sor_rows()
    names = _submit_all(rig, bundle, runs, progress)
    workers = rig.workers(n_workers, "drain")
    meter = Meter(rig, workers)
    try:
        _wait_done(rig, names, 120 + runs * 10, progress)
        cpu = meter.stop()
    finally:
        for w in workers:
            stop_process(w)
    timeline = _timeline(rig, names)
    with rig.connect() as c:
        run_rows = dict(
            c.execute("SELECT name, count(*) FROM flow_runs WHERE name = ANY(%s) GROUP BY name", (names,)).fetchall()
        )
    steps = len(yaml.safe_load((bundle / "flow.yaml").read_text())["steps"])
    twice = [
        n for n, r in timeline.items() if any(k != 1 for k in r["dispatches"].values()) or len(r["dispatches"]) != steps
    ]
    ends = [r["finished"] for r in timeline.values() if r["finished"] is not None]
    claims = [c for r in timeline.values() for c in r["claims"]]
    states = _states(rig, names)
    return {
        "runs": runs,
        "workers": n_workers,
        "completed": states.get(RunState.COMPLETED, 0),
        "states": states,
        "lost": sum(1 for n in names if run_rows.get(n, 0) != 1),
        "not_once": len(twice),
        "sor_rows": rig.sor_rows() - rows_before,
        "window_s": round(max(ends) - min(claims), 1),
        "runs_per_min": round(runs / (max(ends) - min(claims)) * 60, 1),
        "claim_to_first_action_ms": _pcts(_latencies(timeline)),
        **cpu,
    }


def fleet_bench(
    work: Path, env: dict[str, str], runs: int, drain_runs: int, workers: tuple[int, ...], progress: Progress
) -> dict[str, Any]:
    """Every fleet figure on one rig: throughput per worker count, the scaling efficiency, the drain."""
    work.mkdir(parents=True, exist_ok=True)
    invoice, short = bundles(work)
    rig = Rig(work, env)
    try:
        out: dict[str, Any] = {"desks": DESKS, "postgres": rig.server.version, "fsync": True, "throughput": []}
        for n in workers:
            progress(f"{n} worker(s), {runs} runs of the 5-step invoice")
            out["throughput"].append(throughput(rig, invoice, n, runs, progress))
        base = next((t["runs_per_min"] for t in out["throughput"] if t["workers"] == 1), None)
        for t in out["throughput"]:
            t["efficiency"] = round(t["runs_per_min"] / (t["workers"] * base), 2) if base else None
        if drain_runs:
            progress(f"drain: {drain_runs} queued 3-step runs, {max(workers)} workers")
            out["drain"] = drain(rig, short, drain_runs, max(workers), progress)
        return out
    finally:
        rig.close()
