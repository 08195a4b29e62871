"""A batch on the Qt 6 referral form (issue 33): the corpus's demonstration (test_realapp_qt6form.py: Patient, Clinic,
Save), then eight referrals entered one after another into the same running form, judged by the SQLite file after the
last: every item's row exactly once with its values in their columns, no other row. The form keeps the last entry's
values after Save (a type step replaces a field's content); the next item starts from there.

The halted-item case shows the notice over the form once item 4's patient is typed: item 4 must halt or pause, the
form be reset, every later item be exact and item 4's patient never saved. The reset is the bundle's `reset:` run by
`flow batch` where this checkout has both, else the harness's own (the form restarted on its display); the result
line says which.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from openadapt_flow.demo.thirdparty import Drift
from tests.realapps.batch_harness import HALT_AT, PEOPLE, Item, LiveApp, check_batch, run_batch
from tests.realapps.realapp_harness import Recorded, launch, record
from tests.realapps.test_realapp_qt6form import DSN_ENV, EXAMPLE, demonstrate, make_db, read_rows

pytestmark = pytest.mark.timeout(900)

HOME = {"text_present": "New referral"}  # the form's heading: there whenever the form is up


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Recorded:
    out = tmp_path_factory.mktemp("qt6form-batch-recording")  # kept: pytest keeps the last sessions' folders
    db = make_db(out / "referrals.db")
    app = launch("qt6form", [str(db)], Drift())
    try:
        rec = record(
            app,
            out,
            "referral-qt6",
            demonstrate,
            ["--watch-sqlite", str(db)],
            dsn_env=DSN_ENV,
            extra=[a for k, v in EXAMPLE.items() for a in ("--param", f"{k}={v}")],
        )
    finally:
        app.stop()
    assert read_rows(db) == [(EXAMPLE["patient"], EXAMPLE["clinic"])], "the demonstration itself went wrong"
    assert set(rec.doc["params"]) == set(EXAMPLE), rec.doc["params"]
    return rec


def batch(recorded: Recorded, tmp_path: Path, case: str, halt_at: int | None) -> None:
    db = make_db(tmp_path / "referrals.db")
    items = [
        Item(f"item-{n}", {"patient": p, "clinic": c}, (p, c), halt=n == halt_at) for n, (p, c) in enumerate(PEOPLE, 1)
    ]
    live = LiveApp("qt6form", [str(db)], tmp_path)
    result = run_batch(
        "qt6form",
        case,
        recorded.bundle,
        live,
        items,
        tmp_path,
        lambda: read_rows(db),
        {DSN_ENV: f"sqlite:///{db}"},
        HOME,
        reset=halt_at is not None,
    )
    check_batch(result)


@pytest.mark.corpus_full
def test_qt6form_batch_of_8_items_on_one_live_app(recorded, tmp_path):
    """Eight referrals in a row, no restart: 8/8 exact, 0 wrong rows."""
    batch(recorded, tmp_path, "8 items", None)


def test_qt6form_batch_with_a_halted_item(recorded, tmp_path):
    """Item 4 halts with its patient typed; reset; items 5-8 exact and item 4's patient never saved."""
    batch(recorded, tmp_path, f"8 items, item {HALT_AT} halted by a notice", HALT_AT)
