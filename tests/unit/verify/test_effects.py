"""Verdicts (judge), the polling loop (verify_effect), named verifiers, and make_reader's dispatch."""

import sqlite3

import pytest

from openadapt_flow.bundle.effect import Effect
from openadapt_flow.errors import ConfigError
from openadapt_flow.verify.effects import (
    ABSENT,
    CONFIRMED,
    CONFLICTING,
    INDETERMINATE,
    UNAVAILABLE,
    Reading,
    baseline_blocks,
    judge,
    make_reader,
    resolve_effect,
    verify_effect,
)

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
    return Effect.model_validate(
        {
            "kind": "sql",
            "dsn": f"sqlite:///{db}",
            "query": "select count(*) from invoices where vendor = :vendor and amount = :amount",
            "expect": {"increase_by": 1},
            "timeout_s": 0.5,
            **kw,
        }
    )


def insert(db, vendor="ACME", amount=10.0):
    c = sqlite3.connect(db)
    c.execute("insert into invoices values (?, ?)", (vendor, amount))
    c.commit()
    c.close()


def fake_clock(*times):
    it = iter(times)
    return lambda: next(it)


def test_confirmed_when_the_row_lands(db):
    eff = effect(db)
    read = make_reader(eff, {"vendor": "ACME", "amount": 10.0})
    base = read()
    assert base.ok and base.value == 0
    insert(db)
    v = verify_effect(eff, read, base, dispatched_at=0)
    assert v.verdict == CONFIRMED and v.observed.value == 1
    assert v.to_json()["observed"] == {"ok": True, "value": 1} and v.to_json()["baseline"] == {"ok": True, "value": 0}


def test_absent_only_after_the_timeout(db):
    eff = effect(db)
    read = make_reader(eff, {"vendor": "ACME", "amount": 10.0})
    base = read()
    # two clock reads per poll: when the read began, when it ended
    v = verify_effect(
        eff,
        read,
        base,
        dispatched_at=0.0,
        clock=fake_clock(0.0, 0.0, 0.1, 0.1, 0.2, 0.2, 0.6, 0.6),
        wait=lambda s: None,
    )
    assert v.verdict == ABSENT and v.reads == 4 and v.waited_s >= 0.5


def test_a_read_begun_before_the_timeout_cannot_prove_absence(db):
    eff = effect(db)
    waits = []
    # the first read starts at 0.4 and ends at 0.9: past the timeout, but begun before it, so read again
    v = verify_effect(
        eff,
        lambda: Reading(True, 0),
        Reading(True, 0),
        dispatched_at=0.0,
        clock=fake_clock(0.4, 0.9, 0.9, 1.0),
        wait=waits.append,
    )
    assert v.verdict == ABSENT and v.reads == 2 and waits == [0.0]


def test_unavailable_is_retried_until_the_timeout_then_kept_as_evidence():
    eff = Effect.model_validate({"kind": "file", "path": "/x", "expect": {"increase_by": 1}, "timeout_s": 0.2})
    reads = iter([Reading(False, error="boom"), Reading(True, 1)])
    v = verify_effect(
        eff,
        lambda: next(reads),
        Reading(True, 0),
        dispatched_at=0.0,
        clock=fake_clock(0.0, 0.0, 0.1, 0.1),
        wait=lambda s: None,
    )
    assert v.verdict == CONFIRMED and v.reads == 2
    v = verify_effect(
        eff,
        lambda: Reading(False, error="HTTP 500"),
        Reading(True, 0),
        dispatched_at=0.0,
        clock=fake_clock(0.3, 0.3),
        wait=lambda s: None,
    )
    assert v.verdict == UNAVAILABLE and v.to_json()["observed"] == {"ok": False, "value": None, "error": "HTTP 500"}


@pytest.mark.parametrize(
    "expect, baseline, observed, verdict",
    [
        ({"increase_by": 1}, Reading(True, 0), Reading(True, 1), CONFIRMED),
        ({"increase_by": 1}, Reading(True, None), Reading(True, 1), CONFIRMED),  # a missing file/row reads as nothing
        ({"increase_by": 1}, Reading(True, 3), Reading(True, 3), ABSENT),
        ({"increase_by": 1}, Reading(True, 0), Reading(True, 2), CONFLICTING),
        ({"increase_by": 1}, Reading(True, 2), Reading(True, 1), CONFLICTING),  # something was removed
        ({"increase_by": 1}, Reading(True, 0), Reading(True, "n/a"), CONFLICTING),
        ({"increase_by": 1}, None, Reading(True, 1), UNAVAILABLE),  # no baseline: a delta proves nothing
        ({"increase_by": 1}, Reading(False, error="x"), Reading(True, 1), UNAVAILABLE),
        ({"increase_by": 1}, Reading(True, 0), Reading(False, error="x"), UNAVAILABLE),
        ({"equals": 1}, Reading(True, 0), Reading(True, 1), CONFIRMED),
        ({"equals": "paid"}, Reading(True, "open"), Reading(True, "paid"), CONFIRMED),
        ({"equals": 10}, Reading(True, None), Reading(True, "10"), CONFIRMED),
        ({"equals": "paid"}, Reading(True, "open"), Reading(True, "open"), ABSENT),
        ({"equals": "sha256:ab"}, Reading(True, None), Reading(True, None), ABSENT),
        ({}, Reading(True, None), Reading(True, "x"), CONFIRMED),
        ({}, Reading(True, 0), Reading(True, 0), ABSENT),
    ],
)
def test_judge(expect, baseline, observed, verdict):
    eff = Effect.model_validate({"kind": "file", "path": "/x", "expect": expect})
    assert judge(eff, baseline, observed) == verdict


def test_named_verifier_from_config_and_env_dsn(db):
    named = {"ledger": Effect.model_validate({"kind": "sql", "dsn_env": "LEDGER_DSN"})}
    eff = resolve_effect(
        Effect.model_validate({"use": "ledger", "query": "select count(*) from invoices", "expect": {"equals": 0}}),
        named,
    )
    assert eff.kind == "sql" and eff.query
    with pytest.raises(ConfigError, match="LEDGER_DSN is not set"):
        make_reader(eff, {}, env={})
    assert make_reader(eff, {}, env={"LEDGER_DSN": f"sqlite:///{db}"})().value == 0
    with pytest.raises(ConfigError, match="does not define"):
        resolve_effect(Effect.model_validate({"use": "nope"}), named)


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"kind": "sql", "dsn": "sqlite:///x.db"}, "needs query"),
        ({"kind": "sql", "query": "select 1"}, "needs dsn or dsn_env"),
        ({"kind": "sql", "dsn": "mysql://h/db", "query": "select 1"}, "not supported"),
        ({"kind": "http"}, "needs url"),
        ({"kind": "file"}, "needs path"),
    ],
)
def test_misconfiguration_is_a_config_error_before_any_read(fields, message):
    with pytest.raises(ConfigError, match=message):
        make_reader(Effect.model_validate(fields), {}, env={})


def test_polling_backs_off_but_never_past_the_timeout():
    eff = Effect.model_validate({"kind": "file", "path": "/x", "expect": {"increase_by": 1}, "timeout_s": 10})
    now = [0.0]
    waits: list[float] = []

    def wait(s):
        waits.append(round(s, 3))
        now[0] += s

    v = verify_effect(
        eff, lambda: Reading(True, 0), Reading(True, 0), dispatched_at=0.0, clock=lambda: now[0], wait=wait
    )
    assert v.verdict == ABSENT and v.waited_s >= 10
    assert waits[:4] == [0.1, 0.15, 0.225, 0.338] and max(waits) == 1.0 and round(sum(waits), 6) == 10


def test_an_http_effect_still_reads_a_token_named_in_dsn_env_and_a_bad_merge_is_a_config_error():
    from openadapt_flow.bundle.effect import Effect
    from openadapt_flow.errors import ConfigError
    from openadapt_flow.verify.effects import resolve_effect

    named = {
        "api": Effect.model_validate({"kind": "http", "url": "http://h/x"}),
        "db": Effect.model_validate({"kind": "sql", "dsn_env": "DB", "query": "select 1"}),
    }
    # bundles, configs and paused runs' manifests from before token_env said dsn_env: read the same way
    merged = resolve_effect(Effect.model_validate({"use": "api", "dsn_env": "API_TOKEN"}), named)
    assert (merged.token_env, merged.dsn_env) == ("API_TOKEN", None)
    with pytest.raises(ConfigError, match="effect use 'db': a sql effect does not take url"):
        resolve_effect(Effect.model_validate({"use": "db", "url": "http://h/y"}), named)


def _judge(expect, baseline, observed):
    eff = Effect.model_validate({"kind": "file", "path": "/x", "expect": expect})
    return judge(eff, Reading(True, baseline), Reading(True, observed))


@pytest.mark.parametrize(
    "expect, baseline, observed, verdict",
    [
        # equals: v — CONFIRMED only when it became v; ABSENT only when nothing changed
        ({"equals": 1}, 1, 1, INDETERMINATE),  # a count already at 1 proves no write
        ({"equals": "paid"}, "paid", "paid", INDETERMINATE),
        ({"equals": "paid"}, "open", "void", CONFLICTING),  # it changed, but not to the expectation
        ({"equals": "paid"}, "paid", "open", CONFLICTING),
        ({"equals": 2}, 0, 1, CONFLICTING),  # a write landed (0 → 1) that is not the declared one
        ({"equals": 11.5}, "10", "11.50", CONFIRMED),  # numbers compare as numbers
        ({"equals": "11.50"}, 10, 11.5, CONFIRMED),
        ({"equals": 0.1}, 0, "0.1", CONFIRMED),
        ({"equals": 1}, 0, True, CONFLICTING),  # a boolean is not the number 1
        ({"equals": True}, False, 1, CONFLICTING),
        ({"equals": True}, False, True, CONFIRMED),
        ({"equals": "nan"}, "x", float("nan"), CONFIRMED),  # a non-finite float reads as its text, never as a number
        ({"equals": 1}, 0, "1_0", CONFLICTING),
        # no expectation: any change confirms, no change is absent
        ({}, 1, 1, ABSENT),
        ({}, "open", "paid", CONFIRMED),
        ({}, "11.50", 11.5, ABSENT),
        ({}, float("nan"), float("nan"), ABSENT),
        # increase_by: the delta, computed exactly
        ({"increase_by": 1}, "10", "11.00", CONFIRMED),
        ({"increase_by": 1}, 2**60, 2**60 + 1, CONFIRMED),  # no float rounding of big counts
        ({"increase_by": 1}, 2**60, 2**60, ABSENT),
        ({"increase_by": 1}, "nan", "nan", ABSENT),  # unchanged text
        ({"increase_by": 1}, "nan", "inf", CONFLICTING),
        ({"increase_by": 1}, 0, "nan", CONFLICTING),
        ({"increase_by": 1}, False, True, CONFLICTING),  # booleans take no part in arithmetic
        ({"increase_by": 0}, 3, 3, INDETERMINATE),
    ],
)
def test_judge_against_the_baseline(expect, baseline, observed, verdict):
    assert _judge(expect, baseline, observed) == verdict


@pytest.mark.parametrize("expect", [{"equals": 1}, {"equals": "paid"}, {}])
def test_no_baseline_confirms_nothing(expect):
    eff = Effect.model_validate({"kind": "file", "path": "/x", "expect": expect})
    assert judge(eff, None, Reading(True, "paid")) == UNAVAILABLE
    assert judge(eff, Reading(False, error="locked"), Reading(True, 1)) == UNAVAILABLE


@pytest.mark.parametrize(
    "expect, baseline, blocks",
    [
        ({"equals": 1}, Reading(True, 1), "already equals 1"),
        ({"equals": 11.5}, Reading(True, "11.50"), "already equals 11.5"),
        ({"equals": "paid"}, Reading(True, "paid"), "already equals 'paid'"),
        ({"equals": 1}, Reading(True, True), None),
        ({"equals": 1}, Reading(True, 0), None),
        ({"increase_by": 1}, Reading(True, 5), None),
        ({"increase_by": 0}, Reading(True, 5), "increase_by: 0"),
        ({}, Reading(True, 5), None),
        (
            {"increase_by": 1},
            Reading(False, error="file is not a database"),
            "could not be read before the step (file is not a database)",
        ),
        ({}, Reading(False, error="x"), "could not be read"),
    ],
)
def test_a_baseline_that_cannot_be_read_or_already_holds_blocks_the_input(expect, baseline, blocks):
    eff = Effect.model_validate({"kind": "file", "path": "/x", "expect": expect})
    got = baseline_blocks(eff, baseline)
    assert (got is None) if blocks is None else (blocks in got)
