"""Tamper with every run-dir file and every field that matters, then resume: each attack is refused (exit 6, one line)
or harmless — never a write without a valid, unused decision, never a second write (SPEC §8: the journal is the record
of truth; state.json, checkpoint.json and pending_escalation.json are views of it).

Extend by adding a case to CASES: (setup, tamper, expectation).
- setup `paused`: the run waits at `post` for an operator; no decision exists. `post` must not run.
- setup `approved`: an operator approved `continue`; `post` may run once, only if the tamper did not matter.
- expectation `refused`: resume must refuse (exit 6); `harmless`: refused or continued without harm.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from openadapt_flow.errors import RefusedError
from openadapt_flow.runtime.operate.decisions import approve
from openadapt_flow.runtime.runs import resume
from openadapt_flow.runtime.act.launch import ReplayRequest
from openadapt_flow.runtime.runs import replay
from tests.attack.attack_support import STEPS, Workspace, cut_journal, edit_json, env_for, records, ws  # noqa: F401
from tests.support.cli import flow_env, run_flow

pytestmark = pytest.mark.timeout(90)


def _pending(**changes: object) -> Callable[[Path], None]:
    return lambda run: edit_json(run / "pending_escalation.json", **changes)


def _state(**changes: object) -> Callable[[Path], None]:
    return lambda run: edit_json(run / "state.json", **changes)


def _write(name: str, data: bytes) -> Callable[[Path], None]:
    return lambda run: (run / name).write_bytes(data)


def _delete(*names: str) -> Callable[[Path], None]:
    def go(run: Path) -> None:
        for name in names:
            p = run / name
            shutil.rmtree(p) if p.is_dir() else p.unlink()
    return go


def _half(name: str) -> Callable[[Path], None]:
    return lambda run: (run / name).write_bytes((run / name).read_bytes()[: len((run / name).read_bytes()) // 2])


def _both(*fns: Callable[[Path], None]) -> Callable[[Path], None]:
    def go(run: Path) -> None:
        for fn in fns:
            fn(run)
    return go


def _edit_record(which: int, **data: object) -> Callable[[Path], None]:
    def go(run: Path) -> None:
        lines = (run / "journal.jsonl").read_text().splitlines()
        rec = json.loads(lines[which])
        rec["data"].update(data)
        lines[which] = json.dumps(rec)
        (run / "journal.jsonl").write_text("\n".join(lines) + "\n")
    return go


def _drop_record(which: int) -> Callable[[Path], None]:
    def go(run: Path) -> None:
        lines = (run / "journal.jsonl").read_text().splitlines(keepends=True)
        del lines[which]
        (run / "journal.jsonl").write_text("".join(lines))
    return go


def _approval(**changes: object) -> Callable[[Path], None]:
    return lambda run: edit_json(run / "approval.json", **changes)


def _forget_ledger(run: Path) -> None:
    for p in (Path(os.environ["FLOW_STATE_DIR"]) / "ledger").glob("*.json"):
        p.unlink()


def _lease(**changes: object) -> Callable[[Path], None]:
    return lambda run: edit_json(run / "lease.json", **changes)


P, A = "paused", "approved"
R, H = "refused", "harmless"
CASES: dict[str, tuple[str, Callable[[Path], None], str]] = {
    # pending_escalation.json: a view of the journal's pause — rebuilt when missing, refused when it disagrees
    "pending deleted": (P, _delete("pending_escalation.json"), H),
    "pending deleted (approved)": (A, _delete("pending_escalation.json"), H),
    "pending reason awaiting_timer": (P, _pending(paused_reason="awaiting_timer"), R),
    "pending reason awaiting_child": (P, _pending(paused_reason="awaiting_child"), R),
    "pending reason awaiting_user": (P, _pending(paused_reason="awaiting_user"), R),
    "pending reason awaiting_signal": (P, _pending(paused_reason="awaiting_signal"), R),
    "pending reason suspended_orphan": (P, _pending(paused_reason="suspended_orphan"), R),
    "pending due_epoch 0": (P, _pending(due_epoch=0), R),
    "pending allowed + skip": (P, _pending(allowed_decisions=["continue", "skip", "reject", "escalate"]), R),
    "pending step moved": (P, _pending(step="done"), R),
    "pending outcome cleared": (P, _pending(transaction_outcome=None), R),
    "pending pause_id": (P, _pending(pause_id="pause-0000000000"), R),
    "pending garbage": (P, _write("pending_escalation.json", b"\x00garbage"), R),
    "pending truncated": (P, _half("pending_escalation.json"), R),
    "pending not an object": (P, _write("pending_escalation.json", b"[]"), R),
    # journal: the record of truth; its end is sealed in state.json and the run ledger
    "journal cut: paused": (P, lambda run: cut_journal(run, 1), R),
    "journal cut: escalation_opened+paused": (P, lambda run: cut_journal(run, 2), R),
    "journal cut: halted+escalation+paused": (P, lambda run: cut_journal(run, 3), R),
    "journal cut + pending deleted": (P, _both(lambda run: cut_journal(run, 2), _delete("pending_escalation.json")), R),
    "journal cut + state deleted": (P, _both(lambda run: cut_journal(run, 2), _delete("state.json")), R),
    "journal cut to run_started": (P, lambda run: cut_journal(run, len(records(run)) - 1), R),
    "journal cut (approved)": (A, lambda run: cut_journal(run, 2), R),
    "journal emptied": (P, _write("journal.jsonl", b""), R),
    "journal deleted": (P, _delete("journal.jsonl"), R),
    "journal middle edited": (P, _edit_record(2, index=9), R),
    "journal middle dropped": (P, _drop_record(2), R),
    "journal torn last line": (P, lambda run: (run / "journal.jsonl").write_bytes((run / "journal.jsonl").read_bytes()[:-20]), R),
    # state.json: sealed (HMAC, installation key) with the journal's end
    "state deleted": (P, _delete("state.json"), R),
    "state RUNNING": (P, _state(state="RUNNING"), R),
    "state INTERRUPTED": (P, _state(state="INTERRUPTED", paused_reason=None), R),
    "state COMPLETED": (P, _state(state="COMPLETED"), R),
    "state reason awaiting_timer": (P, _state(paused_reason="awaiting_timer"), R),
    "state reason edited (approved)": (A, _state(paused_reason="awaiting_timer"), R),
    "state seal removed": (P, _state(seal=None), R),
    "state journal_seq lowered": (P, lambda run: edit_json(run / "state.json", journal_seq=json.loads((run / "state.json").read_text())["journal_seq"] - 2), R),
    "state garbage": (P, _write("state.json", b"{not json"), R),
    # checkpoint.json: a view rebuilt from the journal when missing; an edit is refused
    "checkpoint deleted": (P, _delete("checkpoint.json"), H),
    "checkpoint deleted (approved)": (A, _delete("checkpoint.json"), H),
    "checkpoint next_index": (P, lambda run: edit_json(run / "checkpoint.json", next_index=2, step="post"), R),
    "checkpoint garbage": (P, _write("checkpoint.json", b"\xff"), R),
    # manifest.json: pinned by run_started
    "manifest config edited": (P, lambda run: edit_json(run / "manifest.json", durable=False, allow_model=True), R),
    "manifest run_id edited": (P, lambda run: edit_json(run / "manifest.json", run_id="run-000000000000"), R),
    "bundle snapshot edited": (A, lambda run: (run / "bundle" / "flow.yaml").write_text((run / "bundle" / "flow.yaml").read_text() + "\n# x\n"), R),
    # approval.json: signed and bound to one pause
    "approval decision edited": (A, _approval(decision="skip"), R),
    "approval operator edited": (A, _approval(operator="mallory"), R),
    "approval pause_id edited": (A, _approval(pause_id="pause-0000000000"), R),
    "approval votes padded": (A, _approval(votes=[{"os_user": "a"}, {"os_user": "b"}]), R),
    "approval garbage": (A, _write("approval.json", b"nope"), R),
    "approval deleted": (A, _delete("approval.json"), R),
    "approval forged for paused run": (P, _write("approval.json", b'{"decision": "continue", "signature": "00"}'), R),
    # lease, lock, decisions/, the ledger: nothing there can authorise a write
    "lease deleted": (P, _delete("lease.json"), H),
    "lease garbage": (P, _write("lease.json", b"\x00"), H),
    "lease generation huge": (P, _lease(generation=10**9), H),
    "lease deleted (approved)": (A, _delete("lease.json"), H),
    "lock deleted": (A, _delete(".lock"), H),
    "decisions/ forged entry": (P, lambda run: ((run / "decisions").mkdir(), (run / "decisions" / "x.json").write_text("{}")), H),
    "ledger forgotten": (P, _forget_ledger, H),
    "ledger forgotten (approved)": (A, _forget_ledger, H),
}


def _pause(ws: Workspace, setup: str) -> Path:
    out = ws.start()
    assert (out.state, json.loads((out.run_dir / "state.json").read_text())["paused_reason"]) == ("PAUSED", "awaiting_approval")
    if setup == A:
        approve(out.run_dir, "continue", "alice")
    return out.run_dir


@pytest.mark.parametrize("case", list(CASES))
def test_tampered_run_dir_is_refused_or_harmless(ws, case):
    setup, tamper, expect = CASES[case]
    run = _pause(ws, setup)
    tamper(run)
    try:
        out = resume(run)
    except RefusedError as e:
        assert e.exit_code == 6 and "\n" not in str(e), str(e)
        assert ws.posts() == 0
        return
    assert expect == H, f"{case}: not refused, resume ended {out.state}: {out.message}"
    if setup == P:
        assert ws.posts() == 0, f"{case}: `post` ran with no operator decision"
    else:
        assert out.state == "COMPLETED" and ws.posts() == 1
        shutil.copyfile(next((run / "decisions").glob("*.json")), run / "approval.json")  # the used decision, again
        assert resume(run).state == "COMPLETED" and ws.posts() == 1


def test_a_journal_cut_back_before_a_consequential_dispatch_cannot_send_the_write_again(ws):
    """Killed after a write landed, before it was verified; the journal's tail (its action_dispatched) is cut so the
    write would look never sent. The run ledger sealed the dispatch before the input: refused, one write."""
    steps = [dict(s, consequential=True) if s["id"] == "post" else s for s in STEPS]
    die = Path(str(ws.down) + ".die")
    die.write_text("1")
    with pytest.raises(SystemExit):
        replay(ReplayRequest(bundle=ws.bundle(steps), params={}, backend=None, config=ws.config(), run_dir=ws.root / "run"))
    die.unlink()
    run = ws.root / "run"
    assert ws.posts() == 1 and records(run)[-1]["type"] == "action_dispatched"
    cut_journal(run, 1)
    with pytest.raises(RefusedError, match="cut journal"):
        resume(run)
    assert ws.posts() == 1


def test_a_deleted_pending_file_is_rebuilt_from_the_journal_and_still_needs_the_decision(ws):
    run = _pause(ws, P)
    before = json.loads((run / "pending_escalation.json").read_text())
    (run / "pending_escalation.json").unlink()
    with pytest.raises(RefusedError, match="awaiting an operator decision"):
        resume(run)
    assert json.loads((run / "pending_escalation.json").read_text()) == before  # the view, rebuilt from the journal
    assert ws.posts() == 0
    approve(run, "continue", "alice")
    assert resume(run).state == "COMPLETED" and ws.posts() == 1


def test_the_journal_records_the_whole_pause(ws):
    run = _pause(ws, P)
    opened = [r for r in records(run) if r["type"] == "escalation_opened"][-1]["data"]["pending"]
    on_disk = json.loads((run / "pending_escalation.json").read_text())
    assert {k: v for k, v in on_disk.items() if k != "schema"} == opened
    assert {"pause_id", "paused_reason", "step", "allowed_decisions", "due_epoch", "task"} <= set(opened)


def test_a_journal_ahead_of_the_seal_is_accepted(ws):
    """Records written after the last state transition (a crash before the next one) are normal, not a cut."""
    run = _pause(ws, A)
    state = json.loads((run / "state.json").read_text())
    assert state["journal_seq"] == len(records(run))
    from openadapt_flow.store.journal import Journal
    from openadapt_flow.store.keys import load_key

    journal, _ = Journal.open_existing(run / "journal.jsonl", load_key(create=False))
    journal.append("note", None, {"why": "written just before a crash"})
    journal.close()
    assert resume(run).state == "COMPLETED" and ws.posts() == 1


@pytest.mark.parametrize("case", ["pending deleted", "pending reason awaiting_timer", "journal cut: escalation_opened+paused", "state RUNNING"])
def test_cli_refuses_tampered_run_in_one_line_with_exit_6(tmp_path, case):
    env = flow_env(tmp_path, **env_for(tmp_path))
    env["PYTHONPATH"] = str(tmp_path) + os.pathsep + env["PYTHONPATH"]
    from tests.attack.attack_support import TOOLS
    (tmp_path / "attack_tools.py").write_text(TOOLS)
    wsp = Workspace(tmp_path)
    wsp.down.write_text("down")
    r = run_flow(["replay", str(wsp.bundle(STEPS)), "--durable", "--run-dir", str(tmp_path / "run")], tmp_path, env=env)
    assert r.returncode == 3, r.stderr + r.stdout
    wsp.down.unlink()
    CASES[case][1](tmp_path / "run")
    res = run_flow(["resume", str(tmp_path / "run")], tmp_path, env=env)
    assert res.returncode == 6, res.stderr + res.stdout
    assert len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr, res.stderr
    assert wsp.posts() == 0
