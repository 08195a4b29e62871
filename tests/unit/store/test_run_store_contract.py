"""The run-store contract (SPEC §5, §7, §8, §18): every store keeps the same invariants, pinned here for each."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

from openadapt_flow.bundle.loader import load_bundle
from openadapt_flow.errors import RefusedError, RunDirError
from openadapt_flow.records.checkpoint import checkpoint_from_records
from openadapt_flow.store import FilesystemStore, MemoryStore, PostgresRun, PostgresStore, RunDir, layout
from openadapt_flow.store.base import RunHandle, RunStore
from openadapt_flow.store.lease import LeaseLost
from tests.support.bundles import minimal_flow, write_bundle
from tests.support.pg import pg_server, store_spec  # noqa: F401 — pg_server is a session fixture (one server per worker)

# these tests exercise the store with small hand-made documents (an incident with two fields), not the runtime's records
pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.invalid_run_records("store tests write partial documents on purpose"),
]

KEY = b"k" * 64
NOW = datetime(2026, 1, 2, 3, 4, 5)


class Raw:
    """A store's records as bytes, to damage them the way a crash or an attacker would."""

    def __init__(self, run: RunHandle) -> None:
        self.run = run

    def journal(self) -> bytes:
        if isinstance(self.run, PostgresRun):
            return self.run.journal_bytes()
        if isinstance(self.run, RunDir):
            return self.run.journal_path.read_bytes()
        return bytes(self.run.recs.journal)  # type: ignore[attr-defined]

    def set_journal(self, data: bytes) -> None:
        if isinstance(self.run, PostgresRun):  # one row per line, as the store writes them; a torn tail is a last row
            lines = [line for line in data.splitlines(keepends=True) if line]
            self.run.store.run("DELETE FROM flow_journal WHERE run = %s", (self.run.id(),))
            for seq, line in enumerate(lines, 1):
                self.run.store.run(
                    "INSERT INTO flow_journal (run, seq, line) VALUES (%s, %s, %s)", (self.run.id(), seq, line)
                )
        elif isinstance(self.run, RunDir):
            self.run.journal_path.write_bytes(data)
        else:
            self.run.recs.journal[:] = data  # type: ignore[attr-defined]

    def set_doc(self, what: str, doc: dict) -> None:
        if isinstance(self.run, PostgresRun):
            self.run.put_text(what, json.dumps(doc))
        elif isinstance(self.run, RunDir):
            Path(self.run.describe(what)).write_text(json.dumps(doc))
        else:
            self.run.recs.docs[what] = json.dumps(doc)  # type: ignore[attr-defined]


@pytest.fixture(params=["filesystem", "memory", "postgres"])
def store(request, tmp_path, monkeypatch) -> RunStore:
    monkeypatch.setenv("FLOW_STATE_DIR", str(tmp_path / "state"))
    if request.param == "postgres":  # a fresh schema per test on the session's server
        return PostgresStore(
            store_spec(request.getfixturevalue("pg_server"), f"t{abs(hash(request.node.nodeid)):x}", monkeypatch)
        )
    return FilesystemStore(tmp_path / "runs") if request.param == "filesystem" else MemoryStore()


def started(store: RunStore, run_id: str = "run-1", ref: str | None = None) -> RunHandle:
    run = store.create_run(ref, now=NOW)
    run.write_manifest({"run_id": run_id, "durable": True, "config": {}})
    return run


def verified(journal, step: str, index: int) -> dict:
    journal.append("step_started", step, {"index": index})
    journal.append("action_dispatched", step, {"generation": 1})
    return journal.append("step_verified", step, {"index": index, "result": {"n": index}, "screen_facts": []})


# --- journal: chain, torn tail, break ---


def test_the_journal_chain_is_verified_on_read_and_continues_after_reopen(store):
    run = started(store)
    j = run.new_journal(KEY)
    for i in range(3):
        j.append("note", f"s{i}", {"i": i})
    j.close()
    again, records = run.open_journal(KEY)
    assert [r["seq"] for r in records] == [1, 2, 3] and records[1]["prev_hash"] == records[0]["hash"]
    again.append("note", "s3")
    assert [r["seq"] for r in run.load_journal(KEY).records] == [1, 2, 3, 4]
    with pytest.raises(RefusedError, match="seq 1"):
        run.load_journal(b"x" * 64)  # another installation's key: nothing verifies


def test_a_torn_last_line_is_cut_and_the_next_record_follows_the_last_whole_one(store):
    run = started(store)
    j = run.new_journal(KEY)
    j.append("note", "a")
    j.append("note", "b")
    raw = Raw(run)
    whole = raw.journal()
    raw.set_journal(whole + b'{"seq": 3, "ts": "2026')
    loaded = run.load_journal(KEY)
    assert [r["seq"] for r in loaded.records] == [1, 2] and loaded.truncated_bytes > 0
    assert raw.journal() != whole  # not repaired by a plain read
    writer, records = run.open_journal(KEY)  # repairs
    assert raw.journal() == whole and len(records) == 2
    writer.append("note", "c")
    assert [r["step"] for r in run.load_journal(KEY).records] == ["a", "b", "c"]


def test_any_other_break_is_refused_naming_the_first_bad_seq(store):
    run = started(store)
    j = run.new_journal(KEY)
    for s in "abcd":
        j.append("note", s)
    raw = Raw(run)
    lines = raw.journal().split(b"\n")
    rec = json.loads(lines[1])
    rec["step"] = "edited"
    lines[1] = json.dumps(rec, separators=(",", ":")).encode()
    raw.set_journal(b"\n".join(lines))
    with pytest.raises(RefusedError, match="chain broken at seq 2"):
        run.load_journal(KEY)
    with pytest.raises(RefusedError, match="seq 2"):
        run.open_journal(KEY)


# --- state: seal ---


def test_a_sealed_state_verifies_while_the_journal_reaches_its_end(store):
    run = started(store)
    j = run.new_journal(KEY)
    j.append("run_started")
    run.write_state("RUNNING", journal=j, message="m")
    j.append("note", "after the seal")  # ahead of the seal: fine
    doc = run.check_seal(run.load_journal(KEY).records, KEY)
    assert doc is not None and doc["state"] == "RUNNING" and doc["journal_seq"] == 1 and run.state()["message"] == "m"
    assert run.has_state()


def test_a_cut_journal_or_an_edited_state_is_refused(store):
    run = started(store)
    j = run.new_journal(KEY)
    j.append("run_started")
    j.append("note", "x")
    run.write_state("PAUSED", journal=j, paused_reason="awaiting_user")
    records = run.load_journal(KEY).records
    with pytest.raises(RefusedError, match="sealed at seq 2"):
        run.check_seal(records[:1], KEY)
    edited = dict(run.state(), state="COMPLETED")
    Raw(run).set_doc("state", edited)
    with pytest.raises(RefusedError, match="seal does not verify"):
        run.check_seal(records, KEY)


def test_a_state_missing_beside_a_journal_is_refused_and_none_without_either(store):
    run = started(store)
    assert run.check_seal([], KEY) is None
    j = run.new_journal(KEY)
    j.append("run_started")
    with pytest.raises(RefusedError, match="missing while the journal has 1 records"):
        run.check_seal(run.load_journal(KEY).records, KEY)


# --- checkpoint: lag rebuilt, ahead refused ---


def test_a_lagging_or_missing_checkpoint_is_rebuilt_from_the_journal(store):
    run = started(store)
    j = run.new_journal(KEY)
    first = [verified(j, "a", 0)]
    run.write_checkpoint(checkpoint_from_records(first))
    verified(j, "b", 1)
    records = run.load_journal(KEY).records
    cp, status = run.reconcile_checkpoint(records)
    assert (
        status == "rebuilt"
        and cp["step"] == "b"
        and cp["next_index"] == 2
        and cp["results"] == {"a": {"n": 0}, "b": {"n": 1}}
    )
    assert run.read_checkpoint() == cp
    assert run.reconcile_checkpoint(records) == (cp, "ok")


def test_a_checkpoint_ahead_of_the_journal_or_disagreeing_with_it_is_refused(store):
    run = started(store)
    j = run.new_journal(KEY)
    verified(j, "a", 0)
    cp = checkpoint_from_records(run.load_journal(KEY).records)
    Raw(run).set_doc("checkpoint", dict(cp, seq=cp["seq"] + 5))
    with pytest.raises(RefusedError, match="which the journal does not have"):
        run.reconcile_checkpoint(run.load_journal(KEY).records)
    Raw(run).set_doc("checkpoint", dict(cp, next_index=7))
    with pytest.raises(RefusedError, match="content differs"):
        run.reconcile_checkpoint(run.load_journal(KEY).records)


# --- lease: one owner, generation fencing ---


def test_one_owner_at_a_time_and_a_replaced_generation_is_fenced(store):
    run = started(store)
    first = run.lease(30).acquire()
    assert first.generation == 1 and first.still_owner()
    with pytest.raises(RefusedError, match="owned by a live process"):
        run.lease(30).acquire()
    assert run.try_lock() is None
    first.fence()
    first.release()
    second = run.lease(30).acquire()
    try:
        assert second.generation == 2 and run.lease_info().generation == 2
        with pytest.raises(LeaseLost, match="generation 1 was replaced"):
            first.fence()
        second.fence()
    finally:
        second.release()
    unlock = run.try_lock()
    assert unlock is not None
    unlock()


# --- escalation, approval, decisions: consumed once ---


def test_an_approval_write_is_a_compare_and_set(store):
    """Issue 34 (5): a writer that read no approval, or another one than the store holds, never overwrites it."""
    from openadapt_flow.store.escalation import ApprovalChanged

    run = started(store)
    run.write_pending({"pause_id": "pause-1", "step": "s"})
    run.write_approval({"pause_id": "pause-1", "decision": "continue", "operator": "alice"}, "sig-a", replaces=None)
    for stale in (None, "sig-other"):  # it read nothing, or an approval since replaced
        with pytest.raises(ApprovalChanged, match="another decision was recorded"):
            run.write_approval(
                {"pause_id": "pause-1", "decision": "reject", "operator": "bob"}, "sig-b", replaces=stale
            )
    assert (run.read_approval()["operator"], run.read_approval()["signature"]) == ("alice", "sig-a")
    run.write_approval({"pause_id": "pause-1", "decision": "continue", "operator": "alice"}, "sig-ab", replaces="sig-a")
    assert run.read_approval()["signature"] == "sig-ab"


def test_an_approval_is_consumed_once_and_the_ledger_refuses_a_second_use(store):
    run = started(store)
    run.write_pending({"pause_id": "pause-1", "step": "s"})
    assert run.has_pending() and run.read_pending()["schema"] == "openadapt-flow/pending_escalation@1"
    run.write_approval({"pause_id": "pause-1", "decision": "continue"}, "sig")
    assert run.has_approval() and run.read_approval()["signature"] == "sig"
    run.consume_approval("pause-1")
    assert not run.has_approval() and run.has_decision("pause-1")
    assert run.read_decision("pause-1")["decision"] == "continue" and [d["pause_id"] for d in run.decisions()] == [
        "pause-1"
    ]
    run.remove_pending()
    assert run.read_pending() is None and not run.has_pending()
    run.ledger_consume("pause-1", "continue", 5, "h5")
    run.ledger_consume("pause-1", "continue", 5, "h5")  # the same use (a crash between the record and the mark)
    with pytest.raises(RefusedError, match="already used"):
        run.ledger_consume("pause-1", "continue", 9, "h9")
    assert run.ledger_consumed("pause-1")["seq"] == 5


def test_the_ledger_refuses_a_journal_that_does_not_reach_its_seal(store):
    run = started(store)
    j = run.new_journal(KEY)
    j.append("run_started")
    j.append("note", "x")
    run.write_state("RUNNING", journal=j)
    records = run.load_journal(KEY).records
    assert run.ledger_claim(records)["seal"]["seq"] == 2
    with pytest.raises(RefusedError, match="ledger's seal is at seq 2"):
        run.ledger_claim(records[:1])


def test_incident_and_reports_round_trip(store):
    run = started(store)
    run.write_incident({"id": "incident-1", "rule": "operator_reject"})
    assert run.read_incident()["rule"] == "operator_reject"
    run.write_reports({"run_id": "run-1", "state": "BLOCKED"}, "# md\n", "<html></html>")
    assert run.get_artifact("REPORT.md") == b"# md\n" and run.get_artifact("report.html") == b"<html></html>"


# --- artifacts ---


def test_artifacts_round_trip_and_materialise_for_code_that_needs_a_directory(store, tmp_path):
    run = started(store)
    run.put_artifact("patches/p1/bundle/flow.yaml", b"name: x\n")
    run.put_artifact("patches/p1/patch.json", b"{}")
    assert run.get_artifact("patches/p1/bundle/flow.yaml") == b"name: x\n" and run.get_artifact("patches/none") is None
    assert run.list_artifacts("patches") == ["patches/p1/bundle/flow.yaml", "patches/p1/patch.json"]
    assert (run.artifact_dir("patches/p1/bundle") / "flow.yaml").read_bytes() == b"name: x\n"
    src = tmp_path / "src"
    (src / "templates").mkdir(parents=True)
    (src / "flow.yaml").write_text("steps: []\n")
    (src / "templates" / "a.png").write_bytes(b"png")
    run.snapshot_bundle(src, ("flow.yaml", "templates/a.png"))
    assert (run.artifact_dir("bundle") / "templates" / "a.png").read_bytes() == b"png"
    run.remove_artifacts("patches")
    assert run.list_artifacts("patches") == []
    with pytest.raises(RefusedError, match="not a path inside the run"):
        run.put_artifact("../escape", b"x")


def test_frames_are_written_off_the_hot_path_and_listed(store):
    run = started(store)
    writer = run.frame_writer()
    assert writer.save("000-a-before.png", np.zeros((4, 4, 3), np.uint8)) == "frames/000-a-before.png"
    assert writer.save_now("halt-a.png", np.zeros((4, 4, 3), np.uint8)) == "frames/halt-a.png"
    writer.close()
    assert run.frame_names() == {"000-a-before.png", "halt-a.png"} and writer.errors == []
    assert run.get_artifact("frames/halt-a.png").startswith(b"\x89PNG")


# --- runs: create, open, find, list, children ---


def test_every_store_names_a_run_by_one_rule_and_gives_up_at_the_same_bound(store, monkeypatch):
    """One loop finds a free run name for every store (store/layout.free_run_name): the same names in the same order,
    and past SAME_SECOND runs in one second the same one-line refusal naming the store."""
    monkeypatch.setattr(layout, "SAME_SECOND", 3)
    when = datetime(2026, 1, 2, 3, 4, 5)
    names = [store.create_run(now=when).ref.rsplit("/", 1)[-1].rsplit(":", 1)[-1] for _ in range(3)]
    assert names == ["replay-20260102-030405", "replay-20260102-030405-2", "replay-20260102-030405-3"]
    with pytest.raises(RunDirError, match="could not find a free run name for replay-20260102-030405$"):
        store.create_run(now=when)


def test_runs_are_created_with_collision_suffixes_and_found_listed_and_opened(store):
    a = started(store, "run-a")
    b = started(store, "run-b")
    assert a.ref.endswith("replay-20260102-030405") and b.ref.endswith("replay-20260102-030405-2")
    assert [r.ref for r in store.list_runs()] == [a.ref, b.ref]
    assert store.find_run("run-b").ref == b.ref and store.find_run("nope") is None
    assert store.open_run(a.ref).manifest()["run_id"] == "run-a"
    with pytest.raises(RunDirError, match="already holds a run"):
        store.check_new(a.ref)
    with pytest.raises(RunDirError, match="not found"):
        store.open_run(a.ref + "-missing")


def test_a_start_up_cut_before_the_manifest_is_no_run(store):
    cut = store.create_run(None, now=NOW)
    cut.new_journal(KEY).append("run_started")
    assert [r.ref for r in store.unstarted()] == [cut.ref] and store.list_runs() == []
    with pytest.raises(RunDirError, match="start-up was cut"):
        store.open_run(cut.ref)
    cut.discard()  # a start-up that was cut holds nothing to keep: it is cleared, and its name is free again
    assert store.unstarted() == [] and not cut.has_journal()
    store.check_new(cut.ref)
    assert store.create_run(cut.ref).ref == cut.ref


def test_child_runs_live_under_their_parent(store):
    parent = started(store)
    assert not parent.child("fetch").has_manifest()
    child = store.create_run(parent.child("fetch").ref)  # every run, a child too, is created by its store
    child.write_manifest({"run_id": "run-1.fetch"})
    assert child.has_manifest() and child.run_id() == "run-1.fetch" and child.ref.startswith(parent.ref)
    assert [r.ref for r in store.list_runs()] == [parent.ref]  # children are not runs of the root
    sib = parent.sibling("pay")
    assert sib.ref == parent.ref + ".pay"
    digest = parent.manifest_digest()
    for linked in (child, store.create_run(sib.ref), child):  # linked in the manifest once each, in order
        parent.add_child(linked)
    assert parent.manifest()["child_runs"] == ["children/fetch", f"../{Path(sib.ref).name.removeprefix('memory:')}"]
    assert parent.manifest_digest() == digest  # child_runs is outside the digest the journal pins


def test_a_change_of_state_pending_or_approval_moves_the_stamp_and_children_are_listed(store):
    run = started(store)
    assert run.stamp() == (0.0, 0.0, 0.0)
    j = run.new_journal(KEY)
    j.append("run_started")
    run.write_state("RUNNING", journal=j)
    first = run.stamp()
    assert first[0] > 0 and first[1:] == (0.0, 0.0)
    run.write_pending({"pause_id": "p"})
    assert run.stamp()[1] > 0
    run.remove_pending()
    assert run.stamp()[1] == 0.0
    for name in ("b", "a"):
        store.create_run(run.child(name).ref).write_manifest({"run_id": f"run-1.{name}"})
    assert sorted(c.run_id() for c in run.children()) == ["run-1.a", "run-1.b"]


def test_a_restored_state_keeps_its_seal_and_the_ledger_seal_is_monotone(store):
    run = started(store)
    j = run.new_journal(KEY)
    j.append("run_started")
    j.append("action_dispatched", "pay")
    run.write_state("RUNNING", journal=j)
    before = run.state()
    run.write_state("FAILED")  # unsealed
    run.restore_state(before)
    records = run.load_journal(KEY).records
    assert run.check_seal(records, KEY)["seal"] == before["seal"]
    run.ledger_seal(2, records[1]["hash"])
    run.ledger_seal(1, records[0]["hash"])  # never moves back
    with pytest.raises(RefusedError, match="ledger's seal is at seq 2"):
        run.ledger_claim(records[:1])


def test_a_bundle_snapshot_loads_from_the_store_with_the_recorded_digest(store, tmp_path):
    src = load_bundle(write_bundle(tmp_path / "b", minimal_flow()))
    run = started(store)
    run.snapshot_bundle(src.root, src.files)
    assert load_bundle(run.artifact_dir("bundle")).digest == src.digest  # what resume checks against the manifest
