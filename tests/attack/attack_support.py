"""A fast durable run with no desktop for the attack suites: a tool that writes (`post`) halts while its system is
down, so the run pauses awaiting an operator's decision; any `post` that runs is one line in the write log.

The harm every attack looks for: `post` running without a valid, unused decision, or running twice.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.runtime.runs import replay
from openadapt_flow.runtime.start.launch import ReplayRequest, RunOutcome
from openadapt_flow.store import MEMORY_PREFIX as PREFIX
from openadapt_flow.store import PG_PREFIX, RUN_FILES, PostgresRun, PostgresStore
from openadapt_flow.store import pg_run_name as run_name
from openadapt_flow.store.lease import LeaseInfo
from openadapt_flow.store.select import postgres_store, store_of_ref
from tests.crash import crash_support
from tests.support import memcrash
from tests.support.cli import flow_env, run_flow
from tests.support.demo_invoices import BUNDLE
from tests.support.pg import store_spec

TOOLS = '''
import os
from pathlib import Path

def fetch():
    return {"total": 1250}

def post(total):
    if Path(os.environ["POST_DOWN"]).exists():
        raise RuntimeError("ledger API down")
    log = Path(os.environ["POST_LOG"])
    log.write_text((log.read_text() if log.exists() else "") + f"post {total}\\n")
    if Path(os.environ["POST_DOWN"] + ".die").exists():
        raise SystemExit("killed after the write, before it was verified")
    return "posted"

def done():
    return "ok"
'''

STEPS = [
    {"id": "fetch", "action": "tool", "call": "attack_tools:fetch"},
    {"id": "post", "action": "tool", "call": "attack_tools:post", "args": {"total": "{steps.fetch.result.total}"}},
    {"id": "done", "action": "tool", "call": "attack_tools:done"},
]


class Workspace:
    """The attack's run, in the store under test: run directories under `root`, or `memory:<root>-<name>` runs."""

    def __init__(self, root: Path, store: str = "filesystem", spec: str | None = None) -> None:
        self.root = root
        self.store = store
        self.spec = spec  # the postgres store's `postgresql://…` (its own schema)
        self.log = root / "post.log"
        self.down = root / "down"

    def ref(self, run_dir: str) -> Path:
        """Where a run named `run_dir` lives (a memory run's reference is `memory:NAME`, as RunOutcome.run_dir holds it)."""
        if self.store == "postgres":
            return Path(f"{PG_PREFIX}{run_dir}")
        return Path(f"{PREFIX}{self.root.name}-{run_dir}") if self.store == "memory" else self.root / run_dir

    def files(self, run: Path) -> "RunFiles":
        return RunFiles(run)

    def posts(self) -> int:
        return len(self.log.read_text().splitlines()) if self.log.exists() else 0

    def bundle(self, steps: list[dict]) -> Path:
        b = self.root / "b"
        b.mkdir(exist_ok=True)
        flow = {
            "schema": "openadapt-flow/bundle@1",
            "name": "attack",
            "screen": {"width": 100, "height": 100},
            "steps": steps,
        }
        (b / "flow.yaml").write_text(yaml.safe_dump(flow, sort_keys=False))
        return b

    def config(self, **approvals: object) -> DeployConfig:
        body: dict = {
            "schema": "openadapt-flow/config@1",
            "runtime": {"runs_root": str(self.root / "runs"), "durable": True},
        }
        if self.store == "memory":
            body["runtime"]["store"] = PREFIX
        elif self.store == "postgres":
            body["runtime"]["store"] = self.spec
        if approvals:
            body["approvals"] = approvals
        return DeployConfig.model_validate(body)

    def start(self, steps: list[dict] = STEPS, run_dir: str = "run", **approvals: object) -> RunOutcome:
        """Start with the ledger API down: the run pauses at `post` awaiting an operator; then the API comes back."""
        self.down.write_text("down")
        out = replay(
            ReplayRequest(
                bundle=self.bundle(steps),
                params={},
                backend=None,
                config=self.config(**approvals),
                run_dir=self.ref(run_dir),
            )
        )
        self.down.unlink()
        return out


STORES = ["filesystem", "memory", "postgres"]


def on_stores(points: list[str], on_postgres: list[str]) -> list[Any]:
    """(store, point) cases for `@pytest.mark.parametrize("demo,point", …, indirect=["demo"])`: every point on the
    filesystem and memory stores, `on_postgres` of them on PostgreSQL (a module whose cases cost several real `flow`
    commands each, where another PostgreSQL matrix has every point)."""
    assert set(on_postgres) <= set(points)
    return [pytest.param(s, p, id=f"{s}-{p}") for s in STORES for p in points if s != "postgres" or p in on_postgres]


def env_for(root: Path) -> dict[str, str]:
    return {
        "FLOW_KEY_FILE": str(root / "install.key"),
        "FLOW_DECISION_KEY_FILE": str(root / "decision.key"),
        "FLOW_STATE_DIR": str(root / "state"),
        "POST_LOG": str(root / "post.log"),
        "POST_DOWN": str(root / "down"),
    }


def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store: str, spec: str | None = None) -> Workspace:
    for k, v in env_for(tmp_path).items():
        monkeypatch.setenv(k, v)
    (tmp_path / "attack_tools.py").write_text(TOOLS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return Workspace(tmp_path, store, spec)


def pg_store(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """A new schema of the session's server (`pg_server`) for `flow` processes: (its store spec, the password for their
    PGPASSWORD). This process reads `pg:NAME` there (store_of_ref: the store it opened last); each `flow` is a process
    of its own, so none shares this process's connection."""
    server = request.getfixturevalue("pg_server")
    spec = store_spec(server, f"p_{uuid.uuid4().hex[:12]}", monkeypatch)
    postgres_store(spec)
    return spec, server.password


def forked_flow(args: list[str], cwd: Path, env: dict[str, str]) -> Any:
    """`flow ARGS` as a forked process of this one (tests/crash/crash_support.py: the real CLI, its own environment and
    PostgreSQL connections; ~1.5 s less than a new interpreter), killed (-9) at its FLOW_CRASH_AT point."""
    return crash_support.flow([str(a) for a in args], cwd, env, timeout=120)


def pg_workspace(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    """The workspace on the PostgreSQL store: a new schema of the session's server (`pg_server`), runs `pg:NAME`."""
    spec = store_spec(request.getfixturevalue("pg_server"), f"a_{uuid.uuid4().hex[:12]}", monkeypatch)
    return workspace(tmp_path, monkeypatch, "postgres", spec)


@pytest.fixture
def ws(tmp_path, monkeypatch) -> Workspace:
    """The workspace on the filesystem store (for attacks on the run directory as files on disk)."""
    return workspace(tmp_path, monkeypatch, "filesystem")


@pytest.fixture(params=STORES)
def wss(request, tmp_path, monkeypatch) -> Workspace:
    """The workspace on each store: the filesystem, this process's memory store, a schema of the PostgreSQL server."""
    if request.param == "postgres":
        return pg_workspace(request, tmp_path, monkeypatch)
    return workspace(tmp_path, monkeypatch, request.param)


_DOCS = {name: what for what, name in RUN_FILES.items() if what not in ("journal", "lease")}


class RunFiles:
    """A run's records as the files of its run directory (SPEC §7 names: what an attacker edits), on either store.

    In the memory store a record is what the store holds (documents as their JSON text, the journal's bytes, the typed
    lease, the consumed decisions, artifacts): an edit there is the same attack on the same bytes."""

    def __init__(self, run: Path) -> None:
        self.run = run
        self.memory = str(run).startswith(PREFIX)
        self.pg = str(run).startswith(PG_PREFIX)

    def _row(self) -> PostgresRun:
        """The run's rows in the PostgreSQL store this process opened last (the run's own, for an in-process run)."""
        store = store_of_ref(str(self.run))
        assert isinstance(store, PostgresStore)
        return PostgresRun(store, run_name(str(self.run)))

    def _recs(self) -> Any:
        return memcrash.memory_store().runs[str(self.run).removeprefix(PREFIX)]  # KeyError: no such run (none made)

    def read(self, name: str) -> bytes:
        if self.pg:
            return _pg_read(self._row(), name)
        if not self.memory:
            return (self.run / name).read_bytes()
        recs = self._recs()
        if name == RUN_FILES["journal"]:
            return bytes(recs.journal)
        if name == RUN_FILES["lease"]:
            return recs.lease.model_dump_json(by_alias=True).encode()
        if name in _DOCS:
            return recs.docs[_DOCS[name]].encode("latin-1")
        if name.startswith("decisions/"):
            return recs.decisions[name.removeprefix("decisions/").removesuffix(".json")].encode()
        return bytes(recs.artifacts[name])

    def write(self, name: str, data: bytes) -> None:
        if self.pg:
            return _pg_write(self._row(), name, data)
        if not self.memory:
            (self.run / name).parent.mkdir(parents=True, exist_ok=True)
            (self.run / name).write_bytes(data)
            return
        recs = self._recs()
        if name == RUN_FILES["journal"]:
            recs.journal[:] = data
        elif name == RUN_FILES["lease"]:
            try:  # an unreadable lease reads as none, as read_lease does
                recs.lease = LeaseInfo.model_validate_json(data)
            except ValueError:  # pydantic's ValidationError is one
                recs.lease = None
        elif name in _DOCS:
            recs.docs[_DOCS[name]] = data.decode("latin-1")
        elif name.startswith("decisions/"):
            recs.decisions[name.removeprefix("decisions/").removesuffix(".json")] = data.decode()
        else:
            recs.artifacts[name] = bytes(data)

    def delete(self, name: str) -> None:
        if self.pg:
            return _pg_write(self._row(), name, None)
        if not self.memory:
            p = self.run / name
            shutil.rmtree(p) if p.is_dir() else p.unlink()
            return
        recs = self._recs()
        if name == RUN_FILES["journal"]:
            recs.journal[:] = b""
        elif name == RUN_FILES["lease"]:
            recs.lease = None
        elif name == ".lock":
            recs.lock = threading.Lock()  # a new lock file: a new inode
        elif name in _DOCS:
            del recs.docs[_DOCS[name]]
        else:
            del recs.artifacts[name]

    def exists(self, name: str) -> bool:
        try:
            return bool(self.read(name)) or not (
                self.memory or self.pg
            )  # a stored journal exists once it holds a record
        except (OSError, KeyError, TypeError):
            return False

    def decisions(self) -> list[str]:
        """The consumed decisions, as `decisions/<pause>.json` names."""
        if self.pg:
            return [f"decisions/{p}.json" for p, _ in self._row().decision_texts()]
        if not self.memory:
            return sorted(f"decisions/{p.name}" for p in (self.run / "decisions").glob("*.json"))
        return [f"decisions/{p}.json" for p in self._recs().decisions]

    def forget_ledger(self) -> None:
        """The run ledger (outside the run: the filesystem's under FLOW_STATE_DIR, the memory store's its own) lost."""
        if self.memory:
            memcrash.memory_store().contents.ledger.clear()
            return
        for p in (Path(os.environ["FLOW_STATE_DIR"]) / "ledger").glob("*.json"):
            p.unlink()

    def json(self, name: str) -> dict:
        return json.loads(self.read(name))

    def edit_json(self, name: str, **changes: object) -> None:
        data = self.json(name)
        data.update(changes)
        self.write(name, json.dumps(data).encode())

    def records(self) -> list[dict]:
        return [json.loads(line) for line in self.read(RUN_FILES["journal"]).decode().splitlines() if line.strip()]

    def cut_journal(self, n: int) -> None:
        """Drop the journal's last `n` whole records (a cut tail, not a torn line)."""
        lines = self.read(RUN_FILES["journal"]).decode().splitlines(keepends=True)
        self.write(RUN_FILES["journal"], "".join(lines[:-n]).encode())


def _pg_read(run: PostgresRun, name: str) -> bytes:
    """A run file's bytes as the PostgreSQL store holds them: the journal's rows, a document's text, a decision's body."""
    if name == RUN_FILES["journal"]:
        return run.journal_bytes()
    if name.startswith("decisions/"):
        row = run.store.one(
            "SELECT body FROM flow_decisions WHERE run = %s AND pause_id = %s",
            (run.id(), name.removeprefix("decisions/").removesuffix(".json")),
        )
    else:
        row = (run.doc_text(_DOCS[name]),) if name in _DOCS else None
    if row is None or row[0] is None:
        raise KeyError(name)  # what this kit does not model on PostgreSQL (the lease, artifacts) fails the case loudly
    return str(row[0]).encode("latin-1")


def _pg_write(run: PostgresRun, name: str, data: bytes | None) -> None:
    """Tamper in SQL: the journal's rows replaced by `data`'s lines (seq, type and step columns from each line, the line
    bytes as given), or a document's text (None: removed)."""
    if name != RUN_FILES["journal"]:
        # a text column cannot hold NUL: the nearest garbage an attacker can store there
        run.put_text(_DOCS[name], None if data is None else data.decode("latin-1").replace("\x00", "?"))
        return
    lines = (data or b"").splitlines(keepends=True)
    with run.store.tx():
        run.store.run("DELETE FROM flow_journal WHERE run = %s", (run.id(),))
        for n, line in enumerate(lines, 1):
            try:
                rec = json.loads(line)
            except ValueError:
                rec = {}
            rec = rec if isinstance(rec, dict) else {}
            seq = rec.get("seq") if isinstance(rec.get("seq"), int) else n  # a dropped row leaves its gap
            run.store.run(
                "INSERT INTO flow_journal (run, seq, type, step, line) VALUES (%s, %s, %s, %s, %s)",
                (run.id(), seq, rec.get("type"), rec.get("step"), line),
            )


def records(run: Path) -> list[dict]:
    return RunFiles(run).records()


def edit_json(path: Path, **changes: object) -> None:
    RunFiles(path.parent).edit_json(path.name, **changes)


def cut_journal(run: Path, n: int) -> None:
    """Drop the journal's last `n` whole records (a cut tail, not a torn line)."""
    RunFiles(run).cut_journal(n)


class DemoRuns:
    """The demo invoice app and `flow` on one store, for the attacks on a real run: the app on Xvnc with `flow`
    processes (filesystem; postgres: the same processes, each naming a schema of the session's server with `--store`),
    or the app's recorded fixture with `flow` commands of this process killed at their crash points (memory:
    tests/support/memcrash.py)."""

    def __init__(
        self,
        store: str,
        root: Path,
        url: str,
        db: Path,
        app: Any,
        bundle: Path = BUNDLE,
        spec: str | None = None,
        password: str | None = None,
    ) -> None:
        self.store, self.root, self.url, self.db, self.app, self.bundle, self.spec = (
            store,
            root,
            url,
            db,
            app,
            bundle,
            spec,
        )
        self.env = flow_env(root, DEMO_DB_DSN=f"sqlite:///{db}", FLOW_DECISION_KEY_FILE=str(root / "decision.key"))
        if password is not None:
            self.env["PGPASSWORD"] = password  # a store URL never carries one

    @classmethod
    def start(
        cls,
        store: str,
        request: pytest.FixtureRequest,
        root: Path,
        monkeypatch: pytest.MonkeyPatch,
        refute_save: bool = False,
    ) -> "DemoRuns":
        """The app on its list screen with an empty system of record; `refute_save`: Save shows "Saved" and writes
        nothing (the real app's variant; the fixture's write goes to a database nobody reads)."""
        if store != "memory":
            app = request.getfixturevalue("demo_app")("normal", refute_save=refute_save)
            if store == "filesystem":
                return cls(store, root, app.xvnc.url, app.db_path, app)
            spec, password = pg_store(request, monkeypatch)
            return cls(store, root, app.xvnc.url, app.db_path, app, spec=spec, password=password)
        desk = memcrash.MemoryDesk(root, monkeypatch)
        desk.case(sink=root / "elsewhere.db" if refute_save else None)
        # its save's effect re-read after 0.2 s, not 5 (the fixture writes before the click returns)
        return cls(store, root, desk.url, desk.db, desk, desk.fast_bundle())

    def on_start_screen(self) -> bool:
        """Has no input reached the app (it shows its first screen)?"""
        if self.store != "memory":
            return bool(self.app.current_screen() == "list")
        player = self.app.desktop.player
        return bool(player.state == player.fixture.model.initial)

    def ref(self, name: str) -> Path:
        if self.store == "postgres":
            return Path(f"{PG_PREFIX}{name}")
        return Path(f"{PREFIX}{self.root.name}-{name}") if self.store == "memory" else self.root / "runs" / name

    def store_args(self) -> list[str]:
        return {"memory": ["--store", PREFIX], "postgres": ["--store", str(self.spec)]}.get(self.store, [])

    def scan_args(self) -> list[str]:
        """What `flow reconcile` sweeps: the runs root, or the store."""
        return self.store_args() or [str(self.root / "runs")]

    def flow(self, args: list[str], **extra: str) -> Any:
        """`flow ARGS` with the environment's `extra`; returncode -9 if killed at its FLOW_CRASH_AT point."""
        run = {"memory": memcrash.flow, "postgres": forked_flow}.get(self.store, run_flow)
        args = [str(a) for a in args]
        if self.store == "postgres" and "--store" not in args:
            args += self.store_args()  # every command that takes a run names its store
        return run(args, self.root, env=dict(self.env, **extra))

    def replay(self, run: Path, bundle: Path | None = None, **extra: str) -> Any:
        return self.flow(
            [
                "replay",
                bundle or self.bundle,
                "--url",
                self.url,
                "--durable",
                "--run-dir",
                run,
                *self.store_args(),
                "--param",
                "vendor=ACME Corp",
                "--param",
                "amount=1250.50",
            ],
            **extra,
        )

    def rows(self) -> list[tuple[str, float]]:
        """The system of record's invoices (vendor, amount), oldest first."""
        return [(v, a) for _, v, a in self._table()]

    def _table(self) -> list[tuple[int, str, float]]:
        if not self.db.exists():
            return []
        conn = sqlite3.connect(self.db, timeout=5)
        try:
            return [tuple(r) for r in conn.execute("SELECT id, vendor, amount FROM invoices ORDER BY id")]
        finally:
            conn.close()

    def state(self, run: Path) -> dict:
        return RunFiles(run).json("state.json")

    def records(self, run: Path) -> list[dict]:
        return RunFiles(run).records()
