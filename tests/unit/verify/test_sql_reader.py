"""The sql reader: SQLite via the standard library; PostgreSQL paths that need no server (a real one is in tests/e2e)."""

import socket
import sqlite3
import time

import pytest

from openadapt_flow.bundle.effect import Effect
from openadapt_flow.errors import ConfigError
from openadapt_flow.verify.effects import make_reader
from openadapt_flow.verify.readers import SqlReader, sql_binds, to_pyformat

pytestmark = pytest.mark.timeout(30)

COUNT = "select count(*) from invoices where vendor = :vendor and amount = :amount"


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "ledger.db"
    c = sqlite3.connect(path)
    c.execute("create table invoices(vendor text, amount real)")
    c.commit()
    c.close()
    return path


def sql(dsn, query=COUNT, **kw):
    return Effect.model_validate({"kind": "sql", "dsn": dsn, "query": query, **kw})


def rows(db):
    c = sqlite3.connect(db)
    try:
        return c.execute("select vendor, amount from invoices").fetchall()
    finally:
        c.close()


def insert(db, vendor="ACME", amount=10.0):
    c = sqlite3.connect(db)
    c.execute("insert into invoices values (?, ?)", (vendor, amount))
    c.commit()
    c.close()


@pytest.mark.parametrize(
    "vendor", ["x' or '1'='1", "' or 1=1 --", "a'); drop table invoices; --", "%s %(amount)s :amount"]
)
def test_injection_attempts_are_bound_as_values(db, vendor):
    insert(db, vendor="ACME")
    read = make_reader(sql(f"sqlite:///{db}"), {"vendor": vendor, "amount": 10.0})
    assert read().value == 0
    insert(db, vendor=vendor)
    assert read().value == 1  # matched literally, as one value
    assert len(rows(db)) == 2  # and nothing was dropped


def test_sqlite_reader_is_read_only(db):
    for q in ["insert into invoices values ('a', 1) returning 1", "delete from invoices returning 1"]:
        r = make_reader(sql(f"sqlite:///{db}", q), {})()
        assert not r.ok and "readonly" in r.error.lower().replace(" ", "")
    r = make_reader(sql(f"sqlite:///{db}", "select 1; insert into invoices values ('a', 1)"), {})()
    assert not r.ok and "one statement" in r.error
    assert rows(db) == []


def test_sqlite_runaway_query_is_cut_at_the_read_timeout(db):
    forever = "with recursive n(i) as (select 1 union all select i + 1 from n) select count(*) from n"
    t0 = time.monotonic()
    r = make_reader(sql(f"sqlite:///{db}", forever), {}, read_timeout_s=0.3)()
    assert not r.ok and "interrupted" in r.error and time.monotonic() - t0 < 3


def test_missing_database_is_unavailable_not_created(tmp_path):
    r = make_reader(sql(f"sqlite:///{tmp_path}/gone.db", "select 1"), {})()
    assert not r.ok and "not found" in r.error and not (tmp_path / "gone.db").exists()


def test_values_are_plain_json(db):
    c = sqlite3.connect(db)
    c.execute("create table blobs(b blob)")
    c.execute("insert into blobs values (x'00ff')")
    c.commit()
    c.close()
    assert make_reader(sql(f"sqlite:///{db}", "select b from blobs"), {})().value == "00ff"
    assert make_reader(sql(f"sqlite:///{db}", "select b from blobs where 0"), {})().value is None  # no row


def test_an_unbound_param_is_a_config_error_not_a_null(db):
    # binding NULL would read 0 forever and "prove" the write absent
    with pytest.raises(ConfigError, match=":amount"):
        make_reader(sql(f"sqlite:///{db}"), {"vendor": "ACME"})


def test_inline_password_is_refused_even_from_config():
    with pytest.raises(ConfigError, match="use dsn_env"):
        make_reader(sql("postgresql://u:pw@127.0.0.1/db", "select 1"), {})


def test_binds_are_found_outside_literals_and_comments():
    q = "select ':no', \"a:b\", x::int, $$x$$ from t -- :nope\n where a = :a and b = :b /* :c */ and c = :a"
    assert sql_binds(q) == ["a", "b"]


def test_to_pyformat_binds_and_escapes_percent():
    q = "select * from t where v like '50%' and n = :n and s = :s::text -- 100%"
    assert to_pyformat(q) == "select * from t where v like '50%%' and n = %(n)s and s = %(s)s::text -- 100%%"


def silent_listener():
    """A socket that accepts TCP (backlog) but never answers: connect succeeds, the protocol hangs."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    return s


def test_postgres_connect_timeout_is_unavailable_with_evidence():
    with silent_listener() as s:
        port = s.getsockname()[1]
        eff = Effect.model_validate({"kind": "sql", "dsn_env": "PGDSN", "query": "select 1"})
        t0 = time.monotonic()
        r = make_reader(eff, {}, env={"PGDSN": f"postgresql://u:hunter2@127.0.0.1:{port}/db"}, read_timeout_s=1)()
        took = time.monotonic() - t0
    assert not r.ok and "timeout" in r.error.lower() and took < 6  # libpq's connect_timeout floor is 2 s
    assert "hunter2" not in r.error


def test_postgres_refused_is_unavailable():
    with silent_listener() as s:
        port = s.getsockname()[1]
    eff = Effect.model_validate({"kind": "sql", "dsn_env": "PGDSN", "query": "select 1"})
    r = make_reader(eff, {}, env={"PGDSN": f"postgresql://u:hunter2@127.0.0.1:{port}/db"})()
    assert not r.ok and "refused" in r.error.lower() and "hunter2" not in r.error


def test_errors_never_carry_the_password():
    reader = SqlReader(
        Effect.model_validate({"kind": "sql", "dsn_env": "PGDSN", "query": "select 1"}),
        {},
        {"PGDSN": "postgresql://u:hunter2@h/db"},
    )
    assert reader.source.scrub("bad dsn postgresql://u:hunter2@h/db") == "bad dsn postgresql://u:***@h/db"
