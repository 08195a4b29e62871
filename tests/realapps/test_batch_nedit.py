"""A batch on NEdit, a text editor whose system of record is a file (issue 33): one item demonstrated through
`flow record --watch-file` (a click on the document's first line, ctrl+Home, ctrl+End, `Patient: {patient}` typed,
File > Save),
then eight patients entered one after another into the same running NEdit, judged by the saved file after the last:
every item's line exactly once, whole, no other line (half a line, two items' lines run together, a halted item's
line), the lines there before kept. NEdit ends a saved file with a line break and puts it in the buffer too, so
ctrl+End puts the next item's caret on a line of its own.

Not the corpus's demonstration (test_realapp_nedit.py clicks the empty page below the text, a target the recorder
cuts with the text's last letters in it, by design: each item's line changes them, and the next item halts, safely,
at that click); this one's targets look the same before every item, as a demonstration meant for a batch needs.

The halted-item case shows the notice over the window once item 4's line is typed (unsaved text in the buffer): item
4 must halt or pause, NEdit be reset, every later item be exact and item 4's line never saved. The reset is the
bundle's `reset:` run by `flow batch` where this checkout has both, else the harness's own (NEdit restarted on its
display: unsaved text dies with it); the result line says which.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from openadapt_flow.demo.thirdparty import Drift
from tests.realapps.batch_harness import HALT_AT, PEOPLE, Item, LiveApp, check_batch, run_batch
from tests.realapps.realapp_harness import Person, Recorded, launch, record
from tests.realapps.test_realapp_nedit import CLOSE_ITEM, EDIT_MENU, EXAMPLE, FILE_MENU, SAVE_ITEM

pytestmark = pytest.mark.timeout(900)

# a blank line under the first: the first line's target (cut with a few pixels of the line below) looks the same
# whatever lines the items add under it
DOC = "Shopping list\n\n"
HOME = {"text_present": "Shopping"}  # the document's first line: there whenever NEdit shows the document
FIRST_LINE = (30, 38)  # on "Shopping list" (recorded layout: window 507x349 at 0,0)


def demonstrate_one_item(p: Person) -> None:
    p.click(*FIRST_LINE, via=(EDIT_MENU, (250, 250)))  # across the menu bar and the page, up to the first line
    # the caret to the document's start, then its end: the first key's change is beside the clicked line whatever
    # the document holds, so its step can be checked there; the second's is wherever the text ends, and its step is
    # checked for changing the screen (a key after a key has no place to check, the recorder says)
    p.press("ctrl", "home")
    p.press("ctrl", "end")
    p.type("Patient: Maria Lopz\bez")  # a typo fixed with BackSpace: Patient: Maria Lopez
    p.click(*FILE_MENU, via=((200, 120),))
    p.click(*SAVE_ITEM, via=(CLOSE_ITEM,))  # down the open menu, past Close
    p.travel(400, 300)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Recorded:
    out = tmp_path_factory.mktemp("nedit-batch-recording")  # kept: pytest keeps the last sessions' folders
    doc = out / "list.txt"
    doc.write_text(DOC)
    app = launch("nedit", [str(doc)], Drift())
    try:
        rec = record(
            app,
            out,
            "patient-line-batch",
            demonstrate_one_item,
            ["--watch-file", str(doc)],
            extra=["--param", f"patient={EXAMPLE}"],
        )
    finally:
        app.stop()
    assert doc.read_text() == DOC + f"Patient: {EXAMPLE}\n", f"the demonstration went wrong: {doc.read_text()!r}"
    assert list(rec.doc["params"]) == ["patient"], rec.doc["params"]
    return rec


def lines(doc: Path) -> list[tuple[str, ...]]:
    return [(line,) for line in doc.read_text().splitlines()]


def batch(recorded: Recorded, tmp_path: Path, case: str, halt_at: int | None) -> None:
    doc = recorded.recording.parent / "list.txt"  # the file the demonstration saved: its effect names the path
    doc.write_text(DOC)
    items = [
        Item(f"item-{n}", {"patient": p}, (f"Patient: {p}",), halt=n == halt_at) for n, (p, _) in enumerate(PEOPLE, 1)
    ]
    live = LiveApp("nedit", [str(doc)], tmp_path)
    result = run_batch(
        "nedit", case, recorded.bundle, live, items, tmp_path, lambda: lines(doc), {}, HOME, reset=halt_at is not None
    )
    check_batch(result)
    assert doc.read_text().startswith(DOC), f"the text there before the batch was changed: {doc.read_text()!r}"


def test_nedit_batch_of_8_items_on_one_live_app(recorded, tmp_path):
    """Eight lines in a row, no restart: 8/8 exact, 0 wrong lines."""
    batch(recorded, tmp_path, "8 items", None)


@pytest.mark.corpus_full
def test_nedit_batch_with_a_halted_item(recorded, tmp_path):
    """Item 4 halts with its line typed; reset; items 5-8 exact and item 4's line never saved."""
    batch(recorded, tmp_path, f"8 items, item {HALT_AT} halted by a notice", HALT_AT)
