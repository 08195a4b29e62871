"""NEdit (Motif): a line typed at the end of a document opened from a path and saved with File > Save, demonstrated
once through `flow record --watch-file PATH --param patient=...`, replayed unedited with another patient and under
drift. The system of record is the saved file, read from disk after the app is stopped.

NEdit keeps its preferences in $HOME/.nedit/nedit.rc (written into the private HOME: no incremental backup, no
backup copy on save) and takes the rest of its look from X resources, merged into the private Xvnc's
RESOURCE_MANAGER (`xrdb -merge`, the AppSpec's `prepare` hook) before it starts: dark is Motif's
`*background`/`*foreground` plus NEdit's own text colours, scale 1.25 is `Xft.dpi` 120 for the Xft menus and a
core text font about 1.25x the default one (only the misc fixed fonts of xfonts-base are installed).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from openadapt_flow.demo import thirdparty
from openadapt_flow.demo.thirdparty import AppSpec, Drift
from tests.realapps.editor_case import EXAMPLE, Editor, record_editor, run_editor_case, the_save
from tests.realapps.realapp_harness import Person, Recorded

pytestmark = pytest.mark.timeout(300)

NEDIT_RC = "nedit.fileVersion: 5.7\nnedit.incrementalBackup: False\nnedit.makeBackupCopy: False\n"
# a blinking caret keeps a screen from ever settling; Xft's dpi is fixed so a stray default cannot differ
NEDIT_RESOURCES = "nedit*text.blinkRate: 0\n"
DARK = (
    "*background: #202020\n*foreground: #e0e0e0\nnedit.textBgColor: #202020\nnedit.textFgColor: #e0e0e0\n"
    "nedit.cursorFgColor: #e0e0e0\nnedit.lineNoFgColor: #a0a0a0\n"
)
# the text font falls back to `fixed` (6x13) here; 8x16 is about 1.25x it both ways
SCALED = "nedit.textFont: -sony-fixed-medium-r-normal--16-120-100-100-c-80-iso8859-1\n"


def _configure(home: Path, config: Path, drift: Drift) -> None:
    (home / ".nedit").mkdir(parents=True, exist_ok=True)
    (home / ".nedit" / "nedit.rc").write_text(NEDIT_RC)


def _prepare(home: Path, env: dict[str, str], drift: Drift) -> None:
    resources = NEDIT_RESOURCES + f"Xft.dpi: {round(96 * drift.scale)}\n"
    if drift.dark:
        resources += DARK
    if drift.scale != 1.0:
        resources += SCALED
    subprocess.run(["xrdb", "-merge"], input=resources, env=env, text=True, check=True, timeout=10)


thirdparty.register(AppSpec("nedit", ("nedit",), "textShell", "motif", _configure, prepare=_prepare))

EDITOR = Editor("nedit", eol="\n")  # NEdit ends a saved file with a line break
# places in the recorded layout (window 507x349 at 0,0 of a 1024x768 screen)
FILE_MENU, EDIT_MENU, SEARCH_MENU = (21, 12), (59, 12), (108, 12)
CLOSE_ITEM, SAVE_ITEM = (26, 164), (25, 187)  # in the open File menu
BELOW_TEXT = (250, 250)  # the empty part of the page: a click there puts the caret on the last line


def demonstrate(p: Person) -> None:
    p.click(*BELOW_TEXT, via=(SEARCH_MENU, EDIT_MENU))  # the pointer crosses the menu bar on its way down
    p.type("Patient: Maria Lopz\bez")  # a typo fixed with BackSpace: Patient: Maria Lopez
    p.click(*FILE_MENU, via=((200, 120),))
    p.click(*SAVE_ITEM, via=(CLOSE_ITEM,))  # down the open menu, past Close
    p.travel(400, 300)  # and back over the page


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Recorded:
    return record_editor(tmp_path_factory, EDITOR, "patient-line", demonstrate, ["--param", f"patient={EXAMPLE}"])


def test_nedit_recording_makes_the_save_item_consequential(recorded):
    """The typed line is `Patient: {patient}` and the click on File > Save is the one consequential step, its
    effect a `file` effect that the line is there."""
    save = the_save(recorded)
    assert save["action"] == "click" and save is recorded.doc["steps"][-1], save


def test_nedit_replays_unedited_with_another_patient(recorded, tmp_path):
    run_editor_case(EDITOR, recorded, tmp_path, "other values", Drift(), "complete")


@pytest.mark.corpus_full
@pytest.mark.parametrize(
    "drift_name,drift,expectation,reason",
    [
        ("window moved", Drift(position=(150, 120)), "complete", ""),
        ("dark theme", Drift(dark=True), "complete", ""),
        ("scale 1.25", Drift(scale=1.25), "complete", ""),
    ],
)
def test_nedit_replay_under_drift(recorded, tmp_path, drift_name, drift, expectation, reason):
    run_editor_case(EDITOR, recorded, tmp_path, drift_name, drift, expectation, reason)


@pytest.mark.corpus_full
def test_nedit_dirty_start_keeps_the_text_already_there(recorded, tmp_path):
    run_editor_case(
        EDITOR, recorded, tmp_path, "dirty start (text already in the doc)", Drift(), "complete", dirty=True
    )
