"""A Qt 6 referral form (PyQt6 under Debian's python3, tests/realapps/apps/qt6form): a patient typed (a typo fixed
with BackSpace) and a clinic, saved with the Save button, demonstrated once through `flow record --watch-sqlite`,
replayed unedited with other values and under drift. The system of record is the SQLite file, read after the app
is stopped.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from openadapt_flow.demo.thirdparty import AppSpec, Drift, register
from tests.realapps.realapp_harness import Person, Recorded, check, judge, launch, record, replay

pytestmark = pytest.mark.timeout(300)

FORM = Path(__file__).parent / "apps" / "qt6form" / "referral_form.py"

register(
    AppSpec(
        "qt6form",
        ("/usr/bin/python3", str(FORM)),
        "referral-qt6",
        "qt",
        lambda home, config, drift: None,
        # Fusion with a dark palette; the scale is QT_SCALE_FACTOR, which start_app sets for a scale drift
        drift_args=lambda home, drift: ["--dark"] if drift.dark else [],
    )
)

DSN_ENV = "REFERRAL_DSN"
EXAMPLE = {"patient": "Maria Lopez", "clinic": "Harbor Pediatrics"}
LEFTOVER = "Old Name"  # the dirty start: an earlier entry's patient still in the field
# places in the recorded layout (window 380x170 at 0,0 of a 1024x768 screen, scale 1)
HEADING, PATIENT, CLINIC, SAVE = (47, 17), (150, 41), (150, 69), (329, 147)


def make_db(path: Path) -> Path:
    with sqlite3.connect(path) as c:
        c.execute("CREATE TABLE referrals(id INTEGER PRIMARY KEY, patient TEXT, clinic TEXT)")
    return path


def read_rows(path: Path) -> list[tuple]:
    with sqlite3.connect(path) as c:
        return c.execute("SELECT patient, clinic FROM referrals ORDER BY id").fetchall()


def demonstrate(p: Person) -> None:
    p.travel(200, 110, via=(HEADING,))  # into the window first: it takes the focus, Patient shows its caret
    p.click(*PATIENT, via=(SAVE, (300, 69)))  # over Save and the Clinic field on the way up
    p.type("Maria Lpoez\b\b\b\bopez")  # a typo fixed with BackSpace: Maria Lopez
    p.click(*CLINIC, via=((250, 110),))
    p.type("Harbor Pediatrics")
    p.click(*SAVE, via=((200, 120),))
    p.travel(600, 400)  # and away


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Recorded:
    out = tmp_path_factory.mktemp("qt6form-recording")  # kept: pytest keeps the last sessions' folders
    db = make_db(out / "referrals.db")
    app = launch("qt6form", [str(db)], Drift())
    try:
        rec = record(
            app,
            out,
            "referral-qt6",
            demonstrate,
            ["--watch-sqlite", str(db)],
            dsn_env=DSN_ENV,
            extra=[a for k, v in EXAMPLE.items() for a in ("--param", f"{k}={v}")],
        )
    finally:
        app.stop()
    assert read_rows(db) == [(EXAMPLE["patient"], EXAMPLE["clinic"])], "the demonstration itself went wrong"
    return rec


def run_case(
    recorded: Recorded,
    tmp_path: Path,
    drift_name: str,
    drift: Drift,
    expectation: str,
    reason: str = "",
    dirty: bool = False,
) -> None:
    assert set(recorded.doc["params"]) == set(EXAMPLE), recorded.doc["params"]
    db = make_db(tmp_path / "referrals.db")
    want = ("Katherine Johnson", "Westside Clinic")
    app = launch("qt6form", [str(db), *(["--patient", LEFTOVER] if dirty else [])], drift)
    try:
        code, report, out = replay(
            recorded.bundle,
            app,
            {"patient": want[0], "clinic": want[1]},
            tmp_path / "run",
            tmp_path,
            {DSN_ENV: f"sqlite:///{db}"},
        )
    finally:
        app.stop()
    rows = read_rows(db)
    right = rows == [want]
    result = judge(
        "qt6form",
        drift_name,
        code,
        report,
        right,
        rows == [],
        f"rows {rows}",
        wrong_click=not right and rows != [],
        expectation=expectation,
        reason=reason,
    )
    check(result)


def test_qt6form_recording_saves_one_row_with_both_params(recorded):
    steps = recorded.doc["steps"]
    save = [s for s in steps if s.get("consequential")]
    assert len(save) == 1 and save[0]["action"] == "click", [s["id"] for s in steps]
    assert save[0]["effect"]["changes"] == [
        {"table": "referrals", "added": {"patient": "{patient}", "clinic": "{clinic}"}}
    ]
    assert [s["text"] for s in steps if s["action"] == "type"] == ["{patient}", "{clinic}"]
    for s in steps:  # no template or fact built on a value the demonstration typed
        assert "Maria" not in str(s.get("expect", "")) and "Maria" not in str(s.get("target", "")), s


def test_qt6form_replays_unedited_with_other_values(recorded, tmp_path):
    run_case(recorded, tmp_path, "other values", Drift(), "complete")


@pytest.mark.corpus_full
@pytest.mark.parametrize(
    "drift_name,drift",
    [
        ("window moved", Drift(position=(180, 140))),
        ("dark theme", Drift(dark=True)),  # Fusion with a dark QPalette
        ("scale 1.25", Drift(scale=1.25)),  # QT_SCALE_FACTOR: the window, its fonts and widgets 25% bigger
    ],
)
def test_qt6form_replay_under_drift(recorded, tmp_path, drift_name, drift):
    run_case(recorded, tmp_path, drift_name, drift, "complete")


@pytest.mark.corpus_full
def test_qt6form_dirty_start_replaces_the_leftover_patient(recorded, tmp_path):
    """Patient comes up holding an earlier entry's name: the replay's End, Shift+Home selects it and the new name
    replaces it, so the row is exactly the new one."""
    run_case(recorded, tmp_path, "dirty start (Patient prefilled)", Drift(), "complete", dirty=True)
