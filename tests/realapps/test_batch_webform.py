"""A batch on the web form in Chromium (issue 33): the corpus's demonstration (test_realapp_webform.py: Patient,
Clinic, Save) followed by a click on the saved page's "New record" link, which brings the empty form back: the
demonstration of one work item ends where it started, as one recorded for a batch does. Eight patients are then
entered one after another into the same running Chromium, judged by the SQLite file after the last: every item's row
exactly once with its values in their columns, no other row.

The halted-item case shows the notice over the window once item 4's patient is typed: item 4 must halt or pause, the
page be reset, every later item be exact and item 4's patient never saved. The reset is the bundle's `reset:` run by
`flow batch` where this checkout has both, else the harness's own (the web form and its Chromium restarted on the
display); the result line says which.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.realapps.batch_harness import HALT_AT, PEOPLE, Item, LiveApp, check_batch, run_batch
from tests.realapps.patient_form import DSN_ENV, make_db, read_rows, record_form
from tests.realapps.realapp_harness import Person, Recorded
from tests.realapps.test_realapp_webform import demonstrate

pytestmark = pytest.mark.timeout(900)

NEW_RECORD = (70, 111)  # the saved page's link back to an empty form (recorded layout)
HOME = {"text_present": "Patient intake"}  # the page's heading: on the form and on the saved page


def demonstrate_one_item(p: Person) -> None:
    demonstrate(p)  # Patient, Clinic, Save; the pointer ends off the window
    p.click(*NEW_RECORD, via=((300, 200),))
    p.travel(800, 600)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Recorded:
    rec = record_form(
        "webform", tmp_path_factory.mktemp("webform-batch-recording"), "web-patient-intake-batch", demonstrate_one_item
    )
    assert rec.doc["steps"][-1]["action"] == "click" and not rec.doc["steps"][-1].get("consequential"), [
        s["id"] for s in rec.doc["steps"]
    ]
    return rec


def batch(recorded: Recorded, tmp_path: Path, case: str, halt_at: int | None) -> None:
    db = make_db(tmp_path / "clinic.db", [])
    items = [
        Item(f"item-{n}", {"patient": p, "clinic": c}, (p, c), halt=n == halt_at) for n, (p, c) in enumerate(PEOPLE, 1)
    ]
    live = LiveApp("webform", [str(db)], tmp_path)
    result = run_batch(
        "webform",
        case,
        recorded.bundle,
        live,
        items,
        tmp_path,
        lambda: [r[1:] for r in read_rows(db)],
        {DSN_ENV: f"sqlite:///{db}"},
        HOME,
        reset=halt_at is not None,
    )
    check_batch(result)


def test_webform_batch_of_8_items_on_one_live_app(recorded, tmp_path):
    """Eight patients in a row, no restart: 8/8 exact, 0 wrong rows."""
    batch(recorded, tmp_path, "8 items", None)


@pytest.mark.corpus_full
def test_webform_batch_with_a_halted_item(recorded, tmp_path):
    """Item 4 halts with its patient typed; reset; items 5-8 exact and item 4's patient never saved."""
    batch(recorded, tmp_path, f"8 items, item {HALT_AT} halted by a notice", HALT_AT)
