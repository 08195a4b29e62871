"""Mousepad (GTK): a line typed into a document opened from a path and saved with ctrl+s, demonstrated once through
`flow record --watch-file PATH`, replayed unedited with another line and under drift. The system of record is the
saved file, read from disk after the app is stopped. It is the one editor recorded without `--param`: the typed line
becomes a param of its own, named by the compiler.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from openadapt_flow.demo.thirdparty import Drift
from tests.realapps.editor_case import DOC, Editor, record_editor, run_editor_case
from tests.realapps.realapp_harness import Person, Recorded

pytestmark = pytest.mark.timeout(300)

# no --param: the typed line is one param of its own, whatever the compiler names it
EDITOR = Editor("mousepad", line=lambda value: value, param=None, replayed="Call the bank")
# places in the recorded layout (window 600x400 at 0,0 of a 1024x768 screen)
FILE_MENU, SEARCH_MENU, DOCUMENT_MENU = (19, 12), (110, 12), (229, 12)
BELOW_TEXT = (300, 250)  # the empty part of the page: a click there puts the caret on the last line


def demonstrate(p: Person) -> None:
    p.click(*BELOW_TEXT, via=(DOCUMENT_MENU, SEARCH_MENU))  # the pointer crosses the menu bar on its way down
    p.type("Buy mlik\b\b\bilk")  # a typo fixed with BackSpace: Buy milk
    p.travel(450, 330, via=(FILE_MENU,))  # glances at the File menu, comes back down
    p.press("ctrl", "s")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Recorded:
    rec = record_editor(tmp_path_factory, EDITOR, "shopping-list", demonstrate, [])
    saved = (rec.recording.parent / "list.txt").read_text()
    assert saved == DOC + "Buy milk", f"the demonstration itself went wrong: {saved!r}"
    return rec


def test_mousepad_recording_makes_the_save_consequential(recorded):
    """With --watch-file the ctrl+s step is consequential, its effect a `file` effect that the line is there."""
    save = next(s for s in recorded.doc["steps"] if s.get("keys") == ["ctrl", "s"])
    param = next(iter(recorded.doc["params"]))
    assert save.get("consequential") is True, save
    assert save["effect"]["kind"] == "file" and "{" + param + "}" in str(save["effect"]), save


def test_mousepad_replays_unedited_with_another_line(recorded, tmp_path):
    run_editor_case(EDITOR, recorded, tmp_path, "other values", Drift(), "complete")


@pytest.mark.corpus_full
@pytest.mark.parametrize(
    "drift_name,drift,expectation,reason",
    [
        ("window moved", Drift(position=(150, 120)), "complete", ""),
        ("screen 1920x1080, natural size", Drift(screen=(1920, 1080)), "complete", ""),
        ("dark theme", Drift(dark=True), "complete", ""),
        (
            "scale 1.25",
            Drift(scale=1.25),
            "complete_or_halt",
            "text is 25% bigger; the empty page below the text is "
            "still there, but a halt is the safe answer if the recorded page cannot be found",
        ),
    ],
)
def test_mousepad_replay_under_drift(recorded, tmp_path, drift_name, drift, expectation, reason):
    run_editor_case(EDITOR, recorded, tmp_path, drift_name, drift, expectation, reason)


@pytest.mark.corpus_full
def test_mousepad_dirty_start_keeps_the_text_already_there(recorded, tmp_path):
    run_editor_case(
        EDITOR,
        recorded,
        tmp_path,
        "dirty start (text already in the doc)",
        Drift(),
        "complete_or_halt",
        "the document has a line the demonstration did not see; a halt is safe, losing 'Eggs' is not",
        dirty=True,
    )
