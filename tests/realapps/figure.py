"""The real-app suite's figure: at the end of the session, the figure and the matrix (app x drift -> outcome).

Counting, honestly: every replay of a recorded bundle (unedited: the compiler's flow.yaml as written, run with
other values or under a drift) is one of M; it is one of N when it exited 0 AND the system of record shows the
intended result. A wrong click is a replay whose system of record or screen shows an input that landed outside
the target its step meant (a digit in the calculator that was never asked for, a value in another column, text
in the wrong place of the file); it is judged from the result, so a wrong click that a later step happened to
undo is not seen. A false success is exit 0 with a wrong result.

Under pytest-xdist (`make test` runs `-n 2 --dist loadfile`) the replays happen in workers: each worker hands its
results to the controller at the end (`workeroutput`), and the controller prints the one figure. The hooks are loaded from tests/conftest.py (`pytest_plugins`): under xdist
the controller collects nothing, so a conftest in tests/realapps would not be loaded there.

The batches (tests/realapps/batch_harness.py: N work items one after another on one live app) are counted apart:
`batches: items exact N/M, wrong rows W`, one line in total and one per app. Every item of every batch is one of
M; it is one of N when the system of record shows exactly what it should: a completed item's row once, with its
values in their columns; an item made to halt halted or paused and its row nowhere. W counts the rows the batches
added that no completed item meant (a value in another column, a halted item's leftover, a second copy).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.realapps.batch_harness import BATCHES, BatchResult, batch_dicts, batch_from_dict
from tests.realapps.realapp_harness import RESULTS, Replay

WORKER_KEY = "realapps_results"
BATCH_KEY = "realapps_batches"


def pytest_sessionfinish(session):
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: the controller prints the figure
        workeroutput[WORKER_KEY] = json.dumps([r.__dict__ for r in RESULTS], default=str)
        workeroutput[BATCH_KEY] = json.dumps(batch_dicts(), default=str)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):  # noqa: ARG001 - xdist's hook signature
    output = getattr(node, "workeroutput", {})
    RESULTS.extend(Replay(**r) for r in json.loads(output.get(WORKER_KEY, "[]")))
    BATCHES.extend(batch_from_dict(b) for b in json.loads(output.get(BATCH_KEY, "[]")))


def figure(results: list[Replay]) -> str:
    """The suite's figure over some replays: completed unedited of all, wrong writes (a wrong click or result in the
    system of record), false successes (exit 0 with a wrong result)."""
    n = sum(1 for r in results if r.outcome == "completed")
    wrong = sum(1 for r in results if r.outcome == "WRONG")
    false = sum(1 for r in results if r.false_success)
    return f"recorded bundles replayed unedited {n}/{len(results)}, wrong writes {wrong}, false successes {false}"


def batch_figure(batches: list[BatchResult]) -> str:
    """The batches' figure: items exact of all items, wrong rows."""
    n = sum(b.exact for b in batches)
    m = sum(len(b.items) for b in batches)
    return f"batches: items exact {n}/{m}, wrong rows {sum(len(b.wrong) for b in batches)}"


def pytest_terminal_summary(terminalreporter, exitstatus, config):  # noqa: ARG001 - pytest's hook signature
    tr = terminalreporter
    if BATCHES:
        tr.section("real-app batches")
        for b in BATCHES:
            tr.write_line(b.summary())
            for line in b.evidence().splitlines():  # what went wrong, where anything did
                if "NOT EXACT" in line or "wrong row" in line:
                    tr.write_line(line)
        for app in sorted({b.app for b in BATCHES}):
            tr.write_line(f"  {app}: " + batch_figure([b for b in BATCHES if b.app == app]))
        tr.write_line(f"{len({b.app for b in BATCHES})} apps: " + batch_figure(BATCHES))
    if not RESULTS:
        return
    tr.section("real-app suite")
    for r in RESULTS:
        tr.write_line(r.summary() + (f"  [a halt is acceptable: {r.reason}]" if r.expectation != "complete" else ""))
    for app in sorted({r.app for r in RESULTS}):
        tr.write_line(f"  {app}: " + figure([r for r in RESULTS if r.app == app]))
    tr.write_line(f"{len({r.app for r in RESULTS})} apps: " + figure(RESULTS))
    out = os.environ.get("FLOW_REALAPPS_RESULTS")
    if out:
        Path(out).write_text(json.dumps([r.__dict__ for r in RESULTS], indent=1, default=str))
