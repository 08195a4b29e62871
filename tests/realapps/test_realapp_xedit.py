"""xedit (Athena/Xaw): a line typed at the end of a document opened from a path and saved with the Save button,
demonstrated once through `flow record --watch-file PATH --param patient=...`, replayed unedited with another
patient and under drift. The system of record is the saved file, read from disk after the app is stopped.

Xaw takes its look from X resources, so the drifts are resources merged into the private Xvnc's RESOURCE_MANAGER
(`xrdb -merge`, the AppSpec's `prepare` hook) before xedit starts: dark is `*background`/`*foreground`, scale 1.25
is a core font about 1.25x the default one (only the misc fixed fonts of xfonts-base are installed).
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

# no backup file beside the document, no tags lookup message, and the hint line never rotates under a replay
XEDIT_RESOURCES = "Xedit*enableBackups: False\nXedit*loadTags: False\nXedit*hintsInterval: 0\n"
# the default XtDefaultFont here is misc-fixed bold 7x13; 9x15bold is the same face about 1.25x (9/7 wide, 15/13 tall)
SCALED_FONT = "-misc-fixed-bold-r-normal--15-140-75-75-c-90-iso8859-1"


def _prepare(home: Path, env: dict[str, str], drift: Drift) -> None:
    resources = XEDIT_RESOURCES
    if drift.dark:
        resources += "*background: #202020\n*foreground: #e0e0e0\n*borderColor: #606060\n"
    if drift.scale != 1.0:
        resources += f"*font: {SCALED_FONT}\n"
    subprocess.run(["xrdb", "-merge"], input=resources, env=env, text=True, check=True, timeout=10)


thirdparty.register(AppSpec("xedit", ("xedit",), "xedit", "xaw", lambda home, config, drift: None, prepare=_prepare))

EDITOR = Editor("xedit")
# places in the recorded layout (window 590x440 at 0,0 of a 1024x768 screen)
QUIT, SAVE, LOAD = (18, 10), (55, 10), (92, 10)
MESSAGES = (200, 65)  # the message pane under the hint line
BELOW_TEXT = (300, 300)  # the empty part of the edit pane: a click there puts the caret on the last line


def demonstrate(p: Person) -> None:
    p.click(*BELOW_TEXT, via=(MESSAGES,))  # the pointer crosses the message pane on its way down
    p.type("Patient: Maria Lopz\bez")  # a typo fixed with BackSpace: Patient: Maria Lopez
    p.click(*SAVE, via=(LOAD, QUIT))  # up to the buttons, overshooting past Save to Load, back over Quit
    p.travel(450, 330)  # and back down over the page


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Recorded:
    return record_editor(tmp_path_factory, EDITOR, "patient-line", demonstrate, ["--param", f"patient={EXAMPLE}"])


def test_xedit_recording_makes_the_save_click_consequential(recorded):
    """The typed line is `Patient: {patient}` and the click on Save is the one consequential step, its effect a
    `file` effect that the line is there."""
    assert the_save(recorded)["action"] == "click"


def test_xedit_replays_unedited_with_another_patient(recorded, tmp_path):
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
def test_xedit_replay_under_drift(recorded, tmp_path, drift_name, drift, expectation, reason):
    run_editor_case(EDITOR, recorded, tmp_path, drift_name, drift, expectation, reason)


@pytest.mark.corpus_full
def test_xedit_dirty_start_keeps_the_text_already_there(recorded, tmp_path):
    run_editor_case(
        EDITOR, recorded, tmp_path, "dirty start (text already in the doc)", Drift(), "complete", dirty=True
    )
