"""Whole-change sql effects (issue 33 item 4): the database before and after a step, compared row by row, on a real
SQLite file. Exactly the declared rows → CONFIRMED; nothing → ABSENT; anything more (a leftover row, a changed or
removed row, another table) → a collateral write, every changed row listed with secrets masked."""

import json
import sqlite3

import pytest

from openadapt_flow.bundle.effect import Effect
from openadapt_flow.errors import ConfigError
from openadapt_flow.verify.effects import (
    ABSENT,
    CONFIRMED,
    CONFLICTING,
    UNAVAILABLE,
    WholeChange,
    judge,
    make_reader,
    make_verifier,
    verify_effect,
)

pytestmark = pytest.mark.timeout(30)

PARAMS = {"patient": "Ada Byron", "clinic": "Lake Clinic", "run_id": "run-1"}


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "referrals.db"
    c = sqlite3.connect(path)
    c.execute("create table referrals(id integer primary key, patient text, clinic text)")
    c.execute("create table audit(what text)")  # no primary key: rows keyed by rowid
    c.execute("insert into referrals(patient, clinic) values ('Old Row', 'North')")
    c.commit()
    c.close()
    return path


def sql(db, *statements):
    c = sqlite3.connect(db)
    for st in statements:
        c.execute(*st) if isinstance(st, tuple) else c.execute(st)
    c.commit()
    c.close()


def effect(db, **kw):
    return Effect.model_validate(
        {
            "kind": "sql",
            "dsn": f"sqlite:///{db}",
            "timeout_s": 0.3,
            "changes": [{"table": "referrals", "added": {"patient": "{patient}", "clinic": "{clinic}"}}],
            **kw,
        }
    )


def verdict_after(db, *statements, eff=None, params=PARAMS, secrets=None):
    v = make_verifier(eff or effect(db), params, key=b"k", secrets=secrets)
    base = v.read()
    assert base.ok, base
    assert v.blocks(base) is None
    sql(db, *statements)
    return verify_effect(eff or effect(db), v, base, dispatched_at=0.0)


def test_exactly_the_declared_row_is_confirmed(db):
    v = verdict_after(db, ("insert into referrals(patient, clinic) values (?, ?)", ("Ada Byron", "Lake Clinic")))
    assert v.verdict == CONFIRMED, v
    assert v.changes == [
        {
            "table": "referrals",
            "kind": "added",
            "key": "2",
            "values": {"id": 2, "patient": "Ada Byron", "clinic": "Lake Clinic"},
            "expected": True,
        }
    ]
    assert v.reads == 2  # a second reading agreed: the change stands


def test_the_declared_row_and_a_leftover_row_is_a_collateral_write_both_listed(db):
    """The issue's item 5: Ctrl+S commits the row this item typed and the half-typed row a halted item left."""
    v = verdict_after(
        db,
        ("insert into referrals(patient, clinic) values (?, ?)", ("Ada Byron", "Lake Clinic")),
        "insert into referrals(patient, clinic) values (NULL, 'Chen Wei')",
    )
    assert v.verdict == CONFLICTING
    assert "the declared change landed" in v.detail and "collateral write: 1 change(s)" in v.detail
    listed = {(c["kind"], c["values"]["patient"], c["expected"]) for c in v.changes}
    assert listed == {("added", "Ada Byron", True), ("added", None, False)}
    assert v.changes[0]["expected"] is False  # collateral first


def test_nothing_written_is_absent(db):
    v = verdict_after(db)
    assert v.verdict == ABSENT and v.changes == []


def test_a_changed_existing_row_is_collateral(db):
    v = verdict_after(
        db,
        ("insert into referrals(patient, clinic) values (?, ?)", ("Ada Byron", "Lake Clinic")),
        "update referrals set clinic = 'South' where patient = 'Old Row'",
    )
    assert v.verdict == CONFLICTING
    changed = [c for c in v.changes if c["kind"] == "changed"]
    assert changed == [
        {
            "table": "referrals",
            "kind": "changed",
            "key": "1",
            "values": {"id": 1, "patient": "Old Row", "clinic": "South"},
            "expected": False,
        }
    ]


def test_a_removed_row_and_a_row_in_another_table_are_collateral(db):
    v = verdict_after(
        db,
        ("insert into referrals(patient, clinic) values (?, ?)", ("Ada Byron", "Lake Clinic")),
        "delete from referrals where id = 1",
        "insert into audit values ('saved')",
    )
    assert v.verdict == CONFLICTING
    extra = {(c["table"], c["kind"]) for c in v.changes if not c["expected"]}
    assert extra == {("referrals", "removed"), ("audit", "added")}
    removed = next(c for c in v.changes if c["kind"] == "removed")
    assert removed["values"] == {"id": 1, "patient": "Old Row", "clinic": "North"}  # read before the step, in memory


def test_a_wrong_row_instead_of_the_declared_one_is_conflicting(db):
    """The issue's item 2: the patient typed into the clinic cell — a row landed, but not the declared one."""
    v = verdict_after(db, ("insert into referrals(patient, clinic) values (NULL, ?)", ("Ada Byron",)))
    assert v.verdict == CONFLICTING
    assert "declared but not seen: a row added to referrals" in v.detail
    assert [c["expected"] for c in v.changes] == [False]


def test_a_secret_params_value_is_masked_in_the_listing(db):
    v = verdict_after(
        db,
        ("insert into referrals(patient, clinic) values (?, ?)", ("Ada Byron", "Lake Clinic")),
        "insert into audit values ('login pw=hunter2-sekrit ok')",
        secrets={"pw": "hunter2-sekrit"},
    )
    assert v.verdict == CONFLICTING
    audit = next(c for c in v.changes if c["table"] == "audit")
    assert audit["values"] == {"what": "login pw=<secret:pw> ok"}
    assert "hunter2" not in json.dumps(v.to_json())


def test_the_journaled_readings_hold_digests_not_values(db):
    sql(db, "insert into audit values ('hunter2-sekrit')")
    v = make_verifier(effect(db), PARAMS, key=b"k")
    reading = v.read()
    text = json.dumps(reading.to_json())
    assert "hunter2" not in text and "Old Row" not in text
    assert reading.value["tables"]["referrals"]["key"] == ["id"] and reading.value["tables"]["audit"]["key"] == [
        "rowid"
    ]


def test_a_declared_change_of_an_existing_row(db):
    eff = effect(db, changes=[{"table": "referrals", "changed": {"patient": "Old Row"}, "to": {"clinic": "{clinic}"}}])
    v = verdict_after(db, "update referrals set clinic = 'Lake Clinic' where id = 1", eff=eff)
    assert v.verdict == CONFIRMED and v.changes[0]["kind"] == "changed"


def test_baselines_that_could_never_prove_the_change_block_the_input(db):
    def blocks(**kw):
        v = make_verifier(effect(db, **kw), PARAMS)
        return v.blocks(v.read())

    assert "no table 'nope'" in blocks(changes=[{"table": "nope", "added": {}}])
    assert "has no column 'patinet'" in blocks(changes=[{"table": "referrals", "added": {"patinet": "x"}}])
    assert "no row of referrals holds" in blocks(
        changes=[{"table": "referrals", "changed": {"id": 9}, "to": {"clinic": "x"}}]
    )
    assert "already holds" in blocks(changes=[{"table": "referrals", "changed": {"id": 1}, "to": {"clinic": "North"}}])


def test_a_snapshot_past_max_rows_is_unavailable_and_blocks(db):
    sql(db, *["insert into audit values ('x')"] * 5)
    v = make_verifier(effect(db, max_rows=4), PARAMS)
    r = v.read()
    assert not r.ok and "more than max_rows 4" in r.error
    assert "could not be read before the step" in v.blocks(r)
    assert make_verifier(effect(db, max_rows=6), PARAMS).read().ok


def test_tables_limits_what_is_compared(db):
    eff = effect(db, tables=["referrals"])
    v = verdict_after(
        db,
        ("insert into referrals(patient, clinic) values (?, ?)", ("Ada Byron", "Lake Clinic")),
        "insert into audit values ('saved')",
        eff=eff,
    )
    assert v.verdict == CONFIRMED
    with pytest.raises(ConfigError, match="tables: does not list"):
        make_verifier(effect(db, tables=["audit"]), PARAMS)


def test_a_number_param_matches_the_stored_number(tmp_path):
    path = tmp_path / "n.db"
    sql(path, "create table invoices(id integer primary key, amount numeric)")
    eff = Effect.model_validate(
        {
            "kind": "sql",
            "dsn": f"sqlite:///{path}",
            "timeout_s": 0.3,
            "changes": [{"table": "invoices", "added": {"amount": "{amount}"}}],
        }
    )
    v = verdict_after(path, "insert into invoices(amount) values (11.5)", eff=eff, params={"amount": 11.50})
    assert v.verdict == CONFIRMED


def test_the_model_refuses_mixed_or_empty_declarations(db):
    base = {"kind": "sql", "dsn": f"sqlite:///{db}"}
    for bad, msg in [
        ({"query": "select 1", "changes": [{"table": "t", "added": {}}]}, "not both"),
        ({"changes": [{"table": "t", "added": {}}], "expect": {"increase_by": 1}}, "takes no expect"),
        ({"changes": []}, "at least one row"),
        ({"changes": [{"table": "t", "added": {}, "changed": {}}]}, "exactly one of added or changed"),
        ({"changes": [{"table": "t", "changed": {"id": 1}}]}, "needs to:"),
        ({"query": "select 1", "tables": ["t"]}, "go with changes"),
    ]:
        with pytest.raises(ValueError, match=msg):
            Effect.model_validate({**base, **bad})


def test_unavailable_without_a_baseline_and_never_judged_as_one_value(db):
    v = make_verifier(effect(db), PARAMS)
    assert isinstance(v, WholeChange)
    assert v.judge(None, v.read()).verdict == UNAVAILABLE
    with pytest.raises(ValueError):
        judge(effect(db), v.read(), v.read())
    assert make_reader(effect(db), PARAMS)().ok  # preflight reads it like any effect
