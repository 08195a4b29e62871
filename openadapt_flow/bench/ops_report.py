"""The fleet's and the console's figures as text (`make bench`), each with the CPU and load beside it, and their
goals (issue 15: claim-to-first-action p99 ≤ 100 ms; issue 16: a 200-step paused run's page ≤ 150 ms)."""

from __future__ import annotations

from typing import Any


def _cpu(r: dict[str, Any]) -> str:
    return (
        f"CPU s workers {r['workers_cpu_s']} / PostgreSQL {r['server_cpu_s']} / desktops {r['desks_cpu_s']} "
        f"in {r['wall_s']} s, machine busy {r['machine_busy'] * 100:.0f}% of {r['cpus']} cores, load {r['load_avg_1m']}"
    )


def _lat(p: dict[str, Any]) -> str:
    return f"p50 {p['p50']} / p99 {p['p99']} ms (n={p['n']})" if p.get("n") else "not measured"


def fleet_lines(fleet: dict[str, Any]) -> list[str]:
    if "error" in fleet:
        return [f"fleet: failed: {fleet['error']}"]
    out = [
        f"fleet: {fleet['desks']} fixture desktops, PostgreSQL {fleet['postgres']} (fsync on), "
        f"`flow worker --concurrency 1` processes"
    ]
    for t in fleet["throughput"]:
        out.append(
            f"  {t['workers']} worker(s): {t['runs_per_min']} runs/min ({t['completed']}/{t['runs']} COMPLETED in "
            f"{t['window_s']} s), efficiency {t['efficiency']}; claim→first action {_lat(t['claim_to_first_action_ms'])}, "
            f"claim→run_started {_lat(t['claim_to_run_started_ms'])}; {_cpu(t)}"
        )
    d = fleet.get("drain")
    if d:
        out.append(
            f"  drain: {d['runs']} queued 3-step runs, {d['workers']} workers: {d['completed']} COMPLETED, "
            f"{d['lost']} lost, {d['not_once']} not dispatched exactly once per step, {d['sor_rows']} rows saved; "
            f"{d['runs_per_min']} runs/min over {d['window_s']} s; claim→first action "
            f"{_lat(d['claim_to_first_action_ms'])}; {_cpu(d)}"
        )
    return out


def console_lines(console: dict[str, Any]) -> list[str]:
    if "error" in console:
        return [f"console: failed: {console['error']}"]
    p, c = console["page"], console.get("click")
    out = [
        f"console: paused run's page ({p['steps_verified']} verified steps, {p['page_kb']} KB), in-process, over "
        f"{p['iterations']}: served p50 {p['p50_ms']} / p99 {p['p99_ms']} ms (CPU p50 {p['cpu_p50_ms']} / p99 "
        f"{p['cpu_p99_ms']} ms); its fold uncached, as on the first view after a change: p50 {p['fold_p50_ms']} / "
        f"p99 {p['fold_p99_ms']} ms (CPU p50 {p['fold_cpu_p50_ms']} / p99 {p['fold_cpu_p99_ms']} ms); "
        f"load {console['load_avg_1m']}"
    ]
    if c:
        out.append(
            f"  click on a decision → run_resumed (flow worker RUNS --poll {c['worker_poll_s']}): p50 {c['p50_ms']} / "
            f"max {c['max_ms']} ms over {c['clicks']} (the POST alone: p50 {c['post_p50_ms']} ms)"
        )
    return out


def goals(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue 15's and 16's goals, shaped like report.targets' rows."""
    out = []
    fleet, console = results.get("fleet") or {}, results.get("console") or {}
    lat = [t["claim_to_first_action_ms"].get("p99") for t in fleet.get("throughput", [])]
    worst = max((v for v in lat if v is not None), default=None)
    out.append(_goal("issue 15 claim-to-first-action p99 (worst worker count)", "≤ 100 ms", worst, 100, "ms"))
    drain = fleet.get("drain")
    ok = None if not drain else (drain["lost"] == 0 and drain["not_once"] == 0 and drain["sor_rows"] == drain["runs"])
    out.append(
        {
            "name": "issue 15 drain: none lost, none run twice",
            "target": "0 / 0",
            "measured": None,
            "shown": "not measured" if drain is None else f"{drain['lost']} lost / {drain['not_once']} not once",
            "met": ok,
        }
    )
    page = console.get("page") or {}
    out.append(_goal("issue 16 200-step paused run's page p99 (served)", "≤ 150 ms", page.get("p99_ms"), 150, "ms"))
    out.append(
        _goal(
            "issue 16 200-step paused run's page p99 (first view after a change)",
            "≤ 150 ms",
            page.get("fold_p99_ms"),
            150,
            "ms",
        )
    )
    return out


def _goal(name: str, target: str, measured: float | None, limit: float, unit: str) -> dict[str, Any]:
    return {
        "name": name,
        "target": target,
        "measured": measured,
        "met": None if measured is None else measured <= limit,
        "shown": "not measured" if measured is None else f"{measured:.3g} {unit}",
    }
