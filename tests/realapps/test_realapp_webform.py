"""A web form we wrote (apps/webform) in Chromium: Patient and Clinic typed into a page's labelled fields and saved
with its Save button, demonstrated once through `flow record --watch-sqlite`, replayed unedited with another patient
and under drift. The page is served by a small stdlib HTTP server whose POST adds the row; the system of record is
that SQLite file, read with sqlite3 after the app is stopped.

The app is a wrapper process that serves the page on a free loopback port and runs `chromium --app=` on it: a real
window on the launch's Xvnc (WM_CLASS instance "127.0.0.1", from the app's URL), a fresh profile in the private
HOME. Chromium's own drift: --force-dark-mode (the page follows prefers-color-scheme) and
--force-device-scale-factor=1.25 (the window grows with the page). The dirty start prefills Patient through the
page's query string.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from openadapt_flow.demo.thirdparty import AppSpec, Drift, register
from tests.realapps.patient_form import check_bundle, record_form, replay_form
from tests.realapps.realapp_harness import Person, Recorded

pytestmark = pytest.mark.timeout(300)

APP_DIR = Path(__file__).resolve().parent / "apps" / "webform"


def _configure(home: Path, config: Path, drift: Drift) -> None:
    # Chromium on X11 takes its caret blink from the GTK settings: a blinking caret keeps a screen from settling
    for gtk in ("gtk-3.0", "gtk-4.0"):
        (config / gtk).mkdir(parents=True, exist_ok=True)
        (config / gtk / "settings.ini").write_text("[Settings]\ngtk-cursor-blink=false\ngtk-enable-animations=false\n")


def _chromium_drift(home: Path, drift: Drift) -> list[str]:
    return (["--dark"] if drift.dark else []) + (["--scale", f"{drift.scale:g}"] if drift.scale != 1.0 else [])


register(
    AppSpec(
        "webform",
        (sys.executable, str(APP_DIR / "webform.py")),
        "127.0.0.1",
        "chromium",
        _configure,
        drift_args=_chromium_drift,
    )
)

# places in the recorded layout (window 640x400 at 0,0 of a 1024x768 screen)
HEADING, PATIENT_LABEL, CLINIC_LABEL = (107, 36), (54, 80), (48, 122)
PATIENT, CLINIC, SAVE = (230, 80), (250, 122), (390, 165)


def demonstrate(p: Person) -> None:
    p.click(*PATIENT, via=(HEADING, CLINIC_LABEL))  # down past the heading and the Clinic label, up into the field
    p.type("Maria Lpoez\b\b\b\bopez")  # a typo fixed with BackSpace: Maria Lopez
    p.click(*CLINIC, via=((300, 260), SAVE))  # wanders below the form, hovers Save, comes up to Clinic
    p.type("Harbor Pediatrics")
    p.click(*SAVE, via=((520, 200), (430, 120)))  # comes round from the right, over the clinic field
    p.travel(800, 600)  # and away, off the window


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Recorded:
    return record_form("webform", tmp_path_factory.mktemp("webform-recording"), "web-patient-intake", demonstrate)


def run_case(
    recorded: Recorded,
    tmp_path: Path,
    drift_name: str,
    drift: Drift,
    expectation: str,
    reason: str = "",
    prefill: str | None = None,
) -> None:
    replay_form("webform", recorded, tmp_path, drift_name, drift, expectation, reason, prefill)


def test_webform_recording_types_both_params_and_saves_once(recorded):
    check_bundle(recorded)


def test_webform_replays_unedited_with_another_patient(recorded, tmp_path):
    run_case(recorded, tmp_path, "other values", Drift(), "complete")


@pytest.mark.corpus_full
@pytest.mark.parametrize(
    "drift_name,drift",
    [
        ("window moved", Drift(position=(200, 150))),
        ("dark theme", Drift(dark=True)),
        ("scale 1.25", Drift(scale=1.25)),
    ],
)
def test_webform_replay_under_drift(recorded, tmp_path, drift_name, drift):
    run_case(recorded, tmp_path, drift_name, drift, "complete")


@pytest.mark.corpus_full
def test_webform_dirty_start_replaces_the_prefilled_patient(recorded, tmp_path):
    run_case(recorded, tmp_path, "dirty start (Patient prefilled)", Drift(), "complete", prefill="John Doe")
