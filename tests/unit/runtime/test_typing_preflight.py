"""Preflight reads every effect's system of record once before the first input (issue 12, finding 8): a wrong DSN,
an unreachable database or server, a missing database file or a file effect's missing folder is bad input (exit 2,
no run dir, no input), named by step and variable — not a halt at the writing step after the earlier inputs."""

from __future__ import annotations

import http.server
import sqlite3
import threading

import pytest

from openadapt_flow.backends.fake import FakeBackend
from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.bundle.loader import load_bundle
from openadapt_flow.bundle.params import bind_params
from openadapt_flow.errors import ConfigError, FlowError, Unavailable
from openadapt_flow.runtime.operate.approval import approve
from openadapt_flow.runtime.runs import replay, resume
from openadapt_flow.runtime.start.launch import ReplayRequest
from openadapt_flow.runtime.start.preflight import probe_effects
from openadapt_flow.verify import readers
from tests.unit.runtime.test_durable import App, cfg, env, state  # noqa: F401 - env is a fixture
from tests.unit.runtime.test_engine import POST, home, make_bundle

pytestmark = pytest.mark.timeout(60)

FIRST = {"id": "first", "action": "key", "keys": ["escape"]}  # an input before the writing step


def saving(effect: dict) -> dict:
    return dict(
        POST, consequential=True, effect={"expect": {"increase_by": 1}, "timeout_s": 0.3, **effect}, timeout_s=10
    )


def start(tmp_path, steps, backend: FakeBackend):
    make_bundle(tmp_path / "b", steps)
    req = ReplayRequest(
        bundle=tmp_path / "b",
        params={"vendor": "ACME"},
        backend=BackendSpec(kind="fake"),
        config=cfg(tmp_path),
        run_dir=tmp_path / "run",
    )
    return replay(req, backend_factory=lambda spec: backend)


def refused(tmp_path, effect: dict, *match: str, error: type[FlowError] = ConfigError) -> str:
    """`error`: ConfigError (exit 2) when the system of record answered that what was asked is wrong; Unavailable
    (exit 75) when it did not answer."""
    fake = FakeBackend(home())
    with pytest.raises(error) as e:
        start(tmp_path, [FIRST, saving(effect)], fake)
    message = str(e.value)
    assert fake.events == [] and not (tmp_path / "run").exists()  # no input, no run dir
    assert "\n" not in message and "step 'post'" in message, message
    for m in match:
        assert m in message, message
    return message


QUERY = "select count(*) from posts where vendor = :vendor"


def test_a_dsn_naming_a_missing_database_is_refused_before_any_input(tmp_path, monkeypatch):
    monkeypatch.setenv("LEDGER_DSN", f"sqlite:///{tmp_path}/missing.db")
    refused(
        tmp_path, {"kind": "sql", "dsn_env": "LEDGER_DSN", "query": QUERY}, "dsn_env LEDGER_DSN", "missing.db not found"
    )


def test_a_query_the_database_cannot_run_is_refused_before_any_input(tmp_path, env):
    refused(
        tmp_path, {"kind": "sql", "dsn_env": "LEDGER_DSN", "query": "select count(*) from invoices"}, "no such table"
    )


def test_an_unreachable_postgres_is_refused_before_any_input(tmp_path, monkeypatch):
    monkeypatch.setenv("LEDGER_DSN", "postgresql://flow@127.0.0.1:1/ledger")  # nothing listens on port 1
    monkeypatch.setattr(readers, "READ_TIMEOUT_S", 2.0)
    msg = refused(
        tmp_path, {"kind": "sql", "dsn_env": "LEDGER_DSN", "query": QUERY}, "dsn_env LEDGER_DSN", error=Unavailable
    )
    assert "OperationalError" in msg


def test_an_unreachable_http_server_is_refused_before_any_input(tmp_path):
    refused(
        tmp_path,
        {"kind": "http", "url": "http://127.0.0.1:1/posts?vendor={vendor}", "json_path": "count"},
        "url http://127.0.0.1:1/posts",
        error=Unavailable,
    )


def test_a_file_effect_in_a_missing_folder_is_refused_before_any_input(tmp_path):
    refused(
        tmp_path,
        {"kind": "file", "path": str(tmp_path / "out" / "ledger.csv"), "contains": "ACME"},
        f"folder {tmp_path / 'out'} does not exist",
    )


def test_a_readable_system_of_record_is_read_once_for_many_steps(tmp_path, env, monkeypatch):
    reads: list[str] = []
    real = readers.SqlReader.read

    def counted(self):
        reads.append(self.query)
        return real(self)

    monkeypatch.setattr(readers.SqlReader, "read", counted)
    effect = {"kind": "sql", "dsn_env": "LEDGER_DSN", "query": QUERY}
    make_bundle(tmp_path / "b", [saving(effect), dict(saving(effect), id="again")])
    loaded = load_bundle(tmp_path / "b")
    probe_effects(loaded, cfg(tmp_path), bind_params(loaded.model, {"vendor": "ACME"}))
    assert reads == [QUERY]


def test_resume_refuses_when_a_later_step_cannot_be_verified_but_reconcile_needs_no_reading(tmp_path, env, monkeypatch):
    """A resumed run's steps still to come are probed; a step that already began is left to resume's re-check,
    so `reconcile` still settles a write whose system of record stays unreadable."""
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as c:
        c.execute("create table posts(vendor text)")
    monkeypatch.setenv("OTHER_DSN", f"sqlite:///{other}")
    app = App(env, refute=True)
    later = dict(
        FIRST,
        id="later",
        effect={"kind": "sql", "dsn_env": "OTHER_DSN", "query": QUERY, "expect": {"increase_by": 1}},
        consequential=True,
        timeout_s=1,
    )
    make_bundle(tmp_path / "b", [saving({"kind": "sql", "dsn_env": "LEDGER_DSN", "query": QUERY}), later])
    req = ReplayRequest(
        bundle=tmp_path / "b",
        params={"vendor": "ACME"},
        backend=BackendSpec(kind="fake"),
        config=cfg(tmp_path),
        run_dir=tmp_path / "run",
    )
    out = replay(req, backend_factory=lambda spec: app.connect())
    assert state(out.run_dir)["state"] == "PAUSED"
    other.unlink()
    env.unlink()  # the paused step's own ledger is gone too: that is reconcile's business, not the preflight's
    approve(out.run_dir, "continue", "alice")
    sent = list(app.events)
    with pytest.raises(ConfigError, match="step 'later': effect dsn_env OTHER_DSN cannot be read"):
        resume(out.run_dir, backend_factory=lambda spec: app.connect())
    assert app.events == sent and state(out.run_dir)["state"] == "PAUSED"


class _NotFound(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802
        self.send_error(404)

    def log_message(self, *args) -> None:
        pass


def test_an_http_effect_that_answers_an_error_is_refused_before_any_input(tmp_path):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotFound)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/posts"
        refused(tmp_path, {"kind": "http", "url": url, "json_path": "count"}, "HTTP 404")
    finally:
        server.shutdown()
        server.server_close()


def test_a_model_rung_without_its_api_key_is_refused_before_any_input(tmp_path, env, monkeypatch):
    monkeypatch.delenv("GROUNDER_KEY", raising=False)
    config = DeployConfig.model_validate(
        {
            "schema": "openadapt-flow/config@1",
            "ladder": {"model": {"api_key_env": "GROUNDER_KEY"}},
            "runtime": {"runs_root": str(tmp_path / "runs"), "settle_quiet_s": 0.01},
        }
    )
    make_bundle(tmp_path / "b", [dict(FIRST, timeout_s=1)])
    fake = FakeBackend(home())
    req = ReplayRequest(
        bundle=tmp_path / "b",
        params={"vendor": "ACME"},
        backend=BackendSpec(kind="fake"),
        config=config,
        run_dir=tmp_path / "run",
        allow_model=True,
    )
    with pytest.raises(ConfigError, match="api_key_env GROUNDER_KEY is not set"):
        replay(req, backend_factory=lambda spec: fake)
    assert fake.events == [] and not (tmp_path / "run").exists()
    out = replay(
        ReplayRequest(
            bundle=tmp_path / "b",
            params={"vendor": "ACME"},
            backend=BackendSpec(kind="fake"),
            config=config,
            run_dir=tmp_path / "run",
        ),
        backend_factory=lambda spec: fake,
    )  # model off: no key needed
    assert out.run_dir.exists() and fake.events  # it ran
