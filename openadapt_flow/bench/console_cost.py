"""The console's costs (issue 16): a 200-step paused run's page, and a click on a decision to the run's `run_resumed`.

The run is real: the demo bundle repeated 40 times (200 steps) played in-process on the recorded fixture
(`flow replay --durable --url fixture:PATH`), then a 201st step whose target is nowhere on the screen halts it
PAUSED with a halt frame. The page is timed in-process through Starlette's TestClient (the ASGI app, its handler,
the report fold and the template; no socket), logged in as a bench operator. The click is a real POST to a served
`flow console` while `flow worker RUNS --poll P` scans the runs root; the time is from just before the POST to the
`run_resumed` record's own timestamp in the run's journal.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import yaml
from PIL import Image
from starlette.testclient import TestClient

from openadapt_flow.backends.fixture import SOR_ENV
from openadapt_flow.bench.replay50 import FIXTURE_DIR, make_bundle
from openadapt_flow.bench.stats import percentile
from openadapt_flow.console.app import create_app
from openadapt_flow.console.views import run_page
from openadapt_flow.demo.xvnc import free_port, wait_until
from openadapt_flow.procs import stop_process
from openadapt_flow.records.states import DecisionKind, RecordType, RunState, is_a
from openadapt_flow.runtime.operate.operators import add_operator, reset_operator
from openadapt_flow.store import FilesystemStore

INVOICES = 40  # x 5 steps = 200
OPERATOR = "bench"


def paused_run(work: Path, env: dict[str, str], invoices: int = INVOICES) -> Path:
    """A durable run of `invoices` x 5 verified steps, PAUSED at one more step whose target is not on the screen.
    `env` is bench_env's; the fixture's system of record and the effect probe's database are set in it here."""
    bundle, flags = make_bundle(work / "bundle-paused", invoices)
    flow = yaml.safe_load((bundle / "flow.yaml").read_text())
    rng = np.random.default_rng(7)  # a crop of noise: no screen of the demo app has it
    Image.fromarray(rng.integers(0, 255, (40, 120, 3), dtype=np.uint8)).save(bundle / "templates" / "nowhere.png")
    flow["steps"].append(
        {
            "id": "nowhere",
            "intent": "Click a button that is not there",
            "action": "click",
            "target": {"template": "templates/nowhere.png", "region": [600, 600, 120, 40], "point": [60, 20]},
        }
    )
    (bundle / "flow.yaml").write_text(yaml.safe_dump(flow, sort_keys=False))
    root = work / "console-runs"
    root.mkdir(parents=True, exist_ok=True)
    run_dir = root / "paused-200"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "openadapt_flow",
            "replay",
            str(bundle),
            "--url",
            f"fixture:{FIXTURE_DIR.resolve()}",
            "--durable",
            "--run-dir",
            str(run_dir),
            *flags,
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=_sor_env(env, root),
    )
    if proc.returncode != 3:  # PAUSED
        raise RuntimeError(
            f"the {invoices * 5}-step run did not pause (exit {proc.returncode}): {proc.stderr.strip()[-400:]}"
        )
    return run_dir


def _sor_env(env: dict[str, str], root: Path) -> dict[str, str]:
    """`env` with the fixture's system of record and the effect probe's database (beside the runs root)."""
    db = root.parent / "console-invoices.db"
    return {**env, SOR_ENV: str(db), "DEMO_DB_DSN": f"sqlite:///{db}"}


def _hidden(page: str, name: str) -> str:
    m = re.search(rf'name="{name}" value="([^"]*)"', page)
    if not m:
        raise RuntimeError(f"the console page has no {name} field")
    return m.group(1)


def _login(client: Any, credential: str) -> None:
    r = client.post(
        "/login",
        data={"csrf": _hidden(client.get("/login").text, "csrf"), "name": OPERATOR, "credential": credential},
        follow_redirects=False,
    )
    if r.status_code != 303:
        raise RuntimeError(f"bench operator login refused ({r.status_code})")


def _credential(store: FilesystemStore) -> str:
    """The bench operator's credential: added, or a new one issued when it exists."""
    if store.operators().get(OPERATOR) is None:
        return add_operator(store, OPERATOR, "approver")
    return reset_operator(store, OPERATOR)


def page_time(run_dir: Path, iterations: int) -> dict[str, Any]:
    """The paused run's page (GET /runs/ID) timed in-process: p50/p99 ms over `iterations` after one warm-up, wall
    time and this process's CPU time (on a loaded machine the wall time is mostly waiting for a core)."""
    store = FilesystemStore(run_dir.parent)
    credential = _credential(store)
    run_id = store.open_run(str(run_dir)).manifest()["run_id"]
    steps = sum(1 for r in store.open_run(str(run_dir)).read_records() if is_a(r, RecordType.STEP_VERIFIED))
    times: list[float] = []
    cpu: list[float] = []  # this process's CPU per page (every thread: the page is all it does): load-independent
    with TestClient(create_app(store), base_url="http://127.0.0.1") as client:
        _login(client, credential)
        page = client.get(f"/runs/{run_id}")
        if page.status_code != 200 or 'id="halt-frame"' not in page.text:
            raise RuntimeError(f"the paused run's page did not show its halt frame ({page.status_code})")
        for _ in range(iterations):
            t0, c0 = time.perf_counter(), time.process_time()
            r = client.get(f"/runs/{run_id}")
            times.append((time.perf_counter() - t0) * 1000)
            cpu.append((time.process_time() - c0) * 1000)
            if r.status_code != 200:
                raise RuntimeError(f"page answered {r.status_code}")
    fold = _fold_ms(store.open_run(str(run_dir)), iterations)
    return {
        "steps_verified": steps,
        "iterations": iterations,
        "page_kb": round(len(page.content) / 1024, 1),
        **fold,
        "p50_ms": round(percentile(times, 50), 1),
        "p99_ms": round(percentile(times, 99), 1),
        "max_ms": round(max(times), 1),
        "cpu_p50_ms": round(percentile(cpu, 50), 1),
        "cpu_p99_ms": round(percentile(cpu, 99), 1),
    }


def _fold_ms(run: Any, iterations: int) -> dict[str, float]:
    """The page's part the console keeps per run stamp, timed uncached (as on the first view after each change)."""
    wall, cpu = [], []
    for _ in range(iterations):
        t0, c0 = time.perf_counter(), time.process_time()
        run_page(run)
        wall.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)
    return {
        "fold_p50_ms": round(percentile(wall, 50), 1),
        "fold_p99_ms": round(percentile(wall, 99), 1),
        "fold_cpu_p50_ms": round(percentile(cpu, 50), 1),
        "fold_cpu_p99_ms": round(percentile(cpu, 99), 1),
    }


def click_to_resumed(run_dir: Path, env: dict[str, str], clicks: int, poll_s: float) -> dict[str, Any]:
    """A served console and `flow worker RUNS --poll poll_s`: per click, POST `continue` on the open pause, then the
    time from just before the POST to the `run_resumed` record's timestamp (the run halts again on the same step,
    so every click finds a fresh pause)."""
    root = run_dir.parent
    store = FilesystemStore(root)
    credential = _credential(store)
    run = store.open_run(str(run_dir))
    run_id = run.manifest()["run_id"]
    port = free_port()
    console = subprocess.Popen(
        [sys.executable, "-m", "openadapt_flow", "console", "--root", str(root), "--bind", f"127.0.0.1:{port}"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    env = _sor_env(env, root)
    worker = subprocess.Popen(
        [sys.executable, "-m", "openadapt_flow", "worker", str(root), "--poll", str(poll_s)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    times: list[float] = []
    posts: list[float] = []  # the POST alone: the decision recorded and the report re-rendered, answered 303
    try:
        wait_until(lambda: _listening(port), 30, f"flow console on port {port}")
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
            _login(client, credential)
            for _ in range(clicks):
                wait_until(
                    lambda: run.state().get("state") == RunState.PAUSED and run.has_pending(), 120, "the run to pause"
                )
                seen = len(_resumes(run))
                page = client.get(f"/runs/{run_id}").text
                form = {
                    "csrf": _hidden(page, "csrf"),
                    "pause_id": _hidden(page, "pause_id"),
                    "decision": DecisionKind.CONTINUE.value,
                }
                t0 = time.time()
                r = client.post(f"/runs/{run_id}/decide", data=form, follow_redirects=False)
                posts.append((time.time() - t0) * 1000)
                if r.status_code != 303:
                    raise RuntimeError(f"the decision was refused ({r.status_code})")
                rec = wait_until(lambda: _resumes(run)[seen:] or None, 60, "the run's run_resumed record")[0]
                times.append((_epoch(rec["ts"]) - t0) * 1000)
    finally:
        stop_process(worker)
        stop_process(console)
    return {
        "clicks": clicks,
        "worker_poll_s": poll_s,
        "p50_ms": round(percentile(times, 50), 1),
        "max_ms": round(max(times), 1),
        "post_p50_ms": round(percentile(posts, 50), 1),
        "all_ms": [round(t, 1) for t in times],
    }


def _resumes(run: Any) -> list[dict[str, Any]]:
    return [r for r in run.read_records() if is_a(r, RecordType.RUN_RESUMED)]


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _epoch(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def console_bench(work: Path, env: dict[str, str], iterations: int, clicks: int, poll_s: float) -> dict[str, Any]:
    """The 200-step paused run's page, then `clicks` decisions to their `run_resumed` (none with clicks=0)."""
    work.mkdir(parents=True, exist_ok=True)
    run_dir = paused_run(work, env)
    out: dict[str, Any] = {"page": page_time(run_dir, iterations)}
    if clicks:
        out["click"] = click_to_resumed(run_dir, env, clicks, poll_s)
    out["load_avg_1m"] = round(os.getloadavg()[0], 2)
    return out
