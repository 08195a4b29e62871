"""`flow` commands on the `memory:` store, each one a process that the crash kit can kill, all in this test process.

A memory store lives as long as its process, so a forked or spawned `flow` (tests/crash/crash_support.py) cannot show
it. Here every command runs in this process (the real entry point: its one-line errors and exit codes) with its own
environment and working directory, against the process's one memory store (`open_store("memory:")`).

The crash model (what a SIGKILL is, to the store): when the command reaches its FLOW_CRASH_AT point the kill handler
(store/faults.py `kill_handler`) freezes the store's contents as they are (`MemoryStore.freeze`: every record and
artifact, every owner lock free) and raises `Killed`, a BaseException nothing in the runtime catches. Whatever the
dead command writes while it unwinds (a `finally`, a state, a lease release, a report) lands in contents that
`MemoryStore.restore` then throws away: the next command sees exactly what the store held at the crash point. A
command that swallowed the kill and went on would be acting after its death: that fails the case (`CrashSwallowed`).

The desktop outlives a `flow` process too: `FixtureDesktop` plays the demo app's recorded fixture in this process,
one session shared by every command of a case (as the real app on Xvnc keeps its screen when `flow` dies).
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import os
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer

import openadapt_flow.cli.app as cli_app
from openadapt_flow.backends import fixture as fixture_backend
from openadapt_flow.cli.app import build_app
from openadapt_flow.fixture.player import Player, open_player
from openadapt_flow.store import MEMORY_PREFIX as PREFIX
from openadapt_flow.store import MemoryContents, MemoryRun, MemoryStore, faults
from openadapt_flow.store.journal import verify_chain
from openadapt_flow.store.select import open_store
from tests.support.cli import flow_env
from tests.support.demo_invoices import BUNDLE, FIXTURES, invoice_rows

_APP: list[Any] = []


class Killed(BaseException):
    """The in-process command died at its crash point."""


class CrashSwallowed(AssertionError):
    """The command reached its crash point and kept going: a dead process acted."""


@dataclass
class Result:
    args: list[str]
    returncode: int  # -9: killed at its crash point
    stdout: str
    stderr: str

    @property
    def killed(self) -> bool:
        return self.returncode == -9

    def json(self) -> Any:
        return json.loads(self.stdout)


def memory_store() -> MemoryStore:
    store = open_store("memory:")
    assert isinstance(store, MemoryStore)
    return store


@contextmanager
def _as_process(env: dict[str, str], cwd: Path) -> Iterator[None]:
    """This process's environment, working directory and import path, as a `flow` process started there would have."""
    saved_env, saved_cwd, saved_path = dict(os.environ), os.getcwd(), list(sys.path)
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    sys.path.insert(0, str(cwd))  # as `python -m` puts the cwd first
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
        os.chdir(saved_cwd)
        sys.path[:] = saved_path


def _command() -> Any:
    """The CLI's click command, built once (typer builds it anew on every call: ~0.1 s a command)."""
    if not _APP:
        _APP.append(typer.main.get_command(build_app()))
    return _APP[0]


def _main(args: list[str]) -> tuple[int, str, str]:
    """The real `flow` entry point (cli/app.py: its one-line errors and exit codes) on `args`: (code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    saved_argv = sys.argv
    sys.argv = ["flow", *args]
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            cli_app._run(_command, "flow", list(args))  # the click command, built once, runs as the typer app would
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        sys.argv = saved_argv
    return code, out.getvalue(), err.getvalue()


def flow(args: list[str], cwd: Path, env: dict[str, str]) -> Result:
    """`flow ARGS` as one process on this process's memory store; killed (returncode -9) at env's FLOW_CRASH_AT."""
    store = memory_store()
    survivors: list[MemoryContents] = []

    def die(point: str) -> None:
        if not survivors:  # the first death is the only one: nothing after it happened
            survivors.append(store.freeze())
        raise Killed(point)

    killed = False
    with _as_process(env, cwd), faults.kill_handler(die):
        try:
            code, out, err = _main([str(a) for a in args])
        except Killed:
            killed = True
    if survivors:
        store.restore(survivors[0])
        if not killed:
            raise CrashSwallowed(f"flow {' '.join(map(str, args))}: reached its crash point and went on")
        return Result(list(args), -9, "", "")
    return Result(list(args), code, out, err)


def run_of(ref: str | Path) -> MemoryRun:
    """A handle on a run of the memory store as it is now (`memory:NAME`)."""
    return MemoryRun(memory_store(), str(ref).removeprefix(PREFIX))


def exists(ref: str | Path) -> bool:
    return str(ref).removeprefix(PREFIX) in memory_store().runs


def journal(ref: str | Path, env: dict[str, str]) -> list[dict[str, Any]]:
    """The run's journal, its hash chain verified with the installation key of `env` (a broken chain fails)."""
    key = Path(env["FLOW_KEY_FILE"]).read_bytes().strip()
    return verify_chain(bytes(run_of(ref).recs.journal), key, str(ref))[0]


def state(ref: str | Path) -> dict[str, Any]:
    return run_of(ref).state()


def children(ref: str | Path) -> list[str]:
    """The references of the run's child runs (a workflow's calls), oldest name first."""
    return [c.ref for c in run_of(ref).children()]


class FixtureDesktop:
    """The demo app's recorded fixture, played in this process: one session that every `flow` command of a case
    connects to (`fixture:PATH`), so the screen a dead command left is the screen the next one sees."""

    def __init__(self, fixture: Path, db: Path) -> None:
        self.fixture = fixture
        self.player: Player = open_player(fixture, db)

    @property
    def url(self) -> str:
        return f"fixture:{self.fixture}"


def cut_startup(run: str, root: Path, env: dict[str, str]) -> list[str] | None:
    """crash_support.cut_startup on the memory store: None if `run` is a run; else what is wrong with how the cut
    start-up is shown, after clearing it away (the store's `discard`) as an operator would before replaying."""
    handle = run_of(run)
    if handle.has_manifest() or not exists(run):
        return None
    problems = []
    st = flow(["status", str(run)], root, env)
    if st.returncode != 2 or "start-up was cut" not in st.stderr:
        problems.append(
            f"{run}: a cut start-up must be named by status (exit 2), got {st.returncode}: {st.stderr[-200:]}"
        )
    if b'"action_dispatched"' in bytes(handle.recs.journal):
        problems.append(f"{run}: a start-up cut before the manifest had dispatched input")
    handle.discard()
    return problems


def fast_bundle(src: Path, dest: Path, timeout_s: float) -> Path:
    """A copy of the demo bundle with its save effect's timeout_s (5) cut to `timeout_s`: a resume re-reads an
    uncertain write only once that long has passed since its dispatch."""
    if not dest.exists():
        shutil.copytree(src, dest)
        text = (dest / "flow.yaml").read_text()
        assert text.count("timeout_s: 5") == 1
        (dest / "flow.yaml").write_text(text.replace("timeout_s: 5", f"timeout_s: {timeout_s}"))
    return dest


class MemoryDesk:
    """The crash matrices' desk (crash_support.Desktop's interface) on the memory store: every case its own run
    name, system of record and fixture desktop at the app's list screen; commands run in this process (`flow`)."""

    store = "memory"
    VENDOR = "ACME Corp"

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = root
        self.monkeypatch = monkeypatch
        self.counter = itertools.count(1)
        self.desktop: FixtureDesktop | None = None
        self.db = root / "none.db"

    def env(self) -> dict[str, str]:
        return flow_env(
            self.root,
            FLOW_FIXTURE_DB=str(self.db),
            DEMO_DB_DSN=f"sqlite:///{self.db}",
            FLOW_DECISION_KEY_FILE=str(self.root / "decision.key"),
        )

    def case(self, sink: Path | None = None) -> tuple[Path, float]:
        """A fresh case: its root, a new system of record and a new desktop session on the list screen (writing its
        invoices to `sink` instead, if given: an app whose Save shows "Saved" and writes nothing anyone reads)."""
        n = next(self.counter)
        root = self.root / f"case-{n}"
        root.mkdir()
        self.db = root / "invoices.db"
        self.desktop = FixtureDesktop(FIXTURES / "normal", sink or self.db)
        if sink is not None:
            FixtureDesktop(FIXTURES / "normal", self.db)  # the checked database exists, empty, with the app's table
        self.monkeypatch.setattr(fixture_backend, "open_player", self._player)
        return root, 1250.5

    def _player(self, path: str | Path, sor_path: Path | None = None, on_log: Any = None) -> Player:
        assert self.desktop is not None
        return self.desktop.player

    def rows(self, amount: float) -> int:
        return sum(1 for v, a in invoice_rows(self.db) if (v, a) == (self.VENDOR, amount)) if self.db.exists() else 0

    def fast_bundle(self) -> Path:
        return fast_bundle(BUNDLE, self.root / "bundle-fast", 0.2)

    def run_ref(self, root: Path) -> str:
        return f"{PREFIX}{self.root.name}-{root.name}"

    def replay_args(self, run: str, amount: float, bundle: Path = BUNDLE) -> list[str]:
        assert self.desktop is not None
        return [
            "replay",
            str(bundle),
            "--url",
            self.url,
            "--durable",
            "--run-dir",
            str(run),
            *self.store_args(),
            "--param",
            f"vendor={self.VENDOR}",
            "--param",
            f"amount={amount}",
            "--json",
        ]

    def reconcile_args(self, root: Path) -> list[str]:
        return ["reconcile", "--store", PREFIX]

    @property
    def url(self) -> str:
        assert self.desktop is not None
        return self.desktop.url

    @staticmethod
    def store_args() -> list[str]:
        return ["--store", PREFIX]

    @staticmethod
    def has_journal(run: str) -> bool:
        return run_of(run).has_journal()

    # the store, as the matrices read it
    flow = staticmethod(flow)
    state = staticmethod(state)
    journal = staticmethod(journal)
    children = staticmethod(children)

    @staticmethod
    def checkpoint(run: str) -> dict[str, Any]:
        cp = run_of(run).read_checkpoint()
        assert cp is not None, f"{run}: no checkpoint"
        return cp

    @staticmethod
    def has_approval(run: str) -> bool:
        return run_of(run).has_approval()

    @staticmethod
    def consumed(run: str, pause_id: str) -> bool:
        return run_of(run).has_decision(pause_id)

    @staticmethod
    def cut_startup(run: str, root: Path, env: dict[str, str]) -> list[str] | None:
        return cut_startup(run, root, env)
