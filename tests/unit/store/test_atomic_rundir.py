import os
from datetime import datetime

import numpy as np
import pytest

from openadapt_flow.errors import RunDirError
from openadapt_flow.store import FrameWriter, RunDir, new_run_dir
from openadapt_flow.store.atomic import make_dirs, write_files_atomic, write_json_atomic

pytestmark = pytest.mark.timeout(30)


def test_atomic_write_leaves_no_temp_and_replaces(tmp_path):
    p = tmp_path / "state.json"
    write_json_atomic(p, {"a": 1})
    write_json_atomic(p, {"a": 2})
    assert p.read_text().strip().endswith("}") and '"a": 2' in p.read_text()
    assert [f.name for f in tmp_path.iterdir()] == ["state.json"]


def test_failed_write_keeps_the_previous_file(tmp_path, monkeypatch):
    p = tmp_path / "checkpoint.json"
    write_json_atomic(p, {"ok": 1})

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(OSError):
        write_json_atomic(p, {"ok": 2})
    assert '"ok": 1' in p.read_text()


def test_default_run_dir_names_get_suffixes_and_never_reuse(tmp_path):
    now = datetime(2026, 11, 29, 15, 0, 0)
    a = new_run_dir(tmp_path, now=now)
    b = new_run_dir(tmp_path, now=now)
    assert a.name == "replay-20261129-150000" and b.name == "replay-20261129-150000-2"
    (a / "manifest.json").write_text("{}")
    with pytest.raises(RunDirError, match="already holds a run"):
        new_run_dir(tmp_path, a)


def test_open_refuses_non_runs(tmp_path):
    with pytest.raises(RunDirError, match="not found"):
        RunDir.open(tmp_path / "nope")
    with pytest.raises(RunDirError, match="not a run directory"):
        RunDir.open(tmp_path)


def test_frame_writer_writes_pngs_off_thread(tmp_path):
    fw = FrameWriter(tmp_path / "frames")
    fw.save("a.png", np.zeros((10, 12, 3), np.uint8))
    fw.save_now("halt.png", np.zeros((10, 12, 3), np.uint8))
    fw.close()
    assert sorted(p.name for p in (tmp_path / "frames").iterdir()) == ["a.png", "halt.png"]
    assert (tmp_path / "frames/a.png").read_bytes()[:4] == b"\x89PNG"


def _dir_fsyncs(monkeypatch) -> list[str]:
    """The directories os.fsync is called on, in order (files' fsyncs pass through)."""
    seen: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        if os.path.isdir(f"/proc/self/fd/{fd}"):
            seen.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return seen


def test_make_dirs_fsyncs_each_new_directory_into_its_parent_once(tmp_path, monkeypatch):
    seen = _dir_fsyncs(monkeypatch)
    made = make_dirs(tmp_path / "a" / "b" / "c")
    assert [p.name for p in made] == ["a", "b", "c"]
    assert sorted(seen) == sorted(str(p) for p in (tmp_path, tmp_path / "a", tmp_path / "a" / "b"))
    seen.clear()
    assert make_dirs(tmp_path / "a" / "b" / "c") == [] and seen == []  # already there: nothing to sync


def test_a_batch_of_files_costs_one_fsync_per_folder_and_never_brings_back_a_removed_folder(tmp_path, monkeypatch):
    seen = _dir_fsyncs(monkeypatch)
    snap = tmp_path / "run" / "bundle"
    (tmp_path / "run").mkdir()
    write_files_atomic(snap, {"flow.yaml": b"x", **{f"templates/{n}.png": b"p" for n in range(5)}}, make=True)
    assert sorted(seen) == sorted(str(p) for p in (tmp_path / "run", snap, snap / "templates"))
    assert (snap / "templates" / "4.png").read_bytes() == b"p"
    gone = tmp_path / "removed-run"
    with pytest.raises(FileNotFoundError):  # a heartbeat's lease.json into a run directory removed meanwhile
        write_json_atomic(gone / "lease.json", {})
    assert not gone.exists()


def test_an_artifact_in_new_folders_is_reachable_after_a_power_loss(tmp_path, monkeypatch):
    """`resume --upgrade-bundle` snapshots into `upgrades/<n>/` (teach: `patches/<pause>/bundle/`) before any input:
    each folder it creates is fsync'd into its parent, not only the one holding the file."""
    run = RunDir(new_run_dir(tmp_path, tmp_path / "run"))
    seen = _dir_fsyncs(monkeypatch)
    run.put_artifact("upgrades/1/templates/a.png", b"png")
    assert sorted(seen) == sorted(str(run.path / p) for p in ("", "upgrades", "upgrades/1", "upgrades/1/templates"))


def _bundle(root, flow=b"steps: []\n"):
    (root / "templates").mkdir(parents=True)
    (root / "flow.yaml").write_bytes(flow)
    for n in range(3):
        (root / "templates" / f"{n}.png").write_bytes(bytes([n]) * 10)
    return root, ("flow.yaml", *(f"templates/{n}.png" for n in range(3)))


def test_a_snapshot_like_the_item_befores_hard_links_its_durable_files_and_syncs_only_the_new_names(
    tmp_path, monkeypatch
):
    root, files = _bundle(tmp_path / "b")
    first, second = (RunDir(new_run_dir(tmp_path / "runs", tmp_path / "runs" / n)) for n in ("r1", "r2"))
    first.snapshot_bundle(root, files)
    syncs: list[str] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: syncs.append(os.readlink(f"/proc/self/fd/{fd}")) or real(fd))
    second.snapshot_bundle(root, files, like=first.bundle_dir)
    for rel in files:
        assert os.stat(second.bundle_dir / rel).st_ino == os.stat(first.bundle_dir / rel).st_ino
        assert (second.bundle_dir / rel).read_bytes() == (root / rel).read_bytes()
    b = second.bundle_dir
    assert sorted(syncs) == sorted(str(p) for p in (second.path, b, b / "templates"))  # no file's contents again


def test_a_snapshot_whose_like_differs_or_is_gone_is_copied(tmp_path):
    root, files = _bundle(tmp_path / "b")
    other, _ = _bundle(tmp_path / "edited", flow=b"steps: [edited]\n")
    for i, like in enumerate((other, tmp_path / "nowhere")):
        run = RunDir(new_run_dir(tmp_path / "runs", tmp_path / "runs" / f"r{i}"))
        run.snapshot_bundle(root, files, like=like)
        assert (run.bundle_dir / "flow.yaml").read_bytes() == b"steps: []\n"
        assert os.stat(run.bundle_dir / "flow.yaml").st_nlink == 1  # a copy of its own
