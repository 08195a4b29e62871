"""The fleet and console figures' arithmetic and text: which two timestamps a latency spans, the scaling goals, the
CPU reads. Structure only: nothing here is about how fast anything is."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from openadapt_flow.bench import ops_report
from openadapt_flow.bench.cpu import MachineCpu, cpu_s, tree_cpu_s
from openadapt_flow.bench.fleet import _latencies
from openadapt_flow.bench.stats import percentile

pytestmark = pytest.mark.timeout(30)


def test_latency_runs_from_the_last_claim_before_the_first_action_to_that_action():
    timeline = {
        # claimed, refused (its desktop busy), claimed again: the second claim is the one that ran it
        "a": {"claims": [10.0, 11.0], "started": 11.2, "first": 11.5, "finished": 12.0},
        "b": {
            "claims": [20.0, 30.0],
            "started": 20.1,
            "first": 20.25,
            "finished": 21.0,
        },  # a claim after it acted: not it
        "c": {"claims": [5.0], "started": None, "first": None, "finished": None},  # never acted: no latency
    }
    assert [round(v) for v in _latencies(timeline)] == [500, 250]
    assert [round(v) for v in _latencies(timeline, "started")] == [200, 100]


def test_percentiles_are_nearest_rank():
    samples = [float(v) for v in range(1, 101)]
    assert (percentile(samples, 50), percentile(samples, 99), percentile(samples, 100)) == (50.0, 99.0, 100.0)
    assert percentile([7.0], 99) == 7.0


def _window(**extra):
    return {
        "workers_cpu_s": 3.0,
        "server_cpu_s": 1.0,
        "desks_cpu_s": 0.5,
        "wall_s": 10.0,
        "machine_busy": 0.97,
        "load_avg_1m": 6.5,
        "cpus": 2,
        **extra,
    }


def _fleet(p99_worst: float, lost: int = 0) -> dict:
    lat = {"n": 4, "p50": 50.0, "p99": 80.0, "max": 80.0}
    rows = [
        _window(
            workers=n,
            runs=4,
            completed=4,
            window_s=6.0,
            runs_per_min=40.0 * n**0.5,
            efficiency=1.0,
            claim_to_first_action_ms={**lat, "p99": p99_worst if n == 2 else 80.0},
            claim_to_run_started_ms=lat,
        )
        for n in (1, 2)
    ]
    drain = _window(
        runs=8,
        workers=2,
        completed=8 - lost,
        states={},
        lost=lost,
        not_once=0,
        sor_rows=8 - lost,
        window_s=9.0,
        runs_per_min=53.3,
        claim_to_first_action_ms=lat,
    )
    return {"desks": 4, "postgres": "15", "fsync": True, "throughput": rows, "drain": drain}


def test_goals_take_the_worst_worker_count_and_a_lost_run_misses_the_drain():
    console = {"page": {"p99_ms": 40.0, "fold_p99_ms": 140.0}}
    met = {g["name"]: g["met"] for g in ops_report.goals({"fleet": _fleet(90.0), "console": console})}
    assert list(met.values()) == [True, True, True, True]
    slow = {"page": {"p99_ms": 151.0, "fold_p99_ms": 151.0}}
    missed = {g["name"]: g["met"] for g in ops_report.goals({"fleet": _fleet(120.0, lost=1), "console": slow})}
    assert list(missed.values()) == [False, False, False, False]
    assert [g["met"] for g in ops_report.goals({})] == [None, None, None, None]  # skipped: not measured


def test_every_fleet_line_prints_cpu_and_load_beside_its_figure():
    lines = ops_report.fleet_lines(_fleet(90.0))
    assert len(lines) == 4  # the header, two worker counts, the drain
    for line in lines[1:]:
        assert "CPU s workers 3.0 / PostgreSQL 1.0 / desktops 0.5" in line and "of 2 cores, load 6.5" in line
    assert "0 lost, 0 not dispatched exactly once per step, 8 rows saved" in lines[-1]
    assert ops_report.fleet_lines({"error": "boom"}) == ["fleet: failed: boom"]


def test_cpu_reads_grow_with_work_done():
    before, machine = cpu_s(os.getpid()), MachineCpu.now()
    deadline = time.process_time() + 0.2
    while time.process_time() < deadline:
        pass
    assert cpu_s(os.getpid()) - before >= 0.1
    assert 0.0 < MachineCpu.now().busy_share(machine) <= 1.0
    reaped = cpu_s(os.getpid(), children=True)
    burn = "import time\nt = time.process_time() + 0.2\nwhile time.process_time() < t:\n    pass\n"
    subprocess.run([sys.executable, "-c", burn], check=True, timeout=20)  # a child that exited and was waited for
    assert cpu_s(os.getpid(), children=True) - reaped >= 0.1
    assert tree_cpu_s(os.getpid()) >= reaped + 0.1  # a server's reaped backends count
    assert cpu_s(2**22 + 12345) == 0.0  # no such process
