"""The one durable step (runtime/act/durable/) and run progress as a fold over the journal (runtime/judge/fold.py)."""

from types import SimpleNamespace

import pytest

from openadapt_flow.errors import FlowError, RunSignal
from openadapt_flow.records.checkpoint import checkpoint_from_records
from openadapt_flow.runtime.act.durable import durable_call, record_skipped, record_verified
from openadapt_flow.runtime.judge.fold import RunProgress
from openadapt_flow.runtime.judge.halt import Halt, Pause, StopRequested
from openadapt_flow.runtime.judge.policy import PolicyBlock
from openadapt_flow.runtime.workflow.ctx import WorkflowStop
from openadapt_flow.store import FilesystemStore, MemoryStore, PostgresStore
from openadapt_flow.store.atomic import StorageFault
from openadapt_flow.store.lease import LeaseLost
from tests.support.pg import pg_server, store_spec  # noqa: F401 — pg_server is a session fixture (one server per worker)

pytestmark = pytest.mark.timeout(30)
KEY = b"k" * 32


@pytest.fixture(params=["filesystem", "memory", "postgres"])
def run(request, tmp_path, monkeypatch):
    """A new run in each store (the durable step reaches it only through its handle); PostgreSQL: a schema per test."""
    if request.param == "postgres":
        spec = store_spec(request.getfixturevalue("pg_server"), f"c{abs(hash(request.node.nodeid)):x}", monkeypatch)
        return PostgresStore(spec).create_run()
    store = FilesystemStore(tmp_path / "runs") if request.param == "filesystem" else MemoryStore()
    return store.create_run()


def ctx_for(run, durable=True):
    """What durable_call reads of a run context: its journal (folded as it is appended), run and durability."""
    journal = run.new_journal(KEY)
    fold = RunProgress()
    journal.observers.append(fold.note)
    return SimpleNamespace(journal=journal, fold=fold, durable=durable, run=run)


def test_a_call_runs_once_then_returns_its_journaled_result(run):
    ctx = ctx_for(run)
    ran = []

    def body():
        ran.append(1)
        return {"index": 0, "verified_by": "runtime", "result": {"n": 7}, "screen_facts": []}

    first = durable_call(ctx, "fetch", body)
    again = durable_call(ctx, "fetch", body)
    assert ran == [1] and again == first and first["data"]["result"] == {"n": 7}
    assert [r["type"] for r in run.load_journal(KEY).records] == ["step_verified"]


def test_record_verified_journals_then_writes_the_checkpoint_the_journal_implies(run):
    ctx = ctx_for(run)
    record_verified(ctx, "a", {"index": 0, "verified_by": "runtime", "result": {"x": 1}, "screen_facts": []})
    record_skipped(ctx, "b", {"index": 1, "verified_by": "operator", "operator": "ann"})
    records = run.load_journal(KEY).records
    stored = run.read_checkpoint()
    assert stored == checkpoint_from_records(records)
    assert stored["step"] == "b" and stored["next_index"] == 2 and stored["results"] == {"a": {"x": 1}}


def test_a_run_that_is_not_durable_writes_no_checkpoint(run):
    ctx = ctx_for(run, durable=False)
    record_verified(ctx, "a", {"index": 0, "verified_by": "runtime", "screen_facts": []})
    assert run.read_checkpoint() is None and ctx.fold.next_index == 1


def test_a_body_that_signals_records_nothing(run):
    ctx = ctx_for(run)

    def body():
        raise Pause("awaiting_user", "ask", "which?")

    with pytest.raises(Pause):
        durable_call(ctx, "ask", body)
    assert ctx.fold.saved("ask") is None and run.read_checkpoint() is None


def test_the_fold_seeded_from_a_journal_equals_the_fold_kept_while_it_was_written(run):
    ctx = ctx_for(run)
    j = ctx.journal
    j.append("step_started", "q", {"index": 0})
    j.append("asked", "q", {"index": 0, "question": "?"})
    j.append("timer_set", "t", {"index": 1, "due_epoch": 123.0})
    j.append("child_started", "sub", {"index": 2, "child_run": "run.sub", "bundle": "b"})
    j.append("child_started", "replay-x", {"run_dir": "children/replay-x", "what": "b"})
    j.append("resolved", "g", {"model_calls": 2})
    j.append("action_dispatched", "g", {"action": "click"})
    record_verified(ctx, "q", {"index": 0, "verified_by": "operator", "result": {"answer": "yes"}, "screen_facts": []})
    seeded = RunProgress()
    seeded.seed(run.load_journal(KEY).records)
    live = ctx.fold
    for fold in (live, seeded):
        assert fold.results == {"q": {"answer": "yes"}} and fold.asked == {"q"} and fold.timers == {"t": 123.0}
        assert fold.children == {"sub": "run.sub", "replay-x": "children/replay-x"}
        assert fold.budget.model_calls == 2 and fold.budget.dispatches == {"g": 1} and fold.next_index == 1
    assert seeded.checkpoint() == live.checkpoint()


@pytest.mark.parametrize("signal", [Halt, Pause, StopRequested, PolicyBlock, WorkflowStop, LeaseLost, StorageFault])
def test_every_control_signal_is_a_run_signal_that_no_except_exception_swallows(signal):
    assert issubclass(signal, RunSignal) and issubclass(signal, BaseException)
    assert not issubclass(signal, Exception) and not issubclass(signal, FlowError)
