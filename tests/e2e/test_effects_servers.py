"""Effect verifiers against real servers: a throwaway PostgreSQL cluster (sql) and a local HTTP server (http)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote

import psycopg
import pytest

from openadapt_flow.bundle.effect import Effect
from openadapt_flow.verify.effects import (
    ABSENT,
    CONFIRMED,
    CONFLICTING,
    UNAVAILABLE,
    baseline_blocks,
    make_reader,
    make_verifier,
    verify_effect,
)
from tests.support.pg import PgServer, start_pg, why_not_available

pytestmark = pytest.mark.timeout(60)

COUNT = "SELECT count(*) FROM invoices WHERE vendor = :vendor AND amount = :amount AND run_id = :run_id"
PARAMS = {"vendor": "O'Brien & Sons; --", "amount": 10.5, "run_id": "run-42"}


# --------------------------------------------------------------------------- PostgreSQL


@pytest.fixture(scope="module")
def pg() -> Iterator[PgServer]:
    reason = why_not_available()
    if reason:
        pytest.skip(reason)
    server = start_pg()
    try:
        with psycopg.connect(server.dsn(), autocommit=True) as c:
            c.execute("CREATE DATABASE ledger")
        with psycopg.connect(server.dsn("ledger"), autocommit=True) as c:
            c.execute("CREATE TABLE invoices (id serial PRIMARY KEY, vendor text, amount numeric(10, 2), run_id text)")
            c.execute("CREATE SEQUENCE audit_seq")
        print(
            f"\nPostgreSQL {server.version}: initdb {server.timings['initdb_s']:.2f}s, start {server.timings['start_s']:.2f}s"
        )
        yield server
    finally:
        server.stop()


@pytest.fixture
def ledger(pg: PgServer) -> Iterator[psycopg.Connection]:
    """A writer connection (the 'app'), with the table emptied for each test."""
    with psycopg.connect(pg.dsn("ledger"), autocommit=True) as c:
        c.execute("TRUNCATE invoices")
        yield c


@pytest.fixture
def env(pg: PgServer, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    # libpq also reads these; a stray one on the machine must not supply a password behind the test's back
    monkeypatch.delenv("PGPASSWORD", raising=False)
    monkeypatch.setenv("PGPASSFILE", "/nonexistent")
    return {"LEDGER_DSN": pg.dsn("ledger"), "BAD_DSN": pg.dsn("ledger", password="not-the-password")}


def sql_effect(query: str = COUNT, **kw: Any) -> Effect:
    return Effect.model_validate(
        {"kind": "sql", "dsn_env": "LEDGER_DSN", "query": query, "expect": {"increase_by": 1}, "timeout_s": 3, **kw}
    )


def count(ledger: psycopg.Connection) -> int:
    return ledger.execute("SELECT count(*) FROM invoices").fetchone()[0]


def test_pg_row_inserted_after_the_baseline_is_confirmed(ledger, env):
    eff = sql_effect()
    read = make_reader(eff, PARAMS, env)
    base = read()
    assert base.ok and base.value == 0, base
    dispatched = time.monotonic()
    # the "app" commits a little after dispatch; the verifier polls until it sees it
    app = threading.Timer(
        0.3,
        lambda: ledger.execute(
            "INSERT INTO invoices (vendor, amount, run_id) VALUES (%s, %s, %s)",
            (PARAMS["vendor"], PARAMS["amount"], PARAMS["run_id"]),
        ),
    )
    app.start()
    try:
        v = verify_effect(eff, read, base, dispatched)
    finally:
        app.join()
    assert v.verdict == CONFIRMED and v.observed.value == 1 and v.reads > 1, v.to_json()
    assert json.loads(json.dumps(v.to_json()))["observed"] == {"ok": True, "value": 1}


def test_pg_no_row_is_absent_only_after_the_timeout(ledger, env):
    ledger.execute("INSERT INTO invoices (vendor, amount, run_id) VALUES ('ACME', 10.5, 'other-run')")
    eff = sql_effect(timeout_s=0.5)
    read = make_reader(eff, PARAMS, env)
    base = read()
    t0 = time.monotonic()
    v = verify_effect(eff, read, base, t0)
    assert v.verdict == ABSENT and v.waited_s >= 0.5 and v.reads >= 2, v.to_json()


def test_pg_wrong_kind_of_change_is_conflicting_and_values_are_plain(ledger, env):
    eff = sql_effect("SELECT sum(amount) FROM invoices WHERE run_id = :run_id", expect={"increase_by": 1})
    read = make_reader(eff, PARAMS, env)
    base = read()
    assert base.ok and base.value is None  # sum over no rows
    ledger.execute("INSERT INTO invoices (vendor, amount, run_id) VALUES ('ACME', 10.5, 'run-42')")
    v = verify_effect(eff, read, base, time.monotonic() - 10)
    assert v.verdict == CONFLICTING and v.observed.value == 10.5  # numeric → float, journal-safe


def test_pg_injection_attempts_are_bound_as_values(ledger, env):
    for vendor in ["x' OR '1'='1", "x'; DROP TABLE invoices; --", "%(amount)s", ":amount"]:
        ledger.execute("INSERT INTO invoices (vendor, amount, run_id) VALUES ('ACME', 10.5, 'run-42')")
        read = make_reader(sql_effect(), {**PARAMS, "vendor": vendor}, env)
        assert read().value == 0
        ledger.execute("INSERT INTO invoices (vendor, amount, run_id) VALUES (%s, 10.5, 'run-42')", (vendor,))
        assert read().value == 1
    assert count(ledger) == 8  # nothing dropped, nothing else matched


@pytest.mark.parametrize(
    "query, refusal",
    [
        ("INSERT INTO invoices (vendor) VALUES ('evil') RETURNING 1", "read-only transaction"),
        (
            "WITH w AS (INSERT INTO invoices (vendor) VALUES ('evil') RETURNING 1) SELECT count(*) FROM w",
            "read-only transaction",
        ),
        ("SELECT 1; COMMIT; INSERT INTO invoices (vendor) VALUES ('evil')", "multiple commands"),
        ("SELECT nextval('audit_seq')", "read-only transaction"),
        ("UPDATE invoices SET vendor = 'evil' RETURNING 1", "read-only transaction"),
    ],
)
def test_pg_writes_through_the_verifier_are_refused(ledger, env, query, refusal):
    ledger.execute("INSERT INTO invoices (vendor, amount, run_id) VALUES ('ACME', 10.5, 'run-42')")
    r = make_reader(sql_effect(query), {}, env)()
    assert not r.ok and refusal in r.error, r
    assert ledger.execute("SELECT vendor FROM invoices").fetchall() == [("ACME",)]
    assert ledger.execute("SELECT last_value, is_called FROM audit_seq").fetchone() == (1, False)


def test_pg_wrong_password_is_unavailable_with_a_clear_error(env):
    eff = sql_effect(dsn_env="BAD_DSN", timeout_s=0.3)
    read = make_reader(eff, PARAMS, env)
    base = read()
    v = verify_effect(eff, read, base, time.monotonic())
    assert v.verdict == UNAVAILABLE
    assert 'password authentication failed for user "flow"' in v.observed.error
    assert "not-the-password" not in json.dumps(v.to_json())


def test_pg_password_comes_only_from_the_environment(pg, env):
    # the same server through a dsn with no password: libpq has nothing to send and the read is refused
    eff = Effect.model_validate(
        {"kind": "sql", "dsn": f"postgresql://flow@127.0.0.1:{pg.port}/ledger", "query": "SELECT 1"}
    )
    r = make_reader(eff, {}, env)()
    assert not r.ok and "password" in r.error


def test_pg_slow_query_is_cut_at_the_read_timeout(env):
    read = make_reader(sql_effect("SELECT pg_sleep(10)"), {}, env, read_timeout_s=0.5)
    t0 = time.monotonic()
    r = read()
    assert not r.ok and "statement timeout" in r.error and time.monotonic() - t0 < 3


# --------------------------------------------------------------------------- PostgreSQL: whole-change effects


@pytest.fixture
def audit(ledger: psycopg.Connection) -> psycopg.Connection:
    """A second table the app may write, with no primary key (its rows are keyed by content)."""
    ledger.execute("CREATE TABLE IF NOT EXISTS audit (what text)")
    ledger.execute("TRUNCATE audit")
    ledger.execute("INSERT INTO invoices (vendor, amount, run_id) VALUES ('Old Row', 1, 'x')")
    return ledger


def whole(**kw: Any) -> Effect:
    return Effect.model_validate(
        {
            "kind": "sql",
            "dsn_env": "LEDGER_DSN",
            "timeout_s": 0.3,
            "tables": ["invoices", "audit"],
            "changes": [{"table": "invoices", "added": {"vendor": "{vendor}", "amount": "{amount}"}}],
            **kw,
        }
    )


def whole_verdict(env, app: psycopg.Connection, *statements: str, eff: Effect | None = None, secrets=None):
    eff = eff or whole()
    v = make_verifier(eff, PARAMS, env, key=b"k", secrets=secrets)
    base = v.read()
    assert base.ok and v.blocks(base) is None, base
    for st in statements:
        app.execute(st)
    return verify_effect(eff, v, base, time.monotonic() - 10)


INSERT = "INSERT INTO invoices (vendor, amount, run_id) VALUES ('O''Brien & Sons; --', 10.50, 'run-42')"


def test_pg_whole_change_exactly_the_declared_row_is_confirmed(audit, env):
    v = whole_verdict(env, audit, INSERT)
    assert v.verdict == CONFIRMED, v.to_json()
    (row,) = v.changes
    assert row["expected"] and row["kind"] == "added" and row["values"]["amount"] == 10.5  # numeric 10.50 = param 10.5


def test_pg_whole_change_an_extra_row_and_a_changed_row_are_collateral(audit, env):
    v = whole_verdict(
        env,
        audit,
        INSERT,
        "INSERT INTO audit VALUES ('saved by pw=hunter2-sekrit')",
        "UPDATE invoices SET amount = 2 WHERE vendor = 'Old Row'",
        secrets={"pw": "hunter2-sekrit"},
    )
    assert v.verdict == CONFLICTING and "collateral write: 2 change(s)" in v.detail
    extra = sorted((c["table"], c["kind"]) for c in v.changes if not c["expected"])
    assert extra == [("audit", "added"), ("invoices", "changed")]
    assert next(c for c in v.changes if c["table"] == "audit")["values"] == {"what": "saved by pw=<secret:pw>"}
    assert "hunter2" not in json.dumps(v.to_json())


def test_pg_whole_change_compares_only_the_named_tables(audit, env):
    """PostgreSQL snapshots the tables the effect names (changes, or tables:), never the whole server."""
    eff = whole(tables=None)
    v = whole_verdict(env, audit, INSERT, "INSERT INTO audit VALUES ('not compared')", eff=eff)
    assert v.verdict == CONFIRMED and {c["table"] for c in v.changes} == {"invoices"}


def test_pg_whole_change_is_bounded_and_names_what_is_missing(audit, env):
    for _ in range(3):
        audit.execute("INSERT INTO audit VALUES ('x')")
    big = make_verifier(whole(max_rows=3), PARAMS, env).read()
    assert not big.ok and "more than max_rows 3" in big.error
    gone = make_verifier(whole(tables=["invoices", "nope"]), PARAMS, env).read()
    assert not gone.ok and "no table 'nope'" in gone.error
    assert audit.execute("SELECT count(*) FROM audit").fetchone()[0] == 3  # read-only: nothing written


# --------------------------------------------------------------------------- HTTP


@dataclass
class Api:
    """A JSON API over a tiny in-memory ledger; what it answers is set per path by the test."""

    invoices: list[dict[str, Any]] = field(default_factory=list)
    seen: list[tuple[str, str | None]] = field(default_factory=list)  # (path, Authorization)
    release: threading.Event = field(default_factory=threading.Event)
    url: str = ""

    def respond(self, path: str, auth: str | None) -> tuple[int, str, str]:
        self.seen.append((path, auth))
        route = path.split("?")[0]
        if route.startswith("/api/invoices"):
            vendor = unquote(route.rsplit("/", 1)[-1])
            hits = [i for i in self.invoices if i["vendor"] == vendor]
            return 200, json.dumps({"data": {"count": len(hits), "items": hits}}), "application/json"
        if route == "/text":
            return 200, "posted INV-7\n" * len(self.invoices), "text/plain"
        if route == "/boom":
            return 500, '{"error": "database is locked"}', "application/json"
        if route == "/html":
            return 200, "<html>maintenance</html>", "text/html"
        if route == "/slow":
            self.release.wait(10)  # held until the test ends; the client must give up first
            return 200, "{}", "application/json"
        if route == "/moved":
            return 302, "", "text/plain"
        if route == "/secure":
            if auth != "Bearer t0ken":
                return 401, '{"error": "unauthorized"}', "application/json"
            return 200, '{"ok": true}', "application/json"
        return 404, "{}", "application/json"


@pytest.fixture
def api() -> Iterator[Api]:
    state = Api()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            status, body, ctype = state.respond(self.path, self.headers.get("Authorization"))
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            if status == 302:
                self.send_header("Location", state.url + "/secure")
            self.end_headers()
            try:
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # /slow: the verifier gave up first, as it should

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.release.set()
        server.shutdown()
        server.server_close()
        thread.join(5)


def http_effect(url: str, **kw: Any) -> Effect:
    return Effect.model_validate({"kind": "http", "url": url, "expect": {"increase_by": 1}, "timeout_s": 2, **kw})


def test_http_json_path_confirmed_when_the_record_lands(api):
    eff = http_effect(api.url + "/api/invoices/{vendor}?run={run_id}", json_path="data.count")
    read = make_reader(eff, PARAMS, {})
    base = read()
    assert base.ok and base.value == 0, base
    app = threading.Timer(0.3, lambda: api.invoices.append({"vendor": PARAMS["vendor"], "run": "run-42"}))
    app.start()
    try:
        v = verify_effect(eff, read, base, time.monotonic())
    finally:
        app.join()
    assert v.verdict == CONFIRMED and v.observed.value == 1 and v.reads > 1, v.to_json()
    assert api.seen[0][0] == "/api/invoices/O%27Brien%20%26%20Sons%3B%20--?run=run-42"  # quoted on the wire


def test_http_json_path_into_a_list_and_equals(api):
    api.invoices.append({"vendor": "ACME", "status": "draft"})
    eff = http_effect(api.url + "/api/invoices/ACME", json_path="data.items.0.status", expect={"equals": "posted"})
    read = make_reader(eff, {}, {})
    base = read()
    assert base.value == "draft" and baseline_blocks(eff, base) is None
    api.invoices[0]["status"] = "posted"
    v = verify_effect(eff, read, base, time.monotonic())
    assert v.verdict == CONFIRMED and v.observed.value == "posted"
    # the same expectation with the value already there before the step: it could confirm nothing
    assert "already equals 'posted'" in baseline_blocks(eff, read())


def test_http_contains_counts_in_the_body(api):
    eff = http_effect(api.url + "/text", contains="INV-7")
    read = make_reader(eff, {}, {})
    base = read()
    api.invoices.append({"vendor": "ACME"})
    assert verify_effect(eff, read, base, time.monotonic()).verdict == CONFIRMED


def test_http_unchanged_is_absent_after_the_timeout(api):
    eff = http_effect(api.url + "/api/invoices/ACME", json_path="data.count", timeout_s=0.4)
    read = make_reader(eff, {}, {})
    base = read()
    v = verify_effect(eff, read, base, time.monotonic())
    assert v.verdict == ABSENT and v.waited_s >= 0.4 and v.observed.value == 0


@pytest.mark.parametrize(
    "path, fields, evidence",
    [
        ("/boom", {"json_path": "data.count"}, 'HTTP 500 Internal Server Error: {"error": "database is locked"}'),
        ("/html", {"json_path": "data.count"}, "body is not JSON"),
        ("/api/invoices/ACME", {"json_path": "data.total"}, "json_path data.total: data.total not found"),
        ("/moved", {"json_path": "ok"}, "HTTP 302"),  # not followed: a redirect could carry the token elsewhere
        ("/secure", {"json_path": "ok"}, "HTTP 401"),
    ],
)
def test_http_failures_are_unavailable_with_the_error_kept(api, path, fields, evidence):
    eff = http_effect(api.url + path, timeout_s=0.2, **fields)
    read = make_reader(eff, {}, {})
    v = verify_effect(eff, read, read(), time.monotonic())
    assert v.verdict == UNAVAILABLE and evidence in v.to_json()["observed"]["error"], v.to_json()


def test_http_timeout_is_unavailable(api):
    read = make_reader(http_effect(api.url + "/slow", json_path="ok"), {}, {}, read_timeout_s=0.3)
    t0 = time.monotonic()
    r = read()
    assert not r.ok and "timed out after 0.3s" in r.error and time.monotonic() - t0 < 2


def test_http_bearer_token_from_the_environment(api):
    eff = http_effect(api.url + "/secure", json_path="ok", token_env="LEDGER_TOKEN", expect={"equals": True})
    r = make_reader(eff, {}, {"LEDGER_TOKEN": "t0ken"})()
    assert r.ok and r.value is True
    assert api.seen[-1] == ("/secure", "Bearer t0ken")
