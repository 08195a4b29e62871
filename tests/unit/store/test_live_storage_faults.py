"""A full disk or an I/O error while writing the run's own files: whole records or none, no temp files left behind,
and StorageFault (exit 5) instead of a raw OSError."""

from __future__ import annotations

import errno

import pytest

from openadapt_flow.store import Journal, faults, load_journal
from openadapt_flow.store.atomic import StorageFault, write_json_atomic

KEY = b"k" * 32


@pytest.fixture(autouse=True)
def fresh_faults(monkeypatch):
    monkeypatch.setattr(faults, "_io", {"seen": 0, "full": False})


def test_a_journal_write_that_fails_leaves_the_last_whole_record_and_the_chain_goes_on(tmp_path, monkeypatch):
    path = tmp_path / "journal.jsonl"
    j = Journal(path, KEY)
    j.append("run_started")
    size = path.stat().st_size
    monkeypatch.setenv("FLOW_IO_FAULT", "journal:fsync")  # the line is written, then fsync fails: it is cut back
    with pytest.raises(StorageFault) as info:
        j.append("action_dispatched", "save")
    assert info.value.exit_code == 5 and info.value.errno == errno.ENOSPC
    assert path.stat().st_size == size
    monkeypatch.delenv("FLOW_IO_FAULT")
    j.append("interrupted")
    j.close()
    assert [r["type"] for r in load_journal(path, KEY).records] == ["run_started", "interrupted"]


def test_a_partial_journal_write_is_cut_back(tmp_path, monkeypatch):
    path = tmp_path / "journal.jsonl"
    j = Journal(path, KEY)
    j.append("run_started")
    size = path.stat().st_size
    real_write = faults.os.write
    calls = {"n": 0}

    def half_then_full(fd, data):
        calls["n"] += 1
        if calls["n"] == 1:
            return real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("openadapt_flow.store.fs.journal.os.write", half_then_full)
    with pytest.raises(StorageFault):
        j.append("step_verified", "save")
    assert path.stat().st_size == size  # no torn line for a later record to follow
    assert len(load_journal(path, KEY).records) == 1


def test_an_atomic_replace_that_fails_keeps_the_old_file_and_no_temp(tmp_path, monkeypatch):
    target = tmp_path / "state.json"
    write_json_atomic(target, {"state": "RUNNING"})
    monkeypatch.setenv("FLOW_IO_FAULT", "state.json")
    monkeypatch.setenv("FLOW_IO_FAULT_ERRNO", "EIO")
    with pytest.raises(StorageFault) as info:
        write_json_atomic(target, {"state": "COMPLETED"})
    assert info.value.errno == errno.EIO
    assert '"RUNNING"' in target.read_text() and sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


def test_a_sticky_fault_fills_the_disk_for_every_later_write(tmp_path, monkeypatch):
    monkeypatch.setenv("FLOW_IO_FAULT", "state.json")
    monkeypatch.setenv("FLOW_IO_FAULT_SKIP", "1")
    monkeypatch.setenv("FLOW_IO_FAULT_STICKY", "1")
    write_json_atomic(tmp_path / "state.json", {})  # let through
    write_json_atomic(tmp_path / "other.json", {})  # not a match, disk not full yet
    with pytest.raises(StorageFault):
        write_json_atomic(tmp_path / "state.json", {})
    with pytest.raises(StorageFault):
        write_json_atomic(tmp_path / "other.json", {})
