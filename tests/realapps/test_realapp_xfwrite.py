"""Xfe's xfwrite (FOX 1.6): a line typed at the end of a document opened from a path and saved with ctrl+s,
demonstrated once through `flow record --watch-file PATH --param patient=...`, replayed unedited with another patient
and under drift. The system of record is the saved file, read from disk after the app is stopped.

FOX keeps its settings in a registry of ini files: the toolkit's own [SETTINGS] in $HOME/.config/xfe/xferc (shared
by the Xfe programs) and xfwrite's in $HOME/.config/xfe/xfwrc, both written into the private HOME. No first-run
dialog exists; the window's size is fixed and its place not remembered; the caret's blink period is set to
about 23 days (FOX has no "off"; a blinking caret keeps a screen from ever settling). Dark is FOX's own colour
settings (base, back, fore, selection, tips, menus) plus xfwrite's text colours; scale 1.25 is Xfe's HiDPI setting
`screenres` 120 (96 dpi is 1.0), which scales the fonts and the icons.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from openadapt_flow.demo import thirdparty
from openadapt_flow.demo.thirdparty import AppSpec, Drift
from tests.realapps.editor_case import EXAMPLE, Editor, record_editor, run_editor_case, the_save
from tests.realapps.realapp_harness import Person, Recorded

pytestmark = pytest.mark.timeout(300)

BLINK_MS = 2_000_000_000  # FOX's blinkspeed is a period in ms (an unsigned int): the caret never blinks in a test
DARK_SETTINGS = (
    "basecolor=#303030\nbordercolor=#000000\nbackcolor=#202020\nforecolor=#e0e0e0\nhilitecolor=#484848\n"
    "shadowcolor=#181818\nselforecolor=#ffffff\nselbackcolor=#3d5a80\ntipforecolor=#e0e0e0\n"
    "tipbackcolor=#404040\nselmenutextcolor=#ffffff\nselmenubackcolor=#3d5a80\n"
)
DARK_TEXT = (
    "textbackground=#202020\ntextforeground=#e0e0e0\ntextcursor=#e0e0e0\ntextnumberbackground=#202020\n"
    "textnumberforeground=#a0a0a0\ntextselbackground=#3d5a80\ntextselforeground=#ffffff\n"
)


def _configure(home: Path, config: Path, drift: Drift) -> None:
    settings = f"[SETTINGS]\nblinkspeed={BLINK_MS}\nscreenres={round(96 * drift.scale)}\n"
    settings += DARK_SETTINGS if drift.dark else ""
    # no line numbers, no remembered place, the default 800x600 written out so a stray config cannot differ
    options = "[OPTIONS]\nwidth=800\nheight=600\nsave_win_pos=0\nlinesnum=0\nwordwrap=0\nhidetoolbar=0\nhidestatus=0\n"
    options += DARK_TEXT if drift.dark else ""
    (config / "xfe").mkdir(parents=True, exist_ok=True)
    (config / "xfe" / "xferc").write_text(settings)
    (config / "xfe" / "xfwrc").write_text(options + settings)


thirdparty.register(AppSpec("xfwrite", ("xfwrite",), "xfw", "fox", _configure))

EDITOR = Editor("xfwrite")  # FOX saves the text as it is: no line break added
# places in the recorded layout (window 800x600 at 0,0 of a 1024x768 screen)
FILE_MENU, SEARCH_MENU, PREFERENCES_MENU = (21, 12), (167, 12), (251, 12)
BELOW_TEXT = (320, 300)  # the empty part of the page: a click there puts the caret on the last line


def demonstrate(p: Person) -> None:
    p.click(*BELOW_TEXT, via=(PREFERENCES_MENU, SEARCH_MENU))  # the pointer crosses the menu bar on its way down
    p.type("Patient: Maria Lopz\bez")  # a typo fixed with BackSpace: Patient: Maria Lopez
    p.travel(450, 330, via=(FILE_MENU,))  # glances at the File menu, comes back down
    p.press("ctrl", "s")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Recorded:
    return record_editor(tmp_path_factory, EDITOR, "patient-line", demonstrate, ["--param", f"patient={EXAMPLE}"])


def test_xfwrite_recording_makes_the_save_consequential(recorded):
    """The typed line is `Patient: {patient}` and ctrl+s is the one consequential step, the last, its effect a
    `file` effect that the line is there."""
    save = the_save(recorded)
    assert save.get("keys") == ["ctrl", "s"] and save is recorded.doc["steps"][-1], save


def test_xfwrite_replays_unedited_with_another_patient(recorded, tmp_path):
    run_editor_case(EDITOR, recorded, tmp_path, "other values", Drift(), "complete")


@pytest.mark.corpus_full
@pytest.mark.parametrize(
    "drift_name,drift,expectation,reason",
    [
        ("window moved", Drift(position=(150, 120)), "complete", ""),
        ("screen 1920x1080, natural size", Drift(screen=(1920, 1080)), "complete", ""),
        ("dark theme", Drift(dark=True), "complete", ""),
        ("scale 1.25", Drift(scale=1.25), "complete", ""),
    ],
)
def test_xfwrite_replay_under_drift(recorded, tmp_path, drift_name, drift, expectation, reason):
    run_editor_case(EDITOR, recorded, tmp_path, drift_name, drift, expectation, reason)


@pytest.mark.corpus_full
def test_xfwrite_dirty_start_keeps_the_text_already_there(recorded, tmp_path):
    run_editor_case(
        EDITOR, recorded, tmp_path, "dirty start (text already in the doc)", Drift(), "complete", dirty=True
    )
