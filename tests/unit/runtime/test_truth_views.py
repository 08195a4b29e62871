"""Views of the journal across crash windows: a view that lags the journal is brought up to date, never a stuck run,
never a second use of a decision (SPEC §8)."""

from __future__ import annotations

import json

import pytest

from openadapt_flow.errors import RefusedError
from openadapt_flow.runtime.operate.approval import approve
from openadapt_flow.runtime.runs import resume
from openadapt_flow.store import Journal, RunDir, ledger
from openadapt_flow.store.escalation import journal_pause
from openadapt_flow.store.keys import load_key
from tests.attack.attack_support import records, ws  # noqa: F401

pytestmark = pytest.mark.timeout(60)


class Crash(BaseException):
    """Stands for the process dying at this point."""


def die(*a, **kw):
    raise Crash()


def test_killed_after_the_decision_record_resumes_once_without_asking_again(ws, monkeypatch):
    run = ws.start().run_dir
    approve(run, "continue", "alice")
    with monkeypatch.context() as m, pytest.raises(Crash):
        m.setattr(ledger, "consume", die)  # RunDir.ledger_consume marks it used in the run ledger
        resume(run)
    assert (run / "approval.json").exists() and (run / "pending_escalation.json").exists()  # views lag the journal
    out = resume(run)
    assert out.state == "COMPLETED" and ws.posts() == 1
    assert not (run / "approval.json").exists() and not (run / "pending_escalation.json").exists()
    assert [r["type"] for r in records(run)].count("decision") == 1


def test_killed_after_the_ledger_marked_the_decision_used_resumes_once(ws, monkeypatch):
    run = ws.start().run_dir
    approve(run, "continue", "alice")
    with monkeypatch.context() as m, pytest.raises(Crash):
        m.setattr(RunDir, "consume_approval", die)  # moving approval.json to decisions/
        resume(run)
    assert resume(run).state == "COMPLETED" and ws.posts() == 1


def test_killed_between_the_journaled_pause_and_its_file_still_needs_the_decision(ws, monkeypatch):
    with monkeypatch.context() as m, pytest.raises(Crash):
        m.setattr(RunDir, "write_pending", die)  # the view after the journal's `escalation_opened`
        ws.start()
    ws.down.unlink()
    run = ws.root / "run"
    assert not (run / "pending_escalation.json").exists()
    with pytest.raises(RefusedError, match="awaiting an operator decision"):
        resume(run)  # the pause is the journal's: its view is rebuilt, its decision still needed
    assert (run / "pending_escalation.json").exists() and ws.posts() == 0
    approve(run, "continue", "alice")
    assert resume(run).state == "COMPLETED" and ws.posts() == 1


def test_a_state_that_lags_run_finished_is_rebuilt_not_run_again(ws):
    run = ws.start().run_dir
    approve(run, "reject", "bob")
    st = RunDir(run)
    journal, _ = Journal.open_existing(run / "journal.jsonl", load_key(create=False))
    prior = [r for r in records(run) if r["type"] == "decision"][-1]
    journal.close()
    assert prior["data"]["decision"] == "reject"
    # as if killed after run_finished, before the state write: a sealed PAUSED state one record behind the journal
    doc = st.state()
    journal = Journal(run / "journal.jsonl", load_key(create=False), records(run)[:-1])
    st.write_state("PAUSED", journal=journal, paused_reason="awaiting_approval")
    journal.close()
    out = resume(run)
    assert (
        (out.state, out.exit_code) == ("BLOCKED", 4) and doc["state"] == "BLOCKED" and st.state()["state"] == "BLOCKED"
    )


def test_the_journal_pause_follows_escalation_and_closes_on_its_decision(ws):
    run = ws.start().run_dir
    first, _ = journal_pause(records(run))
    approve(run, "escalate", "alice")
    second, closed = journal_pause(records(run))
    assert second["escalated_from"] == first["pause_id"] and closed == {first["pause_id"]}
    assert json.loads((run / "pending_escalation.json").read_text())["pause_id"] == second["pause_id"]
    approve(run, "continue", "alice")
    assert resume(run).state == "COMPLETED"
    assert journal_pause(records(run))[0] is None
    entry = json.loads((ledger.state_dir() / "ledger" / f"{second['run_id']}.json").read_text())
    assert set(entry["consumed"]) == {second["pause_id"]}
