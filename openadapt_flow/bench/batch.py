"""The batch part (spec §17 turn 4, §22): 50 work items entered into the demo app over loopback VNC by `flow batch`,
beside a blind script that sends the same clicks and keys at the recorded points, waits only until the screen
settles after each input, and verifies nothing — the floor a verified replay can approach. Target: the verified
batch within 1.3x the blind script's wall time, both on the same app, printed as a ratio from one run.

Both sides start from the demo app's invoice list, on their own private Xvnc, one after the other; each side's
rows are counted in the app's database afterwards (the blind script's are not checked as it runs: that is what
makes it blind)."""

from __future__ import annotations

import csv
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from openadapt_flow.backends.factory import open_backend
from openadapt_flow.backends.spec import parse_url
from openadapt_flow.bench.engine_cost import bench_env
from openadapt_flow.bench.frames import BUNDLE_DIR, demo_on_xvnc
from openadapt_flow.bench.replay50 import VENDORS
from openadapt_flow.runtime.act.settle import settle

ITEMS = 50
RATIO_TARGET = 1.3
QUIET_S, SETTLE_TIMEOUT_S = 0.05, 5.0  # the runtime's defaults (DeployConfig.runtime): the same settle rule


def items(n: int) -> list[dict[str, str]]:
    """n invoices, each a vendor and an amount no other item has."""
    return [{"vendor": f"{VENDORS[i % len(VENDORS)]} {i + 1:03d} Corp", "amount": f"{100 + i}.25"} for i in range(n)]


def recorded_inputs(bundle: Path = BUNDLE_DIR) -> list[tuple[str, tuple[int, int], str | None]]:
    """The demo bundle's inputs at their recorded points: (action, (x, y), text template or None)."""
    flow = yaml.safe_load((bundle / "flow.yaml").read_text())
    out = []
    for step in flow["steps"]:
        x, y, _, _ = step["target"]["region"]
        px, py = step["target"]["point"]
        out.append((step["action"], (x + px, y + py), step.get("text")))
    return out


def blind(url: str, work: list[dict[str, str]]) -> float:
    """Wall seconds for the blind script: every recorded input, a settle after each, nothing read or checked."""
    inputs = recorded_inputs()
    backend = open_backend(parse_url(url))
    try:
        t0 = time.perf_counter()
        for item in work:
            for action, (x, y), text in inputs:
                backend.click(x, y)
                settle(backend, QUIET_S, SETTLE_TIMEOUT_S, expect_change_s=0.05)
                if action == "type" and text is not None:
                    backend.type_text(text.format(**item))
                    settle(backend, QUIET_S, SETTLE_TIMEOUT_S, expect_change_s=0.05)
        return time.perf_counter() - t0
    finally:
        backend.close()


def verified(url: str, work: list[dict[str, str]], folder: Path, env: dict[str, str], timeout: float) -> dict[str, Any]:
    """`flow batch` over the items: its wall time, exit code and the statuses it wrote."""
    items_csv = folder / "items.csv"
    with items_csv.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["vendor", "amount"])
        w.writeheader()
        w.writerows(work)
    out = folder / "results.jsonl"
    args = [
        sys.executable,
        "-m",
        "openadapt_flow",
        "batch",
        str(BUNDLE_DIR),
        "--items",
        str(items_csv),
        "--url",
        url,
        "--out",
        str(out),
        "--runs",
        str(folder / "runs"),
    ]
    t0 = time.perf_counter()
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=timeout)
    wall = time.perf_counter() - t0
    statuses: dict[str, int] = {}
    if out.exists():
        for line in out.read_text().splitlines():
            s = yaml.safe_load(line).get("status", "?")
            statuses[s] = statuses.get(s, 0) + 1
    return {
        "wall_s": round(wall, 2),
        "exit_code": done.returncode,
        "statuses": statuses,
        "stderr_tail": done.stderr.strip()[-300:] if done.returncode else "",
    }


def _rows(db: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db) as c:
        return c.execute("SELECT vendor, amount FROM invoices ORDER BY rowid").fetchall()


def _exact(rows: list[tuple[Any, ...]], work: list[dict[str, str]]) -> int:
    """How many items have exactly their own row (the right vendor with the right amount, once)."""
    return sum(1 for it in work if rows.count((it["vendor"], float(it["amount"]))) == 1)


def batch_bench(folder: Path, n: int = ITEMS, timeout: float = 900) -> dict[str, Any]:
    """Both sides on the demo app over VNC, one after the other; wall times, rows and the ratio."""
    folder.mkdir(parents=True, exist_ok=True)
    work = items(n)
    out: dict[str, Any] = {"items": n}
    with demo_on_xvnc(1024, 768, "normal") as desk:
        before = len(_rows(desk.db))
        out["blind"] = {"wall_s": round(blind(desk.url, work), 2)}
        rows = _rows(desk.db)[before:]
        out["blind"].update(rows=len(rows), exact=_exact(rows, work))
    with demo_on_xvnc(1024, 768, "normal") as desk, bench_env(folder) as env:
        env["DEMO_DB_DSN"] = f"sqlite:///{desk.db}"
        env["FLOW_STATE_DIR"] = str(folder / "state")  # its own item ledger: the items are new work every bench run
        before = len(_rows(desk.db))
        out["verified"] = verified(desk.url, work, folder, env, timeout)
        rows = _rows(desk.db)[before:]
        out["verified"].update(rows=len(rows), exact=_exact(rows, work))
    b, v = out["blind"]["wall_s"], out["verified"]["wall_s"]
    out["ratio"] = round(v / b, 2) if b > 0 else None
    out["items_per_min"] = {
        "blind": round(n * 60 / b, 1) if b else None,
        "verified": round(n * 60 / v, 1) if v else None,
    }
    return out


def goals(results: dict[str, Any]) -> list[dict[str, Any]]:
    """The batch target (spec §17 turn 4), as the bench's other targets are printed."""
    b = results.get("batch") or {}
    ratio = b.get("ratio")
    v = b.get("verified") or {}
    right = v.get("exact") == b.get("items") and v.get("rows") == b.get("items")
    shown = (
        "n/a"
        if ratio is None
        else (
            f"{ratio:.2f}x ({v.get('wall_s')} s vs blind {b['blind']['wall_s']} s; "
            f"verified rows exact {v.get('exact')}/{b.get('items')}, {v.get('rows')} rows)"
        )
    )
    return [
        {
            "name": "verified batch time / blind script's",
            "target": f"<= {RATIO_TARGET:g}x, every item exact",
            "shown": shown,
            "met": None if ratio is None else (ratio <= RATIO_TARGET and right),
        }
    ]


def lines(b: dict[str, Any]) -> list[str]:
    if "verified" not in b:
        return [f"batch: {b.get('error', 'not measured')}"]
    v, bl = b["verified"], b["blind"]
    return [
        f"batch of {b['items']} invoices on the demo app over VNC: flow batch {v['wall_s']} s "
        f"({b['items_per_min']['verified']} items/min, exit {v['exit_code']}, {v['statuses']}, rows exact "
        f"{v['exact']}/{b['items']}) beside a blind script {bl['wall_s']} s ({b['items_per_min']['blind']} "
        f"items/min, rows exact {bl['exact']}/{b['items']}): ratio {b['ratio']}x"
    ]
