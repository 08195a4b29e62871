"""Mousepad (GTK): a line typed into a document opened from a path and saved with ctrl+s, demonstrated once through
`flow record --watch-file PATH`, replayed unedited with another line and under drift. The system of record is the
saved file, read from disk after the app is stopped.

`--watch-file` is being added to `flow record` on another branch (it makes the saving step consequential, with a
`file` effect `contains: {param}`). Until it is here the recording is made without it: the drift replays still run
and are judged by the file, and test_mousepad_recording_makes_the_save_consequential fails, saying why.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from openadapt_flow.demo.thirdparty import Drift
from tests.realapps.realapp_harness import Person, Recorded, check, flow_supports, judge, launch, record, replay

pytestmark = pytest.mark.timeout(300)

DOC = "Shopping list\n"
DIRTY_DOC = "Shopping list\nEggs\n"  # someone added a line since: the empty last line is one lower
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
    out = tmp_path_factory.mktemp("mousepad-recording")  # kept: pytest keeps the last sessions' folders
    doc = out / "list.txt"
    doc.write_text(DOC)
    watch = ["--watch-file", str(doc)] if flow_supports("record", "--watch-file") else []
    app = launch("mousepad", [str(doc)], Drift())
    try:
        rec = record(app, out, "shopping-list", demonstrate, watch)
    finally:
        app.stop()
    assert doc.read_text() == DOC + "Buy milk", f"the demonstration itself went wrong: {doc.read_text()!r}"
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
    params = list(recorded.doc["params"])
    assert len(params) == 1, recorded.doc["params"]
    # the same document the demonstration saved (a file effect names its path), as it was, or dirty
    doc = recorded.recording.parent / "list.txt"
    start = DIRTY_DOC if dirty else DOC
    doc.write_text(start)
    line = "Call the bank"
    app = launch("mousepad", [str(doc)], drift)
    try:
        code, report, out = replay(recorded.bundle, app, {params[0]: line}, tmp_path / "run", tmp_path)
    finally:
        app.stop()
    saved = doc.read_text()
    right = saved == start + line
    result = judge(
        "mousepad",
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


def test_mousepad_recording_makes_the_save_consequential(recorded):
    """With --watch-file the ctrl+s step is consequential, its effect a `file` effect that the line is there."""
    assert flow_supports("record", "--watch-file"), "flow record has no --watch-file yet (another branch adds it)"
    save = next(s for s in recorded.doc["steps"] if s.get("keys") == ["ctrl", "s"])
    param = next(iter(recorded.doc["params"]))
    assert save.get("consequential") is True, save
    assert save["effect"]["kind"] == "file" and "{" + param + "}" in str(save["effect"]), save


def test_mousepad_replays_unedited_with_another_line(recorded, tmp_path):
    run_case(recorded, tmp_path, "other values", Drift(), "complete")


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
    run_case(recorded, tmp_path, drift_name, drift, expectation, reason)


@pytest.mark.corpus_full
def test_mousepad_dirty_start_keeps_the_text_already_there(recorded, tmp_path):
    run_case(
        recorded,
        tmp_path,
        "dirty start (text already in the doc)",
        Drift(),
        "complete_or_halt",
        "the document has a line the demonstration did not see; a halt is safe, losing 'Eggs' is not",
        dirty=True,
    )
