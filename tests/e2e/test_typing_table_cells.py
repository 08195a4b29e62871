"""A `type` step into a Qt table cell (DB Browser for SQLite's Browse Data) writes the value into the cell it
clicked, on the real app over real RFB, checked in the SQLite file after Write Changes.

A Qt item view moves its current cell on End / Shift+Home when the cell is not being edited, and refuses to start
editing for its double-click interval after a click on an already-selected cell: typing must open the cell's
editor (F2) once the click's reaction is over, then select the editor's text.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import cv2
import numpy as np
import pytest
import yaml

from openadapt_flow.demo.thirdparty import RunningApp, start_app
from openadapt_flow.demo.xvnc import wait_until
from openadapt_flow.vision.ocr import OcrEngine, find_text
from tests.support.cli import flow_env, run_flow

pytestmark = pytest.mark.timeout(480)  # the fixture's deadline, the replay's (180 s) and the test's own steps
BROWSE_DEADLINE_S = 180
ROWS = [(1, "Alice Moreau", "North"), (2, "Bob Tanaka", "South"), (3, "Carol Nguyen", "East")]


@pytest.fixture
def people_db(tmp_path: Path) -> Path:
    db = tmp_path / "people.db"
    with sqlite3.connect(db) as c:
        c.execute("CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT, clinic TEXT)")
        c.executemany("INSERT INTO people VALUES (?, ?, ?)", ROWS)
    return db


@pytest.fixture
def browser(people_db: Path) -> Iterator[RunningApp]:
    """DB Browser on the people table's Browse Data tab. Not `-t people`: that races the table's first read, and the
    "database is currently busy" question it then asks opens behind the main window and takes every input.

    The tab is opened by DB Browser's own shortcut (Alt+2), sent to its focused window until the table shows: no OCR
    of the tab bar decides it (Tesseract misread "Browse Data" on a loaded machine, so the click never came)."""
    app = start_app("sqlitebrowser", [str(people_db)])
    try:

        def browsing() -> bool:
            if word_boxes(app.screenshot(), "Tanaka"):
                return True
            if str(people_db) in windows(app).get(app.window, ""):  # its title names the file once it is open
                # the first keys can come before the window takes input: again until the table shows (Alt+2 on the
                # tab already open does nothing)
                xdotool(app, "windowfocus", "--sync", app.window, "key", "alt+2")
            return False

        # bounded well past a loaded machine: the corpus's sqlitebrowser took 52 s to show its table with four test
        # processes on two cores
        try:
            wait_until(browsing, BROWSE_DEADLINE_S, "the Browse Data tab to show the people table", interval=1.0)
            app.settle()
        except TimeoutError as e:  # say what the screen showed instead, and keep it
            frame = app.screenshot()
            cv2.imwrite(str(people_db.parent / "browser-timeout.png"), cv2.cvtColor(frame, cv2.COLOR_RGB2BGR))
            words = " ".join(w.text for w in OcrEngine().read(frame))
            raise TimeoutError(
                f"{e}; the screen read: {words[:600]!r}; its windows: {sorted(windows(app).values())} "
                f"(frame: {people_db.parent}/browser-timeout.png)"
            ) from None
        yield app
    finally:
        app.stop()


def xdotool(app: RunningApp, *args: str) -> str:
    return subprocess.run(["xdotool", *args], env=app.env, capture_output=True, text=True, timeout=30).stdout


def windows(app: RunningApp) -> dict[str, str]:
    """The app's visible windows by id, each with its title (a question it asks shows here, OCR or not)."""
    ids = xdotool(app, "search", "--onlyvisible", "--pid", str(app.proc.pid), "--name", "").split()
    return {w: xdotool(app, "getwindowname", w).strip() for w in ids}


def click(app: RunningApp, x: int, y: int) -> None:
    """A click by the test itself (X, not RFB); the pointer then leaves, since Xvnc draws it into the frames the
    replay sees but not into the screenshots templates are cut from."""
    subprocess.run(
        ["xdotool", "mousemove", str(x), str(y), "click", "1", "mousemove", "700", "600"],
        env=app.env,
        check=True,
        timeout=10,
    )


def centre(box: tuple[int, int, int, int]) -> tuple[int, int]:
    return box[0] + box[2] // 2, box[1] + box[3] // 2


def word_boxes(frame: np.ndarray, text: str) -> list[tuple[int, int, int, int]]:
    return [
        (int(m.box[0]), int(m.box[1]), int(m.box[2]), int(m.box[3]))
        for m in find_text(OcrEngine().read(frame), text)
        if m.score >= 90
    ]


def word_box(frame: np.ndarray, text: str) -> tuple[int, int, int, int]:
    """Where OCR reads `text` on the live screen, once (the bundle's author cuts the crop there). Cells are found by
    one word: Tesseract reads the row number and the cell border into the row's first word ("2|Bob")."""
    boxes = word_boxes(frame, text)
    assert len(boxes) == 1, f"{text!r} found {len(boxes)} times"
    return boxes[0]


def write_bundle(root: Path, frame: np.ndarray, cells: dict[str, str], values: dict[str, str], db: Path) -> Path:
    """A hand-written bundle: type each param into the cell now showing that word, Enter commits, Ctrl+S writes.

    The values are typed as secrets only so that no OCR readback of the cell decides the outcome (reading a table
    cell back is finding 7's, not this test's): the SQLite file after Write Changes is the judge."""
    (root / "templates").mkdir(parents=True)
    steps = []
    for param, shown in cells.items():
        x, y, w, h = word_box(frame, shown)
        region = [x - 4, y - 5, w + 8, h + 10]
        crop = frame[region[1] : region[1] + region[3], region[0] : region[0] + region[2]]
        cv2.imwrite(str(root / "templates" / f"{param}.png"), cv2.cvtColor(crop, cv2.COLOR_RGB2BGR))
        steps += [
            {
                "id": f"type-{param}",
                "intent": f"Type the {param} into its cell",
                "action": "type",
                "timeout_s": 10,
                "target": {"template": f"templates/{param}.png", "region": region},
                "text": "{secret:" + param + "}",
            },
            {"id": f"commit-{param}", "intent": "Commit the cell", "action": "key", "keys": ["enter"]},
        ]
    written = " AND ".join(f"{p} = '{v}'" for p, v in values.items())
    steps.append(
        {
            "id": "write-changes",
            "intent": "Write the changes to the database",
            "action": "hotkey",
            "keys": ["ctrl", "s"],
            "consequential": True,
            "effect": {
                "kind": "sql",
                "dsn": f"sqlite:///{db}",
                "expect": {"equals": 1},
                "query": f"SELECT count(*) FROM people WHERE id = 2 AND {written}",
            },
        }
    )
    doc = {
        "schema": "openadapt-flow/bundle@1",
        "name": "edit-person",
        "screen": {"width": frame.shape[1], "height": frame.shape[0]},
        "params": {p: {"type": "string", "secret": True} for p in cells},
        "steps": steps,
    }
    (root / "flow.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return root


def replay(tmp_path: Path, app: RunningApp, bundle: Path, values: dict[str, str]):
    run_dir = tmp_path / "run"
    args = ["replay", str(bundle), "--url", app.url, "--run-dir", str(run_dir), "--json"]
    secrets = {f"FLOW_SECRET_{k.upper()}": v for k, v in values.items()}
    r = run_flow(args, tmp_path, env=flow_env(tmp_path, **secrets), timeout=180)
    assert "Traceback" not in r.stderr, r.stderr
    return r, run_dir


def rows(db: Path) -> list[tuple]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
        return c.execute("SELECT id, name, clinic FROM people ORDER BY id").fetchall()


def test_typing_into_a_table_cell_writes_the_value_into_that_column(tmp_path, browser, people_db):
    frame = browser.screenshot()
    values = {"name": "Dana Kim", "clinic": "West"}
    bundle = write_bundle(tmp_path / "bundle", frame, {"name": "Tanaka", "clinic": "South"}, values, people_db)
    r, run_dir = replay(tmp_path, browser, bundle, values)
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(r.stdout)["state"] == "COMPLETED"
    assert rows(people_db) == [ROWS[0], (2, "Dana Kim", "West"), ROWS[2]]


def test_typing_into_an_already_selected_cell_waits_for_its_editor(tmp_path, browser, people_db):
    # The start state has the cell selected already: Qt then holds the click for its double-click interval
    # before it opens the editor, and refuses F2 and typed keys as edits until it has.
    click(browser, *centre(word_box(browser.screenshot(), "Tanaka")))
    frame = browser.settle()
    bundle = write_bundle(tmp_path / "bundle", frame, {"name": "Tanaka"}, {"name": "Erin Walsh"}, people_db)
    r, run_dir = replay(tmp_path, browser, bundle, {"name": "Erin Walsh"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert rows(people_db) == [ROWS[0], (2, "Erin Walsh", "South"), ROWS[2]]


def test_typing_replaces_the_value_of_a_qt_spin_box(tmp_path, people_db):
    """Edit Pragmas' User Version is a QSpinBox holding 7: the typed 42 replaces it (not 742 or 427), judged by
    PRAGMA user_version after Save."""
    with sqlite3.connect(people_db) as c:
        c.execute("PRAGMA user_version = 7")
    app = start_app("sqlitebrowser", [str(people_db)])
    try:
        click(app, *centre(word_box(app.screenshot(), "Edit Pragmas")))
        wait_until(lambda: word_boxes(app.settle(), "User Version"), 20, "the Edit Pragmas tab")
        frame = app.settle()
        root = tmp_path / "bundle"
        (root / "templates").mkdir(parents=True)
        lx, ly, lw, lh = word_box(frame, "User Version")
        field = [lx - 4, ly - 10, lw + 200, lh + 20]  # the label and the spin box right of it
        cx, cy, cw, ch = word_box(frame, "Cancel")  # Tesseract does not read the default button's "Save"
        save = [cx - 116, cy - 10, 84, ch + 20]  # the Save button, left of Cancel's icon
        for name, (x, y, w, h) in (("version", field), ("save", save)):
            cv2.imwrite(
                str(root / "templates" / f"{name}.png"), cv2.cvtColor(frame[y : y + h, x : x + w], cv2.COLOR_RGB2BGR)
            )
        steps = [
            {
                "id": "version",
                "intent": "Type the user version",
                "action": "type",
                "text": "{secret:version}",
                "target": {"template": "templates/version.png", "region": field, "point": [lw + 140, lh // 2 + 10]},
            },
            {
                "id": "save",
                "intent": "Save the pragmas",
                "action": "click",
                "consequential": True,
                "target": {"template": "templates/save.png", "region": save},
                "effect": {
                    "kind": "sql",
                    "dsn": f"sqlite:///{people_db}",
                    "query": "PRAGMA user_version",
                    "expect": {"equals": 42},
                },
            },
        ]
        doc = {
            "schema": "openadapt-flow/bundle@1",
            "name": "set-version",
            "screen": {"width": frame.shape[1], "height": frame.shape[0]},
            "params": {"version": {"type": "string", "secret": True}},
            "steps": steps,
        }
        (root / "flow.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
        r, _ = replay(tmp_path, app, root, {"version": "42"})
        assert r.returncode == 0, r.stdout + r.stderr
    finally:
        app.stop()
    with sqlite3.connect(people_db) as c:
        assert c.execute("PRAGMA user_version").fetchone()[0] == 42
