"""A completed item's report is written on a thread while the next item runs; any other stop is reported before the
batch goes on; every report is there when the batch returns, and one that could not be written is said."""

from __future__ import annotations

import threading

from openadapt_flow.runtime.batch.reports import ReportsBehind
from openadapt_flow.store.atomic import StorageFault


class _Run:
    def __init__(self, name: str, state: str) -> None:
        self.name, self._state = name, state

    def state(self) -> dict[str, str]:
        return {"state": self._state}

    @property
    def ref(self) -> str:
        return self.name


def test_a_completed_runs_report_waits_for_nothing_and_is_written_by_the_end():
    gate, written = threading.Event(), []

    def report(run):
        gate.wait(10)
        written.append(run.name)

    behind = ReportsBehind(report)
    assert behind(_Run("a", "COMPLETED")) is None  # returned at once: the gate is still shut
    assert written == []
    gate.set()
    assert behind.close() == [] and written == ["a"]


def test_a_halted_or_paused_runs_report_is_written_before_the_batch_goes_on():
    written = []
    behind = ReportsBehind(lambda run: written.append(run.name))
    for name, state in (("h", "FAILED"), ("p", "PAUSED")):
        behind(_Run(name, state))
        assert written[-1] == name  # already written when the call returns
    assert behind.close() == []


def test_a_report_that_could_not_be_written_is_said():
    def report(run):
        raise StorageFault(f"{run.name}/report.json", OSError(28, "No space left on device"))

    behind = ReportsBehind(report)
    behind(_Run("r1", "COMPLETED"))
    failed = behind.close()
    assert [(run.name, "No space left" in why) for run, why in failed] == [("r1", True)]


def test_a_batch_says_which_completed_items_report_could_not_be_written(tmp_path, monkeypatch):
    from openadapt_flow.runtime import run_batch
    from openadapt_flow.runtime.batch.runner import BatchEvents
    from tests.unit.report.report_runs import run_env
    from tests.unit.runtime.test_batch import _items, _request

    run_env(tmp_path, monkeypatch)
    monkeypatch.setenv("FLOW_STATE_DIR", str(tmp_path / "state"))
    said: list[tuple[str, str]] = []

    class Events(BatchEvents):
        def report_failed(self, run: str, why: str) -> None:
            said.append((run, why))

    def full_disk(run):
        raise StorageFault(f"{run.ref}/report.json", OSError(28, "No space left on device"))

    results = run_batch(_request(tmp_path, "normal", _items("A", "B"), reporter=full_disk), Events())
    assert [r.status.value for r in results] == ["done", "done"]  # a report never changes an outcome
    # the first item's report was written behind the batch; the last item's is the run's own (its stop says it)
    assert len(said) == 1 and said[0][0] == results[0].run_dir and "No space left" in said[0][1]
