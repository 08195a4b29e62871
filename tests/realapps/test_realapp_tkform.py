"""A Tk form we wrote (apps/tkform): Patient and Clinic typed into labelled entries and saved with the Save button,
demonstrated once through `flow record --watch-sqlite`, replayed unedited with another patient and under drift. The
system of record is the SQLite file the form writes, read with sqlite3 after the app is stopped.

Tk's own drift: the dark look is an option database the app reads (--options apps/tkform/dark.options), the scale
is `tk scaling` (--scaling), which grows the fonts and the window (both sized in points).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from openadapt_flow.demo.thirdparty import AppSpec, Drift, register
from tests.realapps.patient_form import check_bundle, record_form, replay_form
from tests.realapps.realapp_harness import Person, Recorded

pytestmark = pytest.mark.timeout(300)

APP_DIR = Path(__file__).resolve().parent / "apps" / "tkform"


def _tk_drift(home: Path, drift: Drift) -> list[str]:
    args = ["--options", str(APP_DIR / "dark.options")] if drift.dark else []
    return args + (["--scaling", f"{drift.scale:g}"] if drift.scale != 1.0 else [])


# the tests' own interpreter: it has a working Tk
register(
    AppSpec(
        "tkform",
        (sys.executable, str(APP_DIR / "tkform.py")),
        "tkform",
        "tk",
        lambda home, config, drift: None,
        drift_args=_tk_drift,
    )
)

# places in the recorded layout (window 439x159 at 0,0 of a 1024x768 screen)
PATIENT, CLINIC, SAVE = (130, 24), (150, 55), (381, 94)
PATIENT_LABEL, CLINIC_LABEL = (37, 24), (32, 55)


def demonstrate(p: Person) -> None:
    p.click(*PATIENT, via=(SAVE, CLINIC_LABEL))  # up from the button, across the Clinic label
    p.type("Maria Lpoez\b\b\b\bopez")  # a typo fixed with BackSpace: Maria Lopez
    p.click(*CLINIC, via=((300, 130), PATIENT_LABEL))  # wanders below the form and past the other label
    p.type("Harbor Pediatrics")
    p.click(*SAVE, via=((250, 94), (330, 40)))  # hovers the clinic entry on the way to Save
    p.travel(700, 400)  # and away


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Recorded:
    return record_form("tkform", tmp_path_factory.mktemp("tkform-recording"), "tk-patient-intake", demonstrate)


def run_case(
    recorded: Recorded,
    tmp_path: Path,
    drift_name: str,
    drift: Drift,
    expectation: str,
    reason: str = "",
    prefill: str | None = None,
) -> None:
    replay_form("tkform", recorded, tmp_path, drift_name, drift, expectation, reason, prefill)


def test_tkform_recording_types_both_params_and_saves_once(recorded):
    check_bundle(recorded)


def test_tkform_replays_unedited_with_another_patient(recorded, tmp_path):
    run_case(recorded, tmp_path, "other values", Drift(), "complete")


@pytest.mark.corpus_full
@pytest.mark.parametrize(
    "drift_name,drift",
    [
        ("window moved", Drift(position=(180, 140))),
        ("dark theme", Drift(dark=True)),
        ("scale 1.25", Drift(scale=1.25)),
    ],
)
def test_tkform_replay_under_drift(recorded, tmp_path, drift_name, drift):
    run_case(recorded, tmp_path, drift_name, drift, "complete")


@pytest.mark.corpus_full
def test_tkform_dirty_start_replaces_the_prefilled_patient(recorded, tmp_path):
    run_case(recorded, tmp_path, "dirty start (Patient prefilled)", Drift(), "complete", prefill="John Doe")
