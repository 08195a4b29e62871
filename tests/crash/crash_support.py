"""Shared machinery of the crash matrices: a forked `flow` command, journal points, and the operator who recovers.

A crash case SIGKILLs a real process, so it cannot run in the test's own process; starting a fresh interpreter
for every command (~1 s of imports) would make the matrix too slow to cover every point. `flow()` forks the
test process instead, after the package is imported once: the child is a real process running the real CLI
(`openadapt_flow.cli.app.main`) with its own environment, cwd and stdout/stderr, and it dies exactly as a
`flow` process would (SIGKILL at a crash point, or exit with the CLI's code).
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

import openadapt_flow.cli.app as cli_app
import openadapt_flow.cli.durable  # noqa: F401  (imported once here so each fork starts warm)
import openadapt_flow.cli.replay  # noqa: F401
import openadapt_flow.cli.workflow  # noqa: F401
from openadapt_flow.store import load_journal
from openadapt_flow.store import select as store_select
from openadapt_flow.vision import ocr as _ocr
from openadapt_flow.vision.tesseract_lib import LibraryUnavailable, TesseractLibrary
from tests.e2e.demo_harness import BUNDLE_DIR, DemoApp, start_demo_app
from tests.support.cli import flow_env
from tests.support.xserver import XvncServer, start_xvnc


def _warm_tesseract() -> None:
    """Load the Tesseract model once here (OpenMP limited to one thread, so no pool to break on fork); every forked
    command reads with this handle instead of loading its own (~0.4 s per process). What it reads is unchanged."""
    try:
        shared = TesseractLibrary("eng")
    except LibraryUnavailable:
        return
    _ocr.TesseractLibrary = lambda lang="eng", **kw: shared if lang == "eng" else TesseractLibrary(lang, **kw)  # type: ignore[assignment,misc]


_warm_tesseract()

__all__ = [
    "parallel",
    "CONSEQUENTIAL",
    "STEPS",
    "VENDOR",
    "demo_invariants",
    "uncertain",
    "verified",
    "Desktop",
    "Result",
    "desk",
    "flow",
    "flow_env",
    "journal",
    "points_of",
    "state",
    "wait_for",
]


@dataclass
class Result:
    args: list[str]
    returncode: int  # -9: SIGKILLed
    stdout: str
    stderr: str

    @property
    def killed(self) -> bool:
        return self.returncode == -signal.SIGKILL

    def json(self) -> Any:
        return json.loads(self.stdout)


_INHERITED: list[Any] = []  # in a forked child: the parent's open PostgreSQL stores, kept alive, never used


def _child(args: list[str], cwd: Path, env: dict[str, str], out_fd: int, err_fd: int) -> None:
    code = 70
    try:
        # the command opens its own PostgreSQL stores: the parent's (store/select.py keeps one per spec) share its
        # socket, and must not even be finalised here (closing one would end the parent's session)
        _INHERITED.append(store_select._POSTGRES)
        store_select._POSTGRES = {}
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        sys.stdout = open(1, "w", closefd=False)
        sys.stderr = open(2, "w", closefd=False)
        signal.alarm(0)  # pytest-timeout's alarm belongs to the test process
        for s in (signal.SIGTERM, signal.SIGINT, signal.SIGALRM):
            signal.signal(s, signal.SIG_DFL)
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        for p in reversed([p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]):
            if p not in sys.path:
                sys.path.insert(0, p)
        sys.path.insert(0, str(cwd))  # as `python -m` puts the cwd first
        sys.argv = ["flow", *args]
        cli_app.main()
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _spawn(args: list[str], cwd: Path, env: dict[str, str], timeout: float) -> Result:
    """`flow ARGS` as a new process (`python -m openadapt_flow`): slower to start than a fork, safe after VNC."""
    try:
        p = subprocess.run(
            [sys.executable, "-m", "openadapt_flow", *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as e:
        raise TimeoutError(f"flow {' '.join(args)} did not finish in {timeout}s") from e
    return Result(args, p.returncode, p.stdout, p.stderr)


def flow(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 90) -> Result:
    """Run `flow ARGS` in a forked process; SIGKILL it (and fail) if it outlives `timeout`. A process whose RFB
    reactor runs (this test worker used VNC in-process before: pytest-xdist hands a worker many test files) cannot
    fork a working VNC client — the child would inherit a running reactor without its thread — so it spawns."""
    if reactor_running():
        return _spawn(args, cwd, env, timeout)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(args, cwd, env, out.fileno(), err.fileno())
        deadline = time.monotonic() + timeout
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                raise TimeoutError(f"flow {' '.join(args)} did not finish in {timeout}s")
            time.sleep(0.005)  # polling a child's exit; waitpid has no timeout
        out.seek(0)
        err.seek(0)
        return Result(
            args,
            os.waitstatus_to_exitcode(status),
            out.read().decode(errors="replace"),
            err.read().decode(errors="replace"),
        )


def reactor_running() -> bool:
    """Has this process started the RFB client's reactor thread (openadapt_flow.backends.rfb_mirror)?"""
    mirror = sys.modules.get("openadapt_flow.backends.rfb_mirror")
    return mirror is not None and getattr(mirror, "_reactor_pid", None) is not None


def parallel(fn: Any, items: list[Any], workers: int = 2, timeout: float = 600) -> list[Any]:
    """[fn(item) for item in items] over `workers` forked processes (results must be JSON); each worker takes every
    workers-th item. A crash case is mostly waiting on fsync and on its own children, so two share two cores well."""
    with tempfile.TemporaryDirectory() as tmp:
        pids = []
        for w in range(workers):
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    signal.alarm(0)
                    out = [fn(item) for item in items[w::workers]]
                    Path(tmp, f"{w}.json").write_text(json.dumps(out))
                    code = 0
                except BaseException:
                    traceback.print_exc()
                finally:
                    os._exit(code)
            pids.append(pid)
        deadline = time.monotonic() + timeout
        try:
            for pid in pids:
                while not os.waitpid(pid, os.WNOHANG)[0]:
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"crash cases did not finish in {timeout}s")
                    time.sleep(0.02)  # polling a child's exit; waitpid has no timeout
        finally:
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                except (ProcessLookupError, ChildProcessError):
                    pass
        parts = [json.loads(Path(tmp, f"{w}.json").read_text()) for w in range(workers)]
    return [parts[i % workers][i // workers] for i in range(len(items))]


def journal(run: Path, env: dict[str, str]) -> list[dict[str, Any]]:
    """The run's journal, its hash chain verified with the installation key of `env` (a broken chain fails)."""
    key = Path(env["FLOW_KEY_FILE"]).read_bytes().strip()
    return load_journal(run / "journal.jsonl", key).records


def state(run: Path) -> dict[str, Any]:
    return json.loads((run / "state.json").read_text())


def points_of(records: list[dict[str, Any]]) -> list[str]:
    """Every distinct `after:<type>[@step]` crash point these records pass, in journal order."""
    seen: list[str] = []
    for r in records:
        p = f"after:{r['type']}" + (f"@{r['step']}" if r.get("step") else "")
        if p not in seen:
            seen.append(p)
    return seen


def wait_for(cond: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.02)


VENDOR = "ACME Corp"
STEPS = [s["id"] for s in yaml.safe_load((BUNDLE_DIR / "flow.yaml").read_text())["steps"]]
CONSEQUENTIAL = "save"


@dataclass
class Desktop:
    """One Xvnc with the demo app, shared by the module's cases; `case()` hands out a fresh runs root and amount."""

    xvnc: XvncServer
    app: DemoApp
    root: Path
    counter: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    def env(self) -> dict[str, str]:
        return flow_env(
            self.root,
            DEMO_DB_DSN=f"sqlite:///{self.app.db_path}",
            FLOW_DECISION_KEY_FILE=str(self.root / "decision.key"),
        )

    def rows(self, amount: float) -> int:
        db = sqlite3.connect(self.app.db_path, timeout=5)
        try:
            return int(
                db.execute(
                    "SELECT count(*) FROM invoices WHERE vendor = ? AND amount = ?", (VENDOR, amount)
                ).fetchone()[0]
            )
        finally:
            db.close()

    def ready(self) -> None:
        """The app on its list screen (where the bundle starts); a crashed case may have left it elsewhere."""
        try:
            self.app.wait_screen("list", timeout=2)
        except TimeoutError:
            self.app.stop()
            self.app = start_demo_app(self.xvnc, self.app.db_path)

    def replay_args(self, run: Path, amount: float, bundle: Path = BUNDLE_DIR) -> list[str]:
        return [
            "replay",
            str(bundle),
            "--url",
            self.xvnc.url,
            "--durable",
            "--run-dir",
            str(run),
            "--param",
            f"vendor={VENDOR}",
            "--param",
            f"amount={amount}",
            "--json",
        ]

    def fast_bundle(self) -> Path:
        """The demo bundle with its effect's timeout_s cut from 5 to 1: a resume re-reads an uncertain write only once
        that long has passed since dispatch, and ABSENT is judged only then — the matrix waits for it in many cases."""
        dest = self.root / "bundle-fast"
        if not dest.exists():
            shutil.copytree(BUNDLE_DIR, dest)
            text = (dest / "flow.yaml").read_text()
            assert text.count("timeout_s: 5") == 1
            (dest / "flow.yaml").write_text(text.replace("timeout_s: 5", "timeout_s: 1"))
        return dest

    def case(self) -> tuple[Path, float]:
        self.ready()
        n = next(self.counter)
        root = self.root / f"case-{n}"
        root.mkdir()
        return root, 1000 + n + 0.25

    # the store, as the matrices read it (tests/support/memcrash.py MemoryDesk: the same on the memory store)
    store = "filesystem"
    flow = staticmethod(flow)
    state = staticmethod(state)
    journal = staticmethod(journal)

    @property
    def url(self) -> str:
        return self.xvnc.url

    @staticmethod
    def run_ref(root: Path) -> Path:
        return root / "run"

    @staticmethod
    def store_args() -> list[str]:
        return []

    @staticmethod
    def has_journal(run: Path) -> bool:
        return (run / "journal.jsonl").exists()

    @staticmethod
    def reconcile_args(root: Path) -> list[str]:
        return ["reconcile", str(root)]

    @staticmethod
    def children(run: Path) -> list[Path]:
        return sorted(run.glob("children/*"))

    @staticmethod
    def checkpoint(run: Path) -> dict[str, Any]:
        return json.loads((run / "checkpoint.json").read_text())

    @staticmethod
    def has_approval(run: Path) -> bool:
        return (run / "approval.json").exists()

    @staticmethod
    def consumed(run: Path, pause_id: str) -> bool:
        return (run / "decisions" / f"{pause_id}.json").exists()

    @staticmethod
    def cut_startup(run: Path, root: Path, env: dict[str, str]) -> list[str] | None:
        return cut_startup(run, root, env)


@pytest.fixture(scope="module")
def desk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Desktop]:
    """One Xvnc with the demo app for a whole test module."""
    root = tmp_path_factory.mktemp("crash-demo")
    xvnc = start_xvnc(1024, 768)
    d = None
    try:
        d = Desktop(xvnc, start_demo_app(xvnc, root / "invoices.db"), root)
        yield d
    finally:
        if d is not None:
            d.app.stop()
        xvnc.stop()


def verified(records: list[dict]) -> list[str]:
    return [r["step"] for r in records if r["type"] == "step_verified"]


def uncertain(records: list[dict], step: str) -> bool:
    seqs = [r["seq"] for r in records if r["step"] == step and r["type"] == "action_dispatched"]
    done = [r["seq"] for r in records if r["step"] == step and r["type"] == "step_verified"]
    return bool(seqs) and not (done and max(done) > max(seqs))


def demo_invariants(
    desk: Any, point: str, run: Any, env: dict[str, str], before: list[dict], amount: float
) -> list[str]:
    """Desktop or MemoryDesk: the run COMPLETED with exactly one row, each step verified once in order, no verified step
    dispatched again, the checkpoint at the last step, and resuming it again does nothing."""
    problems = []
    state = desk.state
    if state(run)["state"] != "COMPLETED":
        problems.append(f"{point}: state is {state(run)['state']}, not COMPLETED")
    if desk.rows(amount) != 1:
        problems.append(f"{point}: {desk.rows(amount)} rows in the system of record, want exactly 1")
    after = desk.journal(run, env)
    done = verified(after)
    if done != STEPS:
        problems.append(f"{point}: steps verified {done}, want each once in order {STEPS}")
    if done[: len(verified(before))] != verified(before):
        problems.append(f"{point}: verified progress lost: before {verified(before)}, after {done}")
    for step in STEPS:  # a checkpointed step is never dispatched again
        seqs = [r["seq"] for r in after if r["step"] == step and r["type"] == "step_verified"]
        again = [
            r["seq"]
            for r in after
            if r["step"] == step and r["type"] == "action_dispatched" and seqs and r["seq"] > seqs[0]
        ]
        if again:
            problems.append(f"{point}: step {step!r} dispatched again after it was verified (seq {again})")
    cp = desk.checkpoint(run)
    if (cp["step"], cp["next_index"]) != (STEPS[-1], len(STEPS)):
        problems.append(f"{point}: checkpoint at {cp['step']}/{cp['next_index']}, want the last step")
    again = desk.flow(["resume", str(run)], desk.root, env)
    if again.returncode != 0 or desk.rows(amount) != 1:
        problems.append(f"{point}: resuming a COMPLETED run must do nothing and exit 0 (exit {again.returncode})")
    return problems


def cut_startup(run: Path, root: Path, env: dict[str, str]) -> list[str] | None:
    """A kill before `manifest.json` leaves no run (SPEC §7, atomic start-up): None if `run` is a run; otherwise what is
    wrong with how the cut start-up is shown ([] if nothing), after clearing it away as an operator would before
    replaying again."""
    if (run / "manifest.json").exists() or not run.exists():
        return None
    problems = []
    st = flow(["status", str(run)], root, env)
    if st.returncode != 2 or "start-up was cut" not in st.stderr:
        problems.append(
            f"{run.name}: a cut start-up must be named by status (exit 2), got {st.returncode}: {st.stderr[-200:]}"
        )
    raw = (run / "journal.jsonl").read_text() if (run / "journal.jsonl").exists() else ""
    if '"action_dispatched"' in raw:
        problems.append(f"{run.name}: a start-up cut before the manifest had dispatched input")
    shutil.rmtree(run)
    return problems
