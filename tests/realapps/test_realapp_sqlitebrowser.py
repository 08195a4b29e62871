"""DB Browser for SQLite (Qt): a patient entered through Browse Data (New Record, type into the table's cells,
Enter, ctrl+s Write Changes) demonstrated once through `flow record --watch-sqlite`, replayed unedited with another
patient and under drift. The system of record is the SQLite file, read with sqlite3 after the app is stopped
(uncommitted edits die with it, so a halt before Write Changes leaves the file as it was).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from openadapt_flow.demo.thirdparty import Drift, RunningApp
from tests.realapps.realapp_harness import Person, Recorded, check, judge, launch, record, replay

pytestmark = pytest.mark.timeout(300)

ROWS = [("Ada Lovelace", "North"), ("Alan Turing", "South")]
EXTRA = ("Edsger Dijkstra", "West")  # the dirty start's row: the new record lands one row lower
# places in the recorded layout (window 1000x700 at 0,0 of a 1024x768 screen, docks closed)
STRUCTURE, BROWSE, PRAGMAS = (73, 76), (194, 76), (296, 76)
TABLE_COMBO, PRINT, NEW_RECORD = (120, 111), (357, 111), (395, 110)
NAME_X, CLINIC_X, ROW_Y, ROW_H = 97, 166, 196, 27  # cell centres: row n (1-based) at ROW_Y + (n-1)*ROW_H


def make_db(path: Path, rows: list[tuple[str, str]]) -> Path:
    with sqlite3.connect(path) as c:
        c.execute("CREATE TABLE patients(id INTEGER PRIMARY KEY, name TEXT, clinic TEXT)")
        c.executemany("INSERT INTO patients(name, clinic) VALUES (?, ?)", rows)
    return path


def read_rows(path: Path) -> list[tuple]:
    with sqlite3.connect(path) as c:
        return c.execute("SELECT id, name, clinic FROM patients ORDER BY id").fetchall()


def demonstrate(p: Person) -> None:
    p.click(*BROWSE, via=(STRUCTURE, PRAGMAS))  # hovers the other tabs on its way
    p.click(*NEW_RECORD, via=(TABLE_COMBO, PRINT))
    row = ROW_Y + len(ROWS) * ROW_H  # the new record's row
    p.click(NAME_X, row, via=((NAME_X + 40, row + 60),))  # comes from below, past the cell
    p.type("Grace Hoppre\b\ber")  # a typo fixed with BackSpace: Grace Hopper
    p.press("enter")
    p.click(CLINIC_X, row, via=((CLINIC_X + 50, row - 30),))
    p.type("East")
    p.press("enter")
    p.travel(600, 400)
    p.press("ctrl", "s")  # Write Changes


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Recorded:
    out = tmp_path_factory.mktemp("sqlitebrowser-recording")  # kept: pytest keeps the last sessions' folders
    db = make_db(out / "clinic.db", ROWS)
    app = launch("sqlitebrowser", [str(db)], Drift())
    try:
        rec = record(app, out, "patient-entry", demonstrate, ["--watch-sqlite", str(db)], dsn_env="CLINIC_DSN")
    finally:
        app.stop()
    assert [r[1:] for r in read_rows(db)] == ROWS + [("Grace Hopper", "East")], "the demonstration itself went wrong"
    return rec


def make_dirty(app: RunningApp) -> None:
    """Browse Data already open with an existing row selected (someone was looking at a patient)."""
    p = Person(app.xvnc.port)
    try:
        x, y, _, _ = app.geometry
        p.click(x + BROWSE[0], y + BROWSE[1])
        p.click(x + NAME_X, y + ROW_Y)
    finally:
        p.close()


def run_case(
    recorded: Recorded,
    tmp_path: Path,
    drift_name: str,
    drift: Drift,
    expectation: str,
    reason: str = "",
    dirty: bool = False,
) -> None:
    params = recorded.doc["params"]
    assert set(params) == {"name", "clinic"}, params
    db = make_db(tmp_path / "clinic.db", ROWS + ([EXTRA] if dirty else []))
    before = read_rows(db)
    want = ("Katherine Johnson", "West")
    app = launch("sqlitebrowser", [str(db)], drift)
    try:
        if dirty:
            make_dirty(app)
        code, report, out = replay(
            recorded.bundle,
            app,
            {"name": want[0], "clinic": want[1]},
            tmp_path / "run",
            tmp_path,
            {"CLINIC_DSN": f"sqlite:///{db}"},
        )
    finally:
        app.stop()
    after = read_rows(db)
    added = [r for r in after if r not in before]
    kept = all(r in after for r in before)
    right = kept and len(after) == len(before) + 1 and [r[1:] for r in added] == [want]
    result = judge(
        "sqlitebrowser",
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
    check(result)


def test_sqlitebrowser_recording_is_one_consequential_row_entry(recorded):
    steps = recorded.doc["steps"]
    save = [s for s in steps if s.get("consequential")]
    assert len(save) == 1 and save[0].get("keys") == ["ctrl", "s"], [s["id"] for s in steps]
    assert save[0]["effect"]["changes"] == [{"table": "patients", "added": {"name": "{name}", "clinic": "{clinic}"}}]
    types = [s for s in steps if s["action"] == "type"]
    assert [s["text"] for s in types] == ["{name}", "{clinic}"]
    for s in steps:  # no template or fact built on a value the demonstration typed (finding 4)
        assert "Grace" not in str(s.get("expect", "")) and "Grace" not in str(
            s["target"].get("text", "") if "target" in s else ""
        ), s


def test_sqlitebrowser_replays_unedited_with_another_patient(recorded, tmp_path):
    run_case(recorded, tmp_path, "other values", Drift(), "complete")


# DB Browser sizes its table's columns from the data and the window as they come up; under load the launcher's
# resize can land before or after that, so a launch's name column is sometimes narrower than the recording's. The
# clinic cell's template then also matches a NULL cell of the name column, and its column-header landmark is not
# where the recording had it: the replay halts as ambiguous there (before Write Changes: no wrong row). Measured:
# moved, natural-size and dark completed in most runs and halted so in the others (docs/record.md).
COLUMN_RACE = (
    "the table's column widths vary between launches; when the name column comes up narrower than "
    "recorded the clinic cell is ambiguous with a NULL cell, and halting there is the safe answer"
)


@pytest.mark.corpus_full
@pytest.mark.parametrize(
    "drift_name,drift,expectation,reason",
    [
        ("window moved", Drift(position=(20, 50)), "complete_or_halt", COLUMN_RACE),
        ("screen 1920x1080, natural size", Drift(screen=(1920, 1080)), "complete_or_halt", COLUMN_RACE),
        ("dark theme", Drift(dark=True), "complete_or_halt", COLUMN_RACE),
        # Qt draws the New Record icon anew at 20 px, crisp: found at 1.25 (vision/content.py)
        ("scale 1.25", Drift(scale=1.25), "complete", ""),
    ],
)
def test_sqlitebrowser_replay_under_drift(recorded, tmp_path, drift_name, drift, expectation, reason):
    run_case(recorded, tmp_path, drift_name, drift, expectation, reason)


@pytest.mark.corpus_full
def test_sqlitebrowser_dirty_start_never_writes_into_another_row(recorded, tmp_path):
    run_case(
        recorded,
        tmp_path,
        "dirty start (extra row, row selected)",
        Drift(),
        "complete_or_halt",
        "the new record's row is one lower than recorded; a halt is safe, typing into an existing row is not",
        dirty=True,
    )
