"""A power loss under a durable run (issue 34, finding 4): every file a resume needs is on disk — its contents and its
name, in every directory up to the runs root — before the first input, and a run whose bundle snapshot was lost
anyway resumes with its original bundle when the digest matches.

- The real thing (root and loop devices, as here): an ext4 image loop-mounted with `errors=remount-ro`, a durable run
  of the demo app on Xvnc killed right after its Save click, an ext4 error triggered at once (the journal aborts:
  nothing not yet fsync'd reaches the disk, what a power cut does), unmounted, fsck'd, mounted again; the run resumes
  and finishes with exactly one row. Skipped, saying why, where the machine cannot loop-mount.
- The audit that runs everywhere: os.fsync recorded (the inode, size and mtime of each file fsync'd; the names each
  directory held when it was fsync'd) under a run on the recorded fixture; at the first input sent, every file of the
  run (the bundle snapshot, the manifest, the state, the journal up to its last durable record, the lease, the key
  files) and every directory up to the runs root must be on disk as they are — one fsync per snapshot folder.
- `flow resume RUN --bundle PATH`: a snapshot cut to 0 bytes, resumed with the original bundle (same digest) and
  refused with another (both digests named).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from openadapt_flow.backends.fixture import FixtureBackend
from openadapt_flow.errors import RefusedError
from openadapt_flow.runtime.operate.approval import approve
from openadapt_flow.runtime.runs import resume
from openadapt_flow.store.journal import FSYNC_TYPES
from tests.attack.attack_support import STEPS, TOOLS, Workspace, env_for, ws, wss  # noqa: F401
from tests.e2e.demo_harness import BUNDLE_DIR
from tests.support import memcrash
from tests.support.cli import flow_env, run_flow

pytestmark = pytest.mark.timeout(300)
PARAMS = ["--param", "vendor=ACME Corp", "--param", "amount=1250.50"]


# --- the fsync audit -------------------------------------------------------------------------------------------------


class FsyncAudit:
    """Every os.fsync of this process, by what it made durable: a file's (size, mtime) per inode, a directory's names
    (name -> inode) at its last fsync. Recorded before the real fsync: what it syncs is at least that."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.files: dict[tuple[int, int], set[tuple[int, int]]] = {}
        self.dirs: dict[tuple[int, int], dict[str, int]] = {}
        self.dir_fsyncs: Counter[str] = Counter()
        real = os.fsync

        def fsync(fd: int) -> None:
            st = os.fstat(fd)
            if stat.S_ISDIR(st.st_mode):
                path = os.readlink(f"/proc/self/fd/{fd}")
                self.dirs[(st.st_dev, st.st_ino)] = {e.name: e.inode() for e in os.scandir(path)}
                self.dir_fsyncs[path] += 1
            else:
                self.files.setdefault((st.st_dev, st.st_ino), set()).add((st.st_size, st.st_mtime_ns))
            real(fd)

        monkeypatch.setattr(os, "fsync", fsync)

    def name_durable(self, path: Path) -> bool:
        st, parent = os.lstat(path), os.stat(path.parent)
        return self.dirs.get((parent.st_dev, parent.st_ino), {}).get(path.name) == st.st_ino

    def synced_sizes(self, path: Path) -> set[tuple[int, int]]:
        st = os.stat(path)
        return self.files.get((st.st_dev, st.st_ino), set())

    def problems(self, path: Path, needed_bytes: int | None = None) -> list[str]:
        """What of `path` a power loss now could lose: its name (in its parent), or its contents (all of a file; the
        first `needed_bytes` of an append-only one)."""
        out = [] if self.name_durable(path) else [f"{path}: its name in {path.parent} was not fsync'd"]
        if path.is_dir():
            return out
        st = os.stat(path)
        synced = self.synced_sizes(path)
        if needed_bytes is None and (st.st_size, st.st_mtime_ns) not in synced:
            out.append(f"{path}: its contents ({st.st_size} bytes) were not fsync'd")
        if needed_bytes is not None and max((s for s, _ in synced), default=-1) < needed_bytes:
            out.append(f"{path}: its first {needed_bytes} bytes (up to its last durable record) were not fsync'd")
        return out


def durable_prefix(journal: Path) -> int:
    """The journal's bytes up to and including its last record of a type that must be durable (FSYNC_TYPES)."""
    size = end = 0
    for line in journal.read_bytes().splitlines(keepends=True):
        size += len(line)
        try:
            if json.loads(line).get("type") in FSYNC_TYPES:
                end = size
        except ValueError:
            break
    return end


NOT_NEEDED = (".lock",)  # the OS lock: empty, created again by whoever takes the run


def audit_run(audit: FsyncAudit, run: Path, outside: Path, extra: list[Path]) -> list[str]:
    """Everything a resume of `run` reads, as it is now, checked against what was fsync'd: the run's files and folders,
    each folder from the run up to `outside` (which existed before), and `extra` files (keys, the ledger)."""
    problems: list[str] = []
    p = run
    while p != outside:
        problems += audit.problems(p)
        p = p.parent
    for path in sorted(run.rglob("*")):
        rel = path.relative_to(run)
        if path.name in NOT_NEEDED or (
            rel.parts[0] == "frames" and path.is_file() and not path.name.startswith("halt-")
        ):
            continue  # before/after frames are evidence for the report, not read by a resume (docs/durability.md)
        problems += audit.problems(path, durable_prefix(path) if path.name == "journal.jsonl" else None)
    for path in extra:
        if path.exists():
            problems += audit.problems(path)
    return problems


def test_every_file_a_resume_reads_is_fsynced_with_its_directory_before_the_first_input(tmp_path, monkeypatch):
    """The recorded demo app played in this process; `flow replay` in this process on the filesystem store. At the
    first input the fixture desktop receives, the run's files are judged against every fsync so far."""
    desk = memcrash.MemoryDesk(tmp_path, monkeypatch)
    root, amount = desk.case()
    env = desk.env()
    state_dir = Path(env["FLOW_STATE_DIR"])
    run = root / "runs" / "run"
    audit = FsyncAudit(monkeypatch)
    seen: list[list[str]] = []
    counts: list[Counter[str]] = []

    def first_input(original):
        def send(self, events):
            if not seen:
                extra = (
                    [
                        Path(env["FLOW_KEY_FILE"]),
                        Path(env["FLOW_DECISION_KEY_FILE"]),
                        *(p for p in state_dir.rglob("*") if not p.name.endswith(".lock")),
                    ]
                    if state_dir.exists()
                    else [Path(env["FLOW_KEY_FILE"]), Path(env["FLOW_DECISION_KEY_FILE"])]
                )
                seen.append(audit_run(audit, run, root, extra))
                counts.append(Counter(audit.dir_fsyncs))
            return original(self, events)

        return send

    monkeypatch.setattr(FixtureBackend, "_pointer", first_input(FixtureBackend._pointer))
    monkeypatch.setattr(FixtureBackend, "_keys", first_input(FixtureBackend._keys))
    assert not Path(env["FLOW_KEY_FILE"]).exists()  # this run creates the installation's keys too
    r = memcrash.flow(
        [
            "replay",
            str(desk.fast_bundle()),
            "--url",
            desk.url,
            "--durable",
            "--run-dir",
            str(run),
            "--param",
            f"vendor={desk.VENDOR}",
            "--param",
            f"amount={amount}",
            "--json",
        ],
        root,
        env,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert seen, "no input reached the desktop"
    assert seen[0] == [], "\n".join(seen[0])
    # batched: the snapshot's folders were fsync'd once each, however many templates they hold
    templates = run / "bundle" / "templates"
    assert len(list(templates.iterdir())) >= 5
    assert counts[0][str(templates.resolve())] == 1 and counts[0][str((run / "bundle").resolve())] == 1, counts[0]
    assert desk.rows(amount) == 1


# --- the real power loss -----------------------------------------------------------------------------------------


def _sh(*cmd: str) -> subprocess.CompletedProcess:
    return subprocess.run(list(cmd), capture_output=True, text=True, timeout=60)


class LoopDisk:
    """An ext4 image in a temp dir, on a loop device, mounted with errors=remount-ro."""

    def __init__(self, tmp: Path) -> None:
        self.image, self.mnt = tmp / "disk.img", tmp / "mnt"
        self.dev: str | None = None
        self.mounted = False

    def refused(self) -> str | None:
        """Set the disk up; why this machine cannot (the failing command and its words), or None."""
        if os.geteuid() != 0:
            return "loop-mounting an ext4 image needs root (euid is not 0)"
        for tool in ("losetup", "mkfs.ext4", "e2fsck", "mount", "umount"):
            if shutil.which(tool) is None:
                return f"{tool} is not installed"
        self.mnt.mkdir()
        with open(self.image, "wb") as f:
            f.truncate(256 * 1024 * 1024)
        steps = [("mkfs.ext4", "-q", "-F", str(self.image)), ("losetup", "-f", "--show", str(self.image))]
        for cmd in steps:
            r = _sh(*cmd)
            if r.returncode != 0:
                return f"`{' '.join(cmd)}` failed: {(r.stderr or r.stdout).strip()[:200]}"
            if cmd[0] == "losetup":
                self.dev = r.stdout.strip()
        return self.mount()

    @property
    def name(self) -> str:
        assert self.dev is not None
        return Path(self.dev).name

    def mount(self) -> str | None:
        assert self.dev is not None
        r = _sh("mount", "-t", "ext4", "-o", "errors=remount-ro", self.dev, str(self.mnt))
        if r.returncode != 0:
            return f"`mount -o loop,errors=remount-ro` failed: {(r.stderr or r.stdout).strip()[:200]}"
        self.mounted = True
        if not Path(f"/sys/fs/ext4/{self.name}/trigger_fs_error").exists():
            return f"/sys/fs/ext4/{self.name}/trigger_fs_error is missing: this kernel cannot trigger an ext4 error"
        return None

    def lose_power(self) -> None:
        """An ext4 error now: the journal aborts and the fs turns read-only; nothing unsynced reaches the disk."""
        Path(f"/sys/fs/ext4/{self.name}/trigger_fs_error").write_text("1")
        deadline = time.monotonic() + 30
        while not self._read_only():  # the error is handled on the kernel's side: poll until the mount says so
            assert time.monotonic() < deadline, "the ext4 error did not turn the filesystem read-only"
            time.sleep(0.05)
        r = _sh("umount", str(self.mnt))
        assert r.returncode == 0, r.stderr
        self.mounted = False

    def _read_only(self) -> bool:
        for line in Path("/proc/mounts").read_text().splitlines():
            dev, where, _, opts, *_ = line.split()
            if where == str(self.mnt):
                return bool({"ro", "emergency_ro"} & set(opts.split(",")))  # newer kernels: rw,...,emergency_ro
        return False

    def fsck_and_mount(self) -> str:
        r = _sh("e2fsck", "-f", "-y", str(self.dev))
        assert r.returncode in (0, 1), (r.returncode, r.stdout, r.stderr)  # 1: errors corrected
        assert self.mount() is None
        return r.stdout

    def close(self) -> None:
        if self.mounted:
            _sh("umount", "-l", str(self.mnt))
        if self.dev is not None:
            _sh("losetup", "-d", self.dev)


@pytest.fixture
def loop_disk(tmp_path) -> Iterator[LoopDisk]:
    disk = LoopDisk(tmp_path / "loop")
    (tmp_path / "loop").mkdir()
    try:
        why = disk.refused()
        if why is not None:
            pytest.skip(f"no real power-loss test on this machine: {why} (the fsync audit above still runs)")
        yield disk
    finally:
        disk.close()


def test_a_run_killed_after_its_save_survives_a_power_loss_and_resumes_once(tmp_path, demo_app, loop_disk):
    app = demo_app("normal")
    mnt = loop_disk.mnt
    env = flow_env(
        tmp_path,
        DEMO_DB_DSN=f"sqlite:///{app.db_path}",
        FLOW_KEY_FILE=str(mnt / "install.key"),
        FLOW_DECISION_KEY_FILE=str(mnt / "decision.key"),
        FLOW_STATE_DIR=str(mnt / "state"),
    )
    run = mnt / "runs" / "run"
    r = run_flow(
        ["replay", str(BUNDLE_DIR), "--url", app.xvnc.url, "--durable", "--run-dir", str(run), *PARAMS],
        tmp_path,
        env=dict(env, FLOW_CRASH_AT="after:action_sent@save"),
    )
    assert r.returncode == -9, r.stdout + r.stderr
    assert [(v, a) for _, v, a, _ in app.rows()] == [("ACME Corp", 1250.5)]  # the row landed; the run never saw it
    loop_disk.lose_power()
    loop_disk.fsck_and_mount()
    assert (run / "bundle" / "flow.yaml").stat().st_size > 0, "the bundle snapshot was lost"
    rec = run_flow(["reconcile", str(mnt / "runs")], tmp_path, env=env)
    assert rec.returncode == 0, rec.stdout + rec.stderr
    res = run_flow(["resume", str(run), "--json"], tmp_path, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert json.loads(res.stdout)["state"] == "COMPLETED"
    assert [(v, a) for _, v, a, _ in app.rows()] == [("ACME Corp", 1250.5)]  # one row: the save was not sent again


# --- resume with the original bundle ---------------------------------------------------------------------------------


def _paused_and_approved(ws: Workspace) -> Path:
    out = ws.start()
    assert out.state == "PAUSED", out.message
    approve(out.run_dir, "continue", "alice")
    return Path(out.run_dir)


def _other_version(ws: Workspace) -> Path:
    other = ws.root / "b2"
    shutil.copytree(ws.root / "b", other)
    (other / "flow.yaml").write_text((other / "flow.yaml").read_text() + "# another version\n")
    return other


@pytest.mark.parametrize("wss", ["filesystem", "memory"], indirect=True)
def test_a_run_whose_snapshot_is_empty_resumes_with_its_original_bundle_only(wss):
    ws = wss
    run = _paused_and_approved(ws)
    f = ws.files(run)
    original = f.read("bundle/flow.yaml")
    f.write("bundle/flow.yaml", b"")  # what the power loss left
    with pytest.raises(RefusedError, match="resume with --bundle PATH") as no_flag:
        resume(run)
    assert "\n" not in str(no_flag.value)
    other = _other_version(ws)
    with pytest.raises(RefusedError, match="differs from the run's recorded digest") as wrong:
        resume(run, bundle=other)
    assert str(wrong.value).count("sha256:") == 2 and "\n" not in str(wrong.value)
    assert ws.posts() == 0
    said: list[str] = []
    out = resume(run, bundle=ws.root / "b", notice=said.append)
    assert out.state == "COMPLETED", out.message
    assert ws.posts() == 1
    assert len(said) == 1 and "snapshot was unreadable" in said[0] and str(ws.root / "b") in said[0], said
    assert f.read("bundle/flow.yaml") == original  # written again: later resumes need no flag


def test_resume_upgrade_bundle_naming_the_same_version_restores_an_empty_snapshot(ws):
    run = _paused_and_approved(ws)
    ws.files(run).write("bundle/flow.yaml", b"")
    with pytest.raises(RefusedError, match="resume with --bundle PATH"):
        resume(run, upgrade_bundle=_other_version(ws))  # a new version is judged against the original: not here
    said: list[str] = []
    assert resume(run, upgrade_bundle=ws.root / "b", notice=said.append).state == "COMPLETED"
    assert ws.posts() == 1 and len(said) == 1


def test_cli_resume_bundle_says_so_in_one_line_and_refuses_another_digest(tmp_path, monkeypatch):
    """`flow resume --bundle` as a process of its own: exit 6 naming both digests; exit 0 with one line on stderr."""
    for k, v in env_for(tmp_path).items():
        monkeypatch.setenv(k, v)
    env = flow_env(tmp_path, **env_for(tmp_path))
    env["PYTHONPATH"] = str(tmp_path) + os.pathsep + env["PYTHONPATH"]
    (tmp_path / "attack_tools.py").write_text(TOOLS)
    monkeypatch.syspath_prepend(str(tmp_path))
    ws = Workspace(tmp_path)
    ws.down.write_text("down")
    run = ws.ref("run")
    r = run_flow(["replay", str(ws.bundle(STEPS)), "--durable", "--run-dir", str(run)], tmp_path, env=env)
    assert r.returncode == 3, r.stdout + r.stderr
    ws.down.unlink()
    approve(run, "continue", "alice")
    (run / "bundle" / "flow.yaml").write_bytes(b"")
    bad = run_flow(["resume", str(run), "--bundle", str(_other_version(ws))], tmp_path, env=env)
    assert bad.returncode == 6, bad.stdout + bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1 and bad.stderr.count("sha256:") == 2, bad.stderr
    good = run_flow(["resume", str(run), "--bundle", str(ws.root / "b"), "--json"], tmp_path, env=env)
    assert good.returncode == 0, good.stdout + good.stderr
    assert json.loads(good.stdout)["state"] == "COMPLETED"
    lines = good.stderr.strip().splitlines()
    assert len(lines) == 1 and "snapshot was unreadable" in lines[0] and "Traceback" not in good.stderr, good.stderr
    assert ws.posts() == 1
