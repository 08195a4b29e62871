"""The crash matrices' desk (crash_support.Desktop's interface) on the PostgreSQL store.

PostgreSQL outlives a SIGKILLed `flow`, so its cases are the filesystem kit's: real `flow` processes (forked, or
spawned after VNC) on the real demo app on Xvnc, SIGKILLed at their crash point. Only the store differs: every
command gets `--store postgresql://…` (the module's own schema on the session's server, `tests/support/pg.py`), a
run is `pg:case-N`, and the password comes from PGPASSWORD in each command's environment. The test process reads
the runs with a `PostgresStore` of its own (one per process id: a forked worker never shares the parent's socket),
never through `store/select.py`'s per-process stores, which a forked `flow` inherits.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from openadapt_flow.store import PostgresRun, PostgresStore
from openadapt_flow.store import pg_run_name as run_name
from openadapt_flow.store.journal import verify_chain
from tests.crash.crash_support import BUNDLE_DIR, VENDOR, Desktop, Result, flow
from tests.support.pg import PgServer, store_spec


class PgRuns:
    """Runs in one PostgreSQL schema of the session's server (`pg:NAME`), driven by forked `flow` processes that each
    name the store (`--store postgresql://…`, the password from PGPASSWORD), read by this process's own store handle."""

    store = "postgres"

    def __init__(self, server: PgServer, schema: str, monkeypatch: pytest.MonkeyPatch) -> None:
        self.server = server
        self.spec = store_spec(server, schema, monkeypatch)  # PGPASSWORD for this process's own reads
        self._stores: dict[int, PostgresStore] = {}

    def store_args(self) -> list[str]:
        return ["--store", self.spec]

    def flow(self, args: list[str], cwd: Path, env: dict[str, str], timeout: float = 90) -> Result:
        args = [str(a) for a in args]
        if "--store" not in args:
            args += self.store_args()
        return flow(args, cwd, dict(env, PGPASSWORD=self.server.password), timeout)

    # the store, as the matrices read it
    def pg(self) -> PostgresStore:
        """This process's own store handle (a forked worker opens its own connection)."""
        store = self._stores.get(os.getpid())
        if store is None:
            store = self._stores[os.getpid()] = PostgresStore(self.spec)
        return store

    def run(self, ref: str | Path) -> PostgresRun:
        return PostgresRun(self.pg(), run_name(str(ref)))

    def names(self, head: str) -> list[str]:
        """The names of the schema's runs starting with `head` that hold a journal, in name order."""
        rows = self.pg().all(
            "SELECT name FROM flow_runs r WHERE starts_with(name, %s) AND "
            "EXISTS (SELECT 1 FROM flow_journal j WHERE j.run = r.id) ORDER BY name",
            (head,),
        )
        return [r[0] for r in rows]

    def state(self, ref: str | Path) -> dict[str, Any]:
        return self.run(ref).state()

    def journal(self, ref: str | Path, env: dict[str, str]) -> list[dict[str, Any]]:
        """The run's journal, its hash chain verified with the installation key of `env` (a broken chain fails)."""
        key = Path(env["FLOW_KEY_FILE"]).read_bytes().strip()
        return verify_chain(self.run(ref).journal_bytes(), key, str(ref))[0]

    def has_journal(self, ref: str | Path) -> bool:
        return self.run(ref).has_journal()

    def children(self, ref: str | Path) -> list[str]:
        return sorted(c.ref for c in self.run(ref).children())

    def checkpoint(self, ref: str | Path) -> dict[str, Any]:
        cp = self.run(ref).read_checkpoint()
        assert cp is not None, f"{ref}: no checkpoint"
        return cp

    def has_approval(self, ref: str | Path) -> bool:
        return self.run(ref).has_approval()

    def consumed(self, ref: str | Path, pause_id: str) -> bool:
        return self.run(ref).has_decision(pause_id)

    def cut_startup(self, ref: str, root: Path, env: dict[str, str]) -> list[str] | None:
        """crash_support.cut_startup on the PostgreSQL store: None if `ref` is a run; else what is wrong with how the
        cut start-up is shown, after clearing it away (the store's `discard`) as an operator would before replaying.
        A start-up is one transaction here (docs/stores.md): a kill inside it usually leaves no journal either, a row
        that holds nothing — no run at all, as a name never used."""
        handle = self.run(ref)
        if handle.has_manifest():
            return None
        problems = []
        st = self.flow(["status", ref], root, env)
        if not handle.has_journal():
            if st.returncode != 2 or "no run with this id or name" not in st.stderr:
                problems.append(f"{ref}: a start-up that left nothing must be no run (exit 2), got {st.returncode}")
            handle.discard()
            return problems
        # the store's own words reach the operator (this kit once found `--store` replacing them with "no run with
        # this id or name"): a one-line refusal, exit 2, naming the cut start-up
        if st.returncode != 2 or "start-up was cut" not in st.stderr:
            problems.append(
                f"{ref}: a cut start-up must be named by status (exit 2), got {st.returncode}: {st.stderr[-200:]}"
            )
        if b'"action_dispatched"' in handle.journal_bytes():
            problems.append(f"{ref}: a start-up cut before the manifest had dispatched input")
        handle.discard()
        return problems


class PgDesk(PgRuns):
    """The shared Xvnc desktop of a module, its runs in one PostgreSQL schema (`pg:case-N`)."""

    def __init__(self, desk: Desktop, server: PgServer, schema: str, monkeypatch: pytest.MonkeyPatch) -> None:
        super().__init__(server, schema, monkeypatch)
        self.desk = desk

    # the desktop, as Desktop has it
    @property
    def root(self) -> Path:
        return self.desk.root

    @property
    def url(self) -> str:
        return self.desk.url

    def case(self) -> tuple[Path, float]:
        return self.desk.case()

    def rows(self, amount: float) -> int:
        return self.desk.rows(amount)

    def fast_bundle(self) -> Path:
        return self.desk.fast_bundle()

    def env(self) -> dict[str, str]:
        return dict(self.desk.env(), PGPASSWORD=self.server.password)

    def replay_args(self, run: str, amount: float, bundle: Path = BUNDLE_DIR) -> list[str]:
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
            f"vendor={VENDOR}",
            "--param",
            f"amount={amount}",
            "--json",
        ]

    def reconcile_args(self, root: Path) -> list[str]:
        return ["reconcile", *self.store_args()]

    @staticmethod
    def run_ref(root: Path) -> str:
        return f"pg:{root.name}"
