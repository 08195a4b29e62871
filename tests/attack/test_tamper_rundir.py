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
from openadapt_flow.runtime.operate.approval import approve
from openadapt_flow.runtime.runs import replay, resume
from openadapt_flow.runtime.start.launch import ReplayRequest
from openadapt_flow.runtime.start.runref import open_ref
from openadapt_flow.store.keys import load_key
from tests.attack.attack_support import STEPS, TOOLS, RunFiles, Workspace, env_for, workspace, wss  # noqa: F401
from tests.support import memcrash
from tests.support.cli import flow_env, run_flow

pytestmark = pytest.mark.timeout(90)
Tamper = Callable[[RunFiles], None]


def _pending(**changes: object) -> Tamper:
    return lambda f: f.edit_json("pending_escalation.json", **changes)


def _state(**changes: object) -> Tamper:
    return lambda f: f.edit_json("state.json", **changes)


def _write(name: str, data: bytes) -> Tamper:
    return lambda f: f.write(name, data)


def _delete(*names: str) -> Tamper:
    def go(f: RunFiles) -> None:
        for name in names:
            f.delete(name)

    return go


def _half(name: str) -> Tamper:
    return lambda f: f.write(name, f.read(name)[: len(f.read(name)) // 2])


def _both(*fns: Tamper) -> Tamper:
    def go(f: RunFiles) -> None:
        for fn in fns:
            fn(f)

    return go


def _edit_record(which: int, **data: object) -> Tamper:
    def go(f: RunFiles) -> None:
        lines = f.read("journal.jsonl").decode().splitlines()
        rec = json.loads(lines[which])
        rec["data"].update(data)
        lines[which] = json.dumps(rec)
        f.write("journal.jsonl", ("\n".join(lines) + "\n").encode())

    return go


def _drop_record(which: int) -> Tamper:
    def go(f: RunFiles) -> None:
        lines = f.read("journal.jsonl").decode().splitlines(keepends=True)
        del lines[which]
        f.write("journal.jsonl", "".join(lines).encode())

    return go


def _approval(**changes: object) -> Tamper:
    return lambda f: f.edit_json("approval.json", **changes)


def _forget_ledger(f: RunFiles) -> None:
    f.forget_ledger()


def _lease(**changes: object) -> Tamper:
    return lambda f: f.edit_json("lease.json", **changes)


P, A = "paused", "approved"
R, H = "refused", "harmless"
CASES: dict[str, tuple[str, Tamper, str]] = {
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
    "journal cut: paused": (P, lambda f: f.cut_journal(1), R),
    "journal cut: escalation_opened+paused": (P, lambda f: f.cut_journal(2), R),
    "journal cut: halted+escalation+paused": (P, lambda f: f.cut_journal(3), R),
    "journal cut + pending deleted": (P, _both(lambda f: f.cut_journal(2), _delete("pending_escalation.json")), R),
    "journal cut + state deleted": (P, _both(lambda f: f.cut_journal(2), _delete("state.json")), R),
    "journal cut to run_started": (P, lambda f: f.cut_journal(len(f.records()) - 1), R),
    "journal cut (approved)": (A, lambda f: f.cut_journal(2), R),
    "journal emptied": (P, _write("journal.jsonl", b""), R),
    "journal deleted": (P, _delete("journal.jsonl"), R),
    "journal middle edited": (P, _edit_record(2, index=9), R),
    "journal middle dropped": (P, _drop_record(2), R),
    "journal torn last line": (P, lambda f: f.write("journal.jsonl", f.read("journal.jsonl")[:-20]), R),
    # state.json: sealed (HMAC, installation key) with the journal's end
    "state deleted": (P, _delete("state.json"), R),
    "state RUNNING": (P, _state(state="RUNNING"), R),
    "state INTERRUPTED": (P, _state(state="INTERRUPTED", paused_reason=None), R),
    "state COMPLETED": (P, _state(state="COMPLETED"), R),
    "state reason awaiting_timer": (P, _state(paused_reason="awaiting_timer"), R),
    "state reason edited (approved)": (A, _state(paused_reason="awaiting_timer"), R),
    "state seal removed": (P, _state(seal=None), R),
    "state journal_seq lowered": (
        P,
        lambda f: f.edit_json("state.json", journal_seq=f.json("state.json")["journal_seq"] - 2),
        R,
    ),
    "state garbage": (P, _write("state.json", b"{not json"), R),
    # checkpoint.json: a view rebuilt from the journal when missing; an edit is refused
    "checkpoint deleted": (P, _delete("checkpoint.json"), H),
    "checkpoint deleted (approved)": (A, _delete("checkpoint.json"), H),
    "checkpoint next_index": (P, lambda f: f.edit_json("checkpoint.json", next_index=2, step="post"), R),
    "checkpoint garbage": (P, _write("checkpoint.json", b"\xff"), R),
    # manifest.json: pinned by run_started
    "manifest config edited": (P, lambda f: f.edit_json("manifest.json", durable=False, allow_model=True), R),
    "manifest run_id edited": (P, lambda f: f.edit_json("manifest.json", run_id="run-000000000000"), R),
    "bundle snapshot edited": (A, lambda f: f.write("bundle/flow.yaml", f.read("bundle/flow.yaml") + b"\n# x\n"), R),
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
    "decisions/ forged entry": (P, _write("decisions/x.json", b"{}"), H),
    "ledger forgotten": (P, _forget_ledger, H),
    "ledger forgotten (approved)": (A, _forget_ledger, H),
}


def _pause(ws: Workspace, setup: str) -> Path:
    out = ws.start()
    assert (out.state, open_ref(out.run_dir).state()["paused_reason"]) == ("PAUSED", "awaiting_approval")
    if setup == A:
        approve(out.run_dir, "continue", "alice")
    return out.run_dir


# what an attacker with SQL access edits in the PostgreSQL store's rows: the journal's rows and the documents (the
# lease, the owner lock, consumed decisions, the ledger and artifacts are other tables, not modelled by RunFiles there)
SQL_CASES = [c for c in CASES if not any(w in c for w in ("lease", "lock", "decisions/", "ledger", "bundle"))]


@pytest.mark.parametrize("wss", ["filesystem", "memory"], indirect=True)
@pytest.mark.parametrize("case", list(CASES))
def test_tampered_run_dir_is_refused_or_harmless(wss, case):
    """On the memory store the same bytes are tampered with where the store holds them (RunFiles)."""
    check_tamper(wss, case)


@pytest.mark.parametrize("wss", ["postgres"], indirect=True)
@pytest.mark.parametrize("case", SQL_CASES)
def test_rows_tampered_in_sql_are_refused_or_harmless(wss, case):
    """The same attacks on a PostgreSQL run, in SQL: a journal row edited, dropped or cut (the rows replaced by the
    edited lines), a document's text edited or deleted. The hash chain and the seal catch them as on files."""
    check_tamper(wss, case)


def check_tamper(ws: Workspace, case: str) -> None:
    setup, tamper, expect = CASES[case]
    run = _pause(ws, setup)
    tamper(ws.files(run))
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
        f = ws.files(run)
        f.write("approval.json", f.read(f.decisions()[0]))  # the used decision, again
        assert resume(run).state == "COMPLETED" and ws.posts() == 1


def test_a_journal_cut_back_before_a_consequential_dispatch_cannot_send_the_write_again(wss):
    """Killed after a write landed, before it was verified; the journal's tail (its action_dispatched) is cut so the
    write would look never sent. The run ledger sealed the dispatch before the input: refused, one write."""
    ws = wss
    steps = [dict(s, consequential=True) if s["id"] == "post" else s for s in STEPS]
    die = Path(str(ws.down) + ".die")
    die.write_text("1")
    with pytest.raises(SystemExit):
        replay(
            ReplayRequest(bundle=ws.bundle(steps), params={}, backend=None, config=ws.config(), run_dir=ws.ref("run"))
        )
    die.unlink()
    run, f = ws.ref("run"), ws.files(ws.ref("run"))
    assert ws.posts() == 1 and f.records()[-1]["type"] == "action_dispatched"
    f.cut_journal(1)
    with pytest.raises(RefusedError, match="cut journal"):
        resume(run)
    assert ws.posts() == 1


def test_a_deleted_pending_file_is_rebuilt_from_the_journal_and_still_needs_the_decision(wss):
    ws = wss
    run = _pause(ws, P)
    f = ws.files(run)
    before = f.json("pending_escalation.json")
    f.delete("pending_escalation.json")
    with pytest.raises(RefusedError, match="awaiting an operator decision"):
        resume(run)
    assert f.json("pending_escalation.json") == before  # the view, rebuilt from the journal
    assert ws.posts() == 0
    approve(run, "continue", "alice")
    assert resume(run).state == "COMPLETED" and ws.posts() == 1


def test_the_journal_records_the_whole_pause(wss):
    run = _pause(wss, P)
    f = wss.files(run)
    opened = [r for r in f.records() if r["type"] == "escalation_opened"][-1]["data"]["pending"]
    stored = f.json("pending_escalation.json")
    assert {k: v for k, v in stored.items() if k != "schema"} == opened
    assert {"pause_id", "paused_reason", "step", "allowed_decisions", "due_epoch", "task"} <= set(opened)


def test_a_journal_ahead_of_the_seal_is_accepted(wss):
    """Records written after the last state transition (a crash before the next one) are normal, not a cut."""
    run = _pause(wss, A)
    f = wss.files(run)
    assert f.json("state.json")["journal_seq"] == len(f.records())
    journal, _ = open_ref(run).open_journal(load_key(create=False))
    journal.append("note", None, {"why": "written just before a crash"})
    journal.close()
    assert resume(run).state == "COMPLETED" and wss.posts() == 1


@pytest.mark.parametrize(
    "case",
    ["pending deleted", "pending reason awaiting_timer", "journal cut: escalation_opened+paused", "state RUNNING"],
)
@pytest.mark.parametrize("store", ["filesystem", "memory"])
def test_cli_refuses_tampered_run_in_one_line_with_exit_6(tmp_path, case, store):
    """`flow` as a process of its own (filesystem), or commands of this process on its memory store (memcrash)."""
    env = flow_env(tmp_path, **env_for(tmp_path))
    env["PYTHONPATH"] = str(tmp_path) + os.pathsep + env["PYTHONPATH"]
    (tmp_path / "attack_tools.py").write_text(TOOLS)
    wsp = Workspace(tmp_path, store)
    run = wsp.ref("run")
    flow = run_flow if store == "filesystem" else memcrash.flow
    where = ["--store", "memory:"] if store == "memory" else []
    wsp.down.write_text("down")
    r = flow(["replay", str(wsp.bundle(STEPS)), "--durable", "--run-dir", str(run), *where], tmp_path, env=env)
    assert r.returncode == 3, r.stderr + r.stdout
    wsp.down.unlink()
    CASES[case][1](wsp.files(run))
    res = flow(["resume", str(run)], tmp_path, env=env)
    assert res.returncode == 6, res.stderr + res.stdout
    assert len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr, res.stderr
    assert wsp.posts() == 0


def test_a_copy_of_a_memory_runs_records_under_another_name_writes_once(tmp_path, monkeypatch):
    """The memory store's `cp -r` (test_copy_restore.py on disk): a paused run's records, its approval with them,
    copied under a second name. The store's run ledger names the first as the run's holder: the copy is refused."""
    ws = workspace(tmp_path, monkeypatch, "memory")
    run = ws.start().run_dir
    approve(run, "continue", "alice")
    runs, name = memcrash.memory_store().runs, str(run).removeprefix("memory:")
    runs[f"{name}-copy"] = runs[name].survivor()
    copy = Path(f"memory:{name}-copy")
    with pytest.raises(RefusedError, match=f"held by {run}"):
        resume(copy)
    assert ws.posts() == 0
    assert resume(run).state == "COMPLETED" and ws.posts() == 1
    with pytest.raises(RefusedError, match="held by|older copy|already used"):
        resume(copy)
    assert ws.posts() == 1
