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
from tests.realapps.realapp_harness import Person, Recorded, check, judge, launch, record, replay

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

DOC = "Shopping list\n"
DIRTY_DOC = "Shopping list\nEggs\n"  # someone added a line since: the empty last line is one lower
EXAMPLE = "Maria Lopez"
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
    out = tmp_path_factory.mktemp("nedit-recording")  # kept: pytest keeps the last sessions' folders
    doc = out / "list.txt"
    doc.write_text(DOC)
    app = launch("nedit", [str(doc)], Drift())
    try:
        rec = record(
            app, out, "patient-line", demonstrate, ["--watch-file", str(doc)], extra=["--param", f"patient={EXAMPLE}"]
        )
    finally:
        app.stop()
    assert doc.read_text() == DOC + f"Patient: {EXAMPLE}\n", f"the demonstration went wrong: {doc.read_text()!r}"
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
    app = launch("nedit", [str(doc)], drift)
    try:
        code, report, out = replay(recorded.bundle, app, {"patient": patient}, tmp_path / "run", tmp_path)
    finally:
        app.stop()
    saved = doc.read_text()
    right = saved == start + f"Patient: {patient}\n"  # NEdit ends a saved file with a line break
    result = judge(
        "nedit",
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


def test_nedit_recording_makes_the_save_item_consequential(recorded):
    """The typed line is `Patient: {patient}` and the click on File > Save is the one consequential step, its
    effect a `file` effect that the line is there."""
    steps = recorded.doc["steps"]
    types = [s for s in steps if s["action"] == "type"]
    assert [s["text"] for s in types] == ["Patient: {patient}"], [s.get("text") for s in types]
    save = [s for s in steps if s.get("consequential")]
    assert len(save) == 1 and save[0]["action"] == "click" and save[0] is steps[-1], [s["id"] for s in steps]
    assert save[0]["effect"]["kind"] == "file" and "{patient}" in str(save[0]["effect"]), save[0]
    for s in steps:  # no template or fact built on the typed example
        assert EXAMPLE not in str(s.get("expect", "")) and EXAMPLE not in str(s.get("target", "")), s


def test_nedit_replays_unedited_with_another_patient(recorded, tmp_path):
    run_case(recorded, tmp_path, "other values", Drift(), "complete")


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
    run_case(recorded, tmp_path, drift_name, drift, expectation, reason)


@pytest.mark.corpus_full
def test_nedit_dirty_start_keeps_the_text_already_there(recorded, tmp_path):
    run_case(recorded, tmp_path, "dirty start (text already in the doc)", Drift(), "complete", dirty=True)
