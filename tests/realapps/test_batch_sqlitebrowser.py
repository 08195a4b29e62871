"""A batch on DB Browser for SQLite (issue 33): the corpus's recording (test_realapp_sqlitebrowser.py's
demonstration: New Record, the name cell, the clinic cell, ctrl+s Write Changes), then eight patients entered one
after another into the same running DB Browser, judged by the SQLite file after the last: every item's row exactly
once with its values in their columns, no other row.

The halted-item case shows the notice over DB Browser once item 4's name is typed (an uncommitted row with a name
in it): item 4 must halt or pause, the app be reset, and the later items' Write Changes must not commit item 4's
leftover. The reset is the bundle's `reset:` run by `flow batch` where this checkout has both, else the harness's
own (DB Browser restarted on its display: uncommitted edits die with it); the result line says which.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from openadapt_flow.demo.thirdparty import Drift
from tests.realapps.batch_harness import HALT_AT, PEOPLE, Item, LiveApp, check_batch, run_batch
from tests.realapps.realapp_harness import Recorded, launch, record
from tests.realapps.test_realapp_sqlitebrowser import ROWS, demonstrate, make_db, read_rows

pytestmark = pytest.mark.timeout(900)

DSN_ENV = "CLINIC_DSN"
HOME = {"text_present": "Execute SQL"}  # a tab DB Browser shows whenever its main window is up


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Recorded:
    out = tmp_path_factory.mktemp("sqlitebrowser-batch-recording")  # kept: pytest keeps the last sessions' folders
    db = make_db(out / "clinic.db", ROWS)
    app = launch("sqlitebrowser", [str(db)], Drift())
    try:
        rec = record(app, out, "patient-entry", demonstrate, ["--watch-sqlite", str(db)], dsn_env=DSN_ENV)
    finally:
        app.stop()
    assert [r[1:] for r in read_rows(db)] == ROWS + [("Grace Hopper", "East")], "the demonstration itself went wrong"
    assert set(rec.doc["params"]) == {"name", "clinic"}, rec.doc["params"]
    return rec


def batch(recorded: Recorded, tmp_path: Path, case: str, halt_at: int | None) -> None:
    db = make_db(tmp_path / "clinic.db", ROWS)
    items = [
        Item(f"item-{n}", {"name": p, "clinic": c}, (p, c), halt=n == halt_at) for n, (p, c) in enumerate(PEOPLE, 1)
    ]
    live = LiveApp("sqlitebrowser", [str(db)], tmp_path)
    result = run_batch(
        "sqlitebrowser",
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


def test_sqlitebrowser_batch_of_8_items_on_one_live_app(recorded, tmp_path):
    """Issue 33's batch: eight items in a row, no restart; 8/8 exact, 0 wrong rows."""
    batch(recorded, tmp_path, "8 items", None)


@pytest.mark.corpus_full
def test_sqlitebrowser_batch_with_a_halted_item(recorded, tmp_path):
    """Item 4 halts with its name typed; reset; items 5-8 exact and item 4's leftover never saved."""
    batch(recorded, tmp_path, f"8 items, item {HALT_AT} halted by a notice", HALT_AT)
