"""A Tk form we wrote (apps/tkform): Patient and Clinic typed into labelled entries and saved with the Save button,
demonstrated once through `flow record --watch-sqlite`, replayed unedited with another patient and under drift. The
system of record is the SQLite file the form writes, read with sqlite3 after the app is stopped.

Tk's own drift: the dark look is an option database the app reads (--options apps/tkform/dark.options), the scale
is `tk scaling` (--scaling), which grows the fonts and the window (both sized in points).
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import pytest

from openadapt_flow.demo.thirdparty import AppSpec, Drift, register
from tests.realapps.realapp_harness import Person, Recorded, check, judge, launch, record, replay

pytestmark = pytest.mark.timeout(300)

APP_DIR = Path(__file__).resolve().parent / "apps" / "tkform"


def _tk_drift(home: Path, drift: Drift) -> list[str]:
    args = ["--options", str(APP_DIR / "dark.options")] if drift.dark else []
    return args + (["--scaling", f"{drift.scale:g}"] if drift.scale != 1.0 else [])


# the tests' own interpreter: it has a working Tk
register(AppSpec("tkform", (sys.executable, str(APP_DIR / "tkform.py")), "tkform", "tk",
                 lambda home, config, drift: None, drift_args=_tk_drift))

ROWS = [("Ada Lovelace", "North"), ("Alan Turing", "South")]
EXAMPLE = ("Maria Lopez", "Harbor Pediatrics")
# places in the recorded layout (window 439x159 at 0,0 of a 1024x768 screen)
PATIENT, CLINIC, SAVE = (130, 24), (150, 55), (381, 94)
PATIENT_LABEL, CLINIC_LABEL = (37, 24), (32, 55)


def make_db(path: Path, rows: list[tuple[str, str]]) -> Path:
    with sqlite3.connect(path) as c:
        c.execute("CREATE TABLE patients(id INTEGER PRIMARY KEY, patient TEXT, clinic TEXT)")
        c.executemany("INSERT INTO patients(patient, clinic) VALUES (?, ?)", rows)
    return path


def read_rows(path: Path) -> list[tuple]:
    with sqlite3.connect(path) as c:
        return c.execute("SELECT id, patient, clinic FROM patients ORDER BY id").fetchall()


def demonstrate(p: Person) -> None:
    p.click(*PATIENT, via=(SAVE, CLINIC_LABEL))  # up from the button, across the Clinic label
    p.type("Maria Lpoez\b\b\b\bopez")  # a typo fixed with BackSpace: Maria Lopez
    p.click(*CLINIC, via=((300, 130), PATIENT_LABEL))  # wanders below the form and past the other label
    p.type("Harbor Pediatrics")
    p.click(*SAVE, via=((250, 94), (330, 40)))  # hovers the clinic entry on the way to Save
    p.travel(700, 400)  # and away


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Recorded:
    out = tmp_path_factory.mktemp("tkform-recording")  # kept: pytest keeps the last sessions' folders
    db = make_db(out / "clinic.db", ROWS)
    app = launch("tkform", [str(db)], Drift())
    try:
        rec = record(app, out, "tk-patient-intake", demonstrate, ["--watch-sqlite", str(db)], dsn_env="CLINIC_DSN",
                     extra=["--param", f"patient={EXAMPLE[0]}", "--param", f"clinic={EXAMPLE[1]}"])
    finally:
        app.stop()
    assert [r[1:] for r in read_rows(db)] == ROWS + [EXAMPLE], "the demonstration itself went wrong"
    return rec


def run_case(recorded: Recorded, tmp_path: Path, drift_name: str, drift: Drift, expectation: str, reason: str = "",
             prefill: str | None = None) -> None:
    db = make_db(tmp_path / "clinic.db", ROWS)
    before = read_rows(db)
    want = ("Katherine Johnson", "Riverside Clinic")
    app = launch("tkform", [str(db), *(["--patient", prefill] if prefill else [])], drift)
    try:
        code, report, out = replay(recorded.bundle, app, {"patient": want[0], "clinic": want[1]}, tmp_path / "run",
                                   tmp_path, {"CLINIC_DSN": f"sqlite:///{db}"})
    finally:
        app.stop()
    after = read_rows(db)
    added = [r for r in after if r not in before]
    kept = all(r in after for r in before)
    right = kept and len(after) == len(before) + 1 and [r[1:] for r in added] == [want]
    result = judge("tkform", drift_name, code, report, right, after == before,
                   f"rows added {added}, existing rows {'kept' if kept else 'CHANGED'}",
                   wrong_click=not right and after != before, expectation=expectation, reason=reason)
    check(result)


def test_tkform_recording_types_both_params_and_saves_once(recorded):
    steps = recorded.doc["steps"]
    assert set(recorded.doc["params"]) == {"patient", "clinic"}, recorded.doc["params"]
    assert [s["text"] for s in steps if s["action"] == "type"] == ["{patient}", "{clinic}"]
    save = [s for s in steps if s.get("consequential")]
    assert len(save) == 1 and save[0]["action"] == "click", [s["id"] for s in steps]
    assert save[0]["effect"]["kind"] == "sql", save[0]
    assert save[0]["effect"]["query"] == ('SELECT count(*) FROM "patients" WHERE "patient" = :patient '
                                          'AND "clinic" = :clinic'), save[0]["effect"]
    for s in steps:  # no template or fact built on a value the demonstration typed
        assert "Maria" not in str(s.get("expect", "")) and "Maria" not in str(s.get("target", "")), s


def test_tkform_replays_unedited_with_another_patient(recorded, tmp_path):
    run_case(recorded, tmp_path, "other values", Drift(), "complete")


@pytest.mark.corpus_full
@pytest.mark.parametrize("drift_name,drift", [
    ("window moved", Drift(position=(180, 140))),
    ("dark theme", Drift(dark=True)),
    ("scale 1.25", Drift(scale=1.25)),
])
def test_tkform_replay_under_drift(recorded, tmp_path, drift_name, drift):
    run_case(recorded, tmp_path, drift_name, drift, "complete")


@pytest.mark.corpus_full
def test_tkform_dirty_start_replaces_the_prefilled_patient(recorded, tmp_path):
    run_case(recorded, tmp_path, "dirty start (Patient prefilled)", Drift(), "complete", prefill="John Doe")
