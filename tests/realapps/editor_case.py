"""The text editors' case, shared: a line typed at the end of a document opened from a path, saved, demonstrated once
through `flow record --watch-file PATH` and replayed unedited with another value, under drift and from a dirty
start. The system of record is the saved file, read from disk after the app is stopped.

One document for every editor ("Shopping list"), and one dirty start (a line "Eggs" added since: the empty last line
is one lower); each editor says only what is its own: how it is demonstrated, the line the value makes and how it
ends a saved file.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openadapt_flow.demo.thirdparty import Drift
from tests.realapps.realapp_harness import Person, Recorded, check, judge, launch, record, replay

DOC = "Shopping list\n"
DIRTY_DOC = "Shopping list\nEggs\n"  # someone added a line since: the empty last line is one lower
EXAMPLE = "Maria Lopez"  # the value typed in the demonstrations that say `--param patient=...`
REPLAYED = "Rosa Diaz"  # the value every replay types instead


@dataclass(frozen=True)
class Editor:
    """What differs from one editor to the next."""

    app: str  # the registered app (demo.thirdparty)
    line: Callable[[str], str] = lambda value: f"Patient: {value}"  # the typed line a value makes
    eol: str = ""  # what the editor adds at the end of a saved file ("\n" for most)
    param: str | None = "patient"  # the one param the recording must have (None: any one name)
    replayed: str = REPLAYED


def record_editor(
    tmp_path_factory: Any, editor: Editor, name: str, demonstrate: Callable[[Person], None], extra: list[str]
) -> Recorded:
    """The demonstration recorded once, on a fresh copy of the document; the saved file is checked to be what the
    demonstration meant to save (else the demonstration itself went wrong, not the replay)."""
    out = tmp_path_factory.mktemp(f"{editor.app}-recording")  # kept: pytest keeps the last sessions' folders
    doc = out / "list.txt"
    doc.write_text(DOC)
    app = launch(editor.app, [str(doc)], Drift())
    try:
        rec = record(app, out, name, demonstrate, ["--watch-file", str(doc)], extra=extra)
    finally:
        app.stop()
    example = EXAMPLE if editor.param == "patient" else None
    if example is not None:
        assert doc.read_text() == DOC + editor.line(example) + editor.eol, (
            f"the demonstration went wrong: {doc.read_text()!r}"
        )
    return rec


def run_editor_case(
    editor: Editor,
    recorded: Recorded,
    tmp_path: Path,
    drift_name: str,
    drift: Drift,
    expectation: str,
    reason: str = "",
    dirty: bool = False,
) -> None:
    """One replay of the recorded bundle with the other value, judged by the saved file: right when it is the start
    document plus the line, untouched when it is the start document (a halt before the save), a wrong write else."""
    params = list(recorded.doc["params"])
    assert len(params) == 1 and editor.param in (None, params[0]), recorded.doc["params"]
    # the same document the demonstration saved (a file effect names its path), as it was, or dirty
    doc = recorded.recording.parent / "list.txt"
    start = DIRTY_DOC if dirty else DOC
    doc.write_text(start)
    app = launch(editor.app, [str(doc)], drift)
    try:
        code, report, _ = replay(recorded.bundle, app, {params[0]: editor.replayed}, tmp_path / "run", tmp_path)
    finally:
        app.stop()
    saved = doc.read_text()
    right = saved == start + editor.line(editor.replayed) + editor.eol
    result = judge(
        editor.app,
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


def the_save(recorded: Recorded) -> dict[str, Any]:
    """The recording's one consequential step, once it is checked that the typed line is `Patient: {patient}`, the
    save's effect a `file` effect holding `{patient}`, and no template or fact built on the typed example."""
    steps = recorded.doc["steps"]
    types = [s for s in steps if s["action"] == "type"]
    assert [s["text"] for s in types] == ["Patient: {patient}"], [s.get("text") for s in types]
    save = [s for s in steps if s.get("consequential")]
    assert len(save) == 1, [(s["id"], s["action"]) for s in steps]
    assert save[0]["effect"]["kind"] == "file" and "{patient}" in str(save[0]["effect"]), save[0]
    for s in steps:
        assert EXAMPLE not in str(s.get("expect", "")) and EXAMPLE not in str(s.get("target", "")), s
    return save[0]
