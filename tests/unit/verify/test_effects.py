import sqlite3

import pytest

from openadapt_flow.bundle.models import Effect
from openadapt_flow.errors import ConfigError
from openadapt_flow.verify.effects import (ABSENT, CONFIRMED, CONFLICTING, UNAVAILABLE, Reading, judge, make_reader,
                                           resolve_effect, verify_effect)

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "ledger.db"
    c = sqlite3.connect(path)
    c.execute("create table invoices(vendor text, amount real)")
    c.commit()
    c.close()
    return path


def effect(db, **kw):
    return Effect.model_validate({"kind": "sql", "dsn": f"sqlite:///{db}", "query": "select count(*) from invoices where vendor = :vendor and amount = :amount",
                                  "expect": {"increase_by": 1}, "timeout_s": 0.5, **kw})


def insert(db, vendor="ACME", amount=10.0):
    c = sqlite3.connect(db)
    c.execute("insert into invoices values (?, ?)", (vendor, amount))
    c.commit()
    c.close()


def test_confirmed_when_the_row_lands(db):
    eff = effect(db)
    read = make_reader(eff, {"vendor": "ACME", "amount": 10.0})
    base = read()
    assert base.ok and base.value == 0
    insert(db)
    v = verify_effect(eff, read, base, dispatched_at=0)
    assert v.verdict == CONFIRMED and v.observed.value == 1


def test_absent_only_after_the_timeout(db):
    eff = effect(db)
    read = make_reader(eff, {"vendor": "ACME", "amount": 10.0})
    base = read()
    clock = iter([0.0, 0.1, 0.2, 0.6, 0.7])
    v = verify_effect(eff, read, base, dispatched_at=0.0, clock=lambda: next(clock), wait=lambda s: None)
    assert v.verdict == ABSENT and v.reads == 4 and v.waited_s >= 0.5


def test_params_are_bound_not_formatted(db):
    insert(db, vendor="x' or '1'='1")
    read = make_reader(effect(db), {"vendor": "x' or '1'='1", "amount": 10.0})
    assert read().value == 1
    assert make_reader(effect(db), {"vendor": "' or 1=1 --", "amount": 10.0})().value == 0


def test_conflicting_and_unavailable(db, tmp_path):
    eff = effect(db)
    assert judge(eff, Reading(True, 0), Reading(True, 2)) == CONFLICTING
    missing = effect(tmp_path / "gone.db")
    r = make_reader(missing, {"vendor": "a", "amount": 1})()
    assert not r.ok and judge(missing, Reading(True, 0), r) == UNAVAILABLE


def test_reader_is_read_only(db):
    eff = Effect.model_validate({"kind": "sql", "dsn": f"sqlite:///{db}", "query": "insert into invoices values ('a', 1) returning 1"})
    r = make_reader(eff, {})()
    assert not r.ok and "readonly" in r.error.lower().replace(" ", "")


def test_named_verifier_from_config_and_env_dsn(db):
    named = {"ledger": Effect.model_validate({"kind": "sql", "dsn_env": "LEDGER_DSN"})}
    eff = resolve_effect(Effect.model_validate({"use": "ledger", "query": "select count(*) from invoices", "expect": {"equals": 0}}), named)
    assert eff.kind == "sql" and eff.query
    with pytest.raises(ConfigError, match="LEDGER_DSN is not set"):
        make_reader(eff, {}, env={})
    assert make_reader(eff, {}, env={"LEDGER_DSN": f"sqlite:///{db}"})().value == 0
    with pytest.raises(ConfigError, match="does not define"):
        resolve_effect(Effect.model_validate({"use": "nope"}), named)
