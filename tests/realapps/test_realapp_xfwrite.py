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
from tests.realapps.realapp_harness import Person, Recorded, check, judge, launch, record, replay

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

DOC = "Shopping list\n"
DIRTY_DOC = "Shopping list\nEggs\n"  # someone added a line since: the empty last line is one lower
EXAMPLE = "Maria Lopez"
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
    out = tmp_path_factory.mktemp("xfwrite-recording")  # kept: pytest keeps the last sessions' folders
    doc = out / "list.txt"
    doc.write_text(DOC)
    app = launch("xfwrite", [str(doc)], Drift())
    try:
        rec = record(
            app, out, "patient-line", demonstrate, ["--watch-file", str(doc)], extra=["--param", f"patient={EXAMPLE}"]
        )
    finally:
        app.stop()
    assert doc.read_text() == DOC + f"Patient: {EXAMPLE}", f"the demonstration went wrong: {doc.read_text()!r}"
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
    assert list(recorded.doc["params"]) == ["patient"], recorded.doc["params"]
    # the same document the demonstration saved (a file effect names its path), as it was, or dirty
    doc = recorded.recording.parent / "list.txt"
    start = DIRTY_DOC if dirty else DOC
    doc.write_text(start)
    patient = "Rosa Diaz"
    app = launch("xfwrite", [str(doc)], drift)
    try:
        code, report, out = replay(recorded.bundle, app, {"patient": patient}, tmp_path / "run", tmp_path)
    finally:
        app.stop()
    saved = doc.read_text()
    right = saved == start + f"Patient: {patient}"  # FOX saves the text as it is: no line break added
    result = judge(
        "xfwrite",
        drift_name,
        code,
        report,
        right,
        saved == start,
        f"saved file {saved!r}",
        wrong_click=not right and saved != start,
        expectation=expectation,
        reason=reason,
    )
    check(result)


def test_xfwrite_recording_makes_the_save_consequential(recorded):
    """The typed line is `Patient: {patient}` and ctrl+s is the one consequential step, the last, its effect a
    `file` effect that the line is there."""
    steps = recorded.doc["steps"]
    types = [s for s in steps if s["action"] == "type"]
    assert [s["text"] for s in types] == ["Patient: {patient}"], [s.get("text") for s in types]
    save = [s for s in steps if s.get("consequential")]
    assert len(save) == 1 and save[0].get("keys") == ["ctrl", "s"] and save[0] is steps[-1], [s["id"] for s in steps]
    assert save[0]["effect"]["kind"] == "file" and "{patient}" in str(save[0]["effect"]), save[0]
    for s in steps:  # no template or fact built on the typed example
        assert EXAMPLE not in str(s.get("expect", "")) and EXAMPLE not in str(s.get("target", "")), s


def test_xfwrite_replays_unedited_with_another_patient(recorded, tmp_path):
    run_case(recorded, tmp_path, "other values", Drift(), "complete")


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
    run_case(recorded, tmp_path, drift_name, drift, expectation, reason)


@pytest.mark.corpus_full
def test_xfwrite_dirty_start_keeps_the_text_already_there(recorded, tmp_path):
    run_case(recorded, tmp_path, "dirty start (text already in the doc)", Drift(), "complete", dirty=True)
