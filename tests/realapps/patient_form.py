"""The corpus's patient-intake forms written for a toolkit (apps/tkform, apps/webform): Patient and Clinic typed into
labelled fields and saved with Save, which adds a row to a SQLite `patients` table. One demonstration's recording,
one replay's judgement and one check of the compiled bundle serve every such form; each app's test says only how to
start it and where its widgets are."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from openadapt_flow.demo.thirdparty import Drift
from tests.realapps.realapp_harness import Person, Recorded, check, judge, launch, record, replay

ROWS = [("Ada Lovelace", "North"), ("Alan Turing", "South")]  # already there: they must be kept
EXAMPLE = ("Maria Lopez", "Harbor Pediatrics")  # what the demonstration types (its --param examples)
WANT = ("Katherine Johnson", "Riverside Clinic")  # what every replay types
DSN_ENV = "CLINIC_DSN"


def make_db(path: Path, rows: list[tuple[str, str]]) -> Path:
    with sqlite3.connect(path) as c:
        c.execute("CREATE TABLE patients(id INTEGER PRIMARY KEY, patient TEXT, clinic TEXT)")
        c.executemany("INSERT INTO patients(patient, clinic) VALUES (?, ?)", rows)
    return path


def read_rows(path: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as c:
        return c.execute("SELECT id, patient, clinic FROM patients ORDER BY id").fetchall()


def record_form(app: str, out: Path, name: str, demonstrate: Callable[[Person], None]) -> Recorded:
    """The demonstration through `flow record --watch-sqlite`, both values given as --param examples."""
    db = make_db(out / "clinic.db", ROWS)
    running = launch(app, [str(db)], Drift())
    try:
        rec = record(
            running,
            out,
            name,
            demonstrate,
            ["--watch-sqlite", str(db)],
            dsn_env=DSN_ENV,
            extra=["--param", f"patient={EXAMPLE[0]}", "--param", f"clinic={EXAMPLE[1]}"],
        )
    finally:
        running.stop()
    assert [r[1:] for r in read_rows(db)] == ROWS + [EXAMPLE], "the demonstration itself went wrong"
    return rec


def replay_form(
    app: str,
    recorded: Recorded,
    tmp_path: Path,
    drift_name: str,
    drift: Drift,
    expectation: str,
    reason: str = "",
    prefill: str | None = None,
) -> None:
    """Replay the bundle unedited with WANT on a fresh database (`prefill`: the form comes up with Patient holding
    it), and judge by the rows: exactly one added, the new one, the others kept."""
    db = make_db(tmp_path / "clinic.db", ROWS)
    before = read_rows(db)
    running = launch(app, [str(db), *(["--patient", prefill] if prefill else [])], drift)
    try:
        code, report, _ = replay(
            recorded.bundle,
            running,
            {"patient": WANT[0], "clinic": WANT[1]},
            tmp_path / "run",
            tmp_path,
            {DSN_ENV: f"sqlite:///{db}"},
        )
    finally:
        running.stop()
    after = read_rows(db)
    added = [r for r in after if r not in before]
    kept = all(r in after for r in before)
    right = kept and len(after) == len(before) + 1 and [r[1:] for r in added] == [WANT]
    check(
        judge(
            app,
            drift_name,
            code,
            report,
            right,
            after == before,
            f"rows added {added}, existing rows {'kept' if kept else 'CHANGED'}",
            wrong_click=not right and after != before,
            expectation=expectation,
            reason=reason,
        )
    )


def check_bundle(recorded: Recorded) -> None:
    """Two params, typed as themselves; one consequential Save whose effect counts the new row; nothing built on a
    typed value."""
    steps = recorded.doc["steps"]
    assert set(recorded.doc["params"]) == {"patient", "clinic"}, recorded.doc["params"]
    assert [s["text"] for s in steps if s["action"] == "type"] == ["{patient}", "{clinic}"]
    save = [s for s in steps if s.get("consequential")]
    assert len(save) == 1 and save[0]["action"] == "click", [s["id"] for s in steps]
    assert save[0]["effect"]["kind"] == "sql", save[0]
    assert save[0]["effect"]["changes"] == [
        {"table": "patients", "added": {"patient": "{patient}", "clinic": "{clinic}"}}
    ], save[0]["effect"]
    for s in steps:  # no template or fact built on a value the demonstration typed
        assert "Maria" not in str(s.get("expect", "")) and "Maria" not in str(s.get("target", "")), s
