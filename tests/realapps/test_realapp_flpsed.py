"""flpsed (FLTK 1.3): a PostScript form filled in — the visitor's name typed on the form's Name line and the form saved
over itself (ctrl+s opens FLTK's file chooser on the same path, OK, then Overwrite), demonstrated once through
`flow record --watch-file PATH --param visitor=...`, replayed unedited with another visitor and under drift. The
system of record is the saved PostScript file, read from disk after the app is stopped: flpsed writes each text it
placed as `% PSEditWidget:` comments (page, size, position in points, text), which the test parses exactly.

FLTK 1.3 keeps its preferences in $HOME/.fltk (the file chooser's preview is turned off there: it would show the
file's bytes). Dark is FLTK's own X resources (`*background`, `*foreground`, `*Text.background`) merged into the
private Xvnc before flpsed starts; FLTK 1.3 has no UI scale, so scale 1.25 is flpsed's own zoom (`-z 125`: the page,
where the data goes, drawn 1.25x). FLTK draws no blinking caret in flpsed's page.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from openadapt_flow.demo import thirdparty
from openadapt_flow.demo.thirdparty import AppSpec, Drift, RunningApp, window_geometry
from openadapt_flow.demo.xvnc import wait_until
from tests.realapps.realapp_harness import (
    Person,
    Recorded,
    check,
    judge,
    launch,
    record,
    replay,
)

pytestmark = pytest.mark.timeout(300)

DARK = "*background: #202020\n*foreground: #e0e0e0\n*Text.background: #303030\n*Text.foreground: #e0e0e0\n"


def _configure(home: Path, config: Path, drift: Drift) -> None:
    prefs = home / ".fltk" / "fltk.org"
    prefs.mkdir(parents=True, exist_ok=True)
    (prefs / "filechooser.prefs").write_text(
        "; FLTK preferences file format 1.0\n; vendor: fltk.org\n; application: filechooser\n\n[.]\n\npreview:0\n"
    )


def _prepare(home: Path, env: dict[str, str], drift: Drift) -> None:
    if drift.dark:
        subprocess.run(["xrdb", "-merge"], input=DARK, env=env, text=True, check=True, timeout=10)


thirdparty.register(AppSpec("flpsed", ("flpsed",), "flpsed", "fltk", _configure, prepare=_prepare))

FORM = """%!PS-Adobe-3.0
%%Title: Visitor registration
%%BoundingBox: 0 0 595 842
%%Pages: 1
%%EndComments
%%BeginProlog
{filled}%%EndProlog
%%BeginSetup
%%EndSetup
%%Page: 1 1
/Helvetica-Bold findfont 20 scalefont setfont
72 760 moveto (Visitor registration) show
/Helvetica findfont 14 scalefont setfont
72 700 moveto (Name:) show
130 697 moveto 400 697 lineto stroke
72 660 moveto (Clinic:) show
130 657 moveto 400 657 lineto stroke
showpage
%%Trailer
%%EOF
"""
# the dirty start: the Clinic line was filled in earlier, in flpsed: these are its text comments, which it reads
# back; the form it starts from is flpsed's own save of them (`saved_by_flpsed`: its prolog code and page line too)
CLINIC = (1, 12, 143, 667, "Harbor Pediatrics")
FILLED = (
    "\n% PSEditWidget Begin\n\n% PSEditWidget: PAGE 1\n% PSEditWidget: SIZE 12\n"
    "% PSEditWidget: COLOR 0.000000 0.000000 0.000000\n% PSEditWidget: POS 143 667\n"
    "% PSEditWidget: TEXT (Harbor Pediatrics)\n\n% PSEditWidget End\n\n"
)
NAME_LINE = ((130, 400), (697, 717))  # the Name line in points: x along it, y from the line to the next text
EXAMPLE = "Maria Lopez"
# places in the recorded layout (window 600x700 at 1,20 of a 1024x768 screen, zoom 100)
TAGS_MENU, TITLE, NAME_FIELD = (176, 34), (300, 150), (190, 216)
OK_IN_CHOOSER, OVERWRITE_IN_ASK = (366, 356), (275, 63)  # offsets inside the two dialogs


def texts(ps: str) -> list[tuple[int, int, int, int, str]]:
    """The texts flpsed placed: (page, size, x, y, text), from its `% PSEditWidget:` comments (a PAGE line heads
    each page's texts; each text is SIZE, COLOR, POS, maybe TAG, then TEXT)."""
    placed, page, size, pos = [], 0, 0, (0, 0)
    for key, value in re.findall(r"^% PSEditWidget: (PAGE|SIZE|POS|TEXT) (.*)$", ps, flags=re.MULTILINE):
        if key == "PAGE":
            page = int(value)
        elif key == "SIZE":
            size = int(value)
        elif key == "POS":
            x, y = value.split()
            pos = (int(x), int(y))
        else:
            placed.append((page, size, *pos, value[1:-1]))
    return placed


def body(ps: str) -> str:
    """The form itself: everything after flpsed's prolog block, without its page-count line."""
    return re.sub(r".*/PSEditWidgetPageCount \d+ def % PSEditWidget\n", "", ps.split("%%EndProlog", 1)[-1])


def _dialog(app: RunningApp, gone: str = "") -> tuple[str, tuple[int, int, int, int]]:
    """The dialog on the screen (a mapped window other than flpsed's main one, `gone` and the root): what a person
    sees pop up, as (window, geometry)."""

    def found():
        out = subprocess.run(
            ["xdotool", "search", "--onlyvisible", "--name", ""],
            env=app.xvnc.env,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        ).stdout.split()
        for w in out:
            geo = window_geometry(app.xvnc.env, w) if w not in (app.window, gone) else None
            if geo and geo[2:] != app.drift.screen and geo[2] > 50:
                return w, geo
        return None

    return wait_until(found, 30, "flpsed's dialog to be mapped", interval=0.1)


def demonstrate(app: RunningApp, p: Person) -> None:
    p.click(*NAME_FIELD, via=(TAGS_MENU, TITLE))  # the pointer crosses the menu bar and the title on its way
    p.type("Maria Lopz\bez")  # a typo fixed with BackSpace: Maria Lopez
    p.travel(300, 420, via=((22, 34),))  # glances at the File menu, comes back down to the page
    p.press("ctrl", "s")  # Save File as..., the chooser open on the same path
    chooser, (x, y, _, _) = _dialog(app)
    p.click(x + OK_IN_CHOOSER[0], y + OK_IN_CHOOSER[1], via=((x + 200, y + 200),))
    _, (x, y, _, _) = _dialog(app, gone=chooser)  # "The file exists."
    p.click(x + OVERWRITE_IN_ASK[0], y + OVERWRITE_IN_ASK[1])
    p.travel(300, 500)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Recorded:
    out = tmp_path_factory.mktemp("flpsed-recording")  # kept: pytest keeps the last sessions' folders
    doc = out / "forms" / "visitor.ps"  # a folder of its own: the chooser lists only the form
    doc.parent.mkdir()
    doc.write_text(FORM.format(filled=""))
    app = launch("flpsed", [str(doc)], Drift())
    try:
        rec = record(
            app,
            out,
            "visitor-form",
            lambda p: demonstrate(app, p),
            ["--watch-file", str(doc)],
            extra=["--param", f"visitor={EXAMPLE}"],
        )
    finally:
        app.stop()
    saved = doc.read_text()
    assert [t[4] for t in texts(saved)] == [EXAMPLE], f"the demonstration went wrong: {texts(saved)!r}"
    return rec


def saved_by_flpsed(form: str, tmp_path: Path) -> str:
    """`form` as flpsed itself saves it (batch mode, no window): a form filled in earlier in flpsed holds its whole
    text block — the comments, the prolog code drawing each text — and its page-count line, not the comments alone."""
    src, out = tmp_path / "filled-by-hand.ps", tmp_path / "saved-by-flpsed.ps"
    src.write_text(form)
    subprocess.run(["flpsed", "-b", str(src), str(out)], check=True, timeout=30, capture_output=True)
    return out.read_text()


def run_case(
    recorded: Recorded,
    tmp_path: Path,
    drift_name: str,
    drift: Drift,
    expectation: str,
    reason: str = "",
    dirty: bool = False,
) -> None:
    assert list(recorded.doc["params"]) == ["visitor"], recorded.doc["params"]
    # the same form the demonstration saved (a file effect names its path), blank, or with the Clinic filled in
    doc = recorded.recording.parent / "forms" / "visitor.ps"
    start = saved_by_flpsed(FORM.format(filled=FILLED), tmp_path) if dirty else FORM.format(filled="")
    assert not dirty or texts(start) == [CLINIC], start
    doc.write_text(start)
    visitor = "Rosa Diaz"
    zoom = ["-z", str(round(100 * drift.scale))] if drift.scale != 1.0 else []
    app = launch("flpsed", [*zoom, str(doc)], drift)
    try:
        code, report, _ = replay(recorded.bundle, app, {"visitor": visitor}, tmp_path / "run", tmp_path)
    finally:
        app.stop()
    saved = doc.read_text()
    placed = texts(saved)
    before = [CLINIC] if dirty else []
    new = [t for t in placed if t not in before]
    (x0, x1), (y0, y1) = NAME_LINE
    right = (
        body(saved) == body(start)
        and [t for t in placed if t in before] == before
        and len(new) == 1
        and new[0][0] == 1
        and new[0][4] == visitor
        and x0 <= new[0][2] <= x1
        and y0 <= new[0][3] <= y1
    )
    result = judge(
        "flpsed",
        drift_name,
        code,
        report,
        right,
        saved == start,
        f"texts placed {placed!r}",
        wrong_click=not right and saved != start,
        expectation=expectation,
        reason=reason,
    )
    check(result)


def test_flpsed_recording_makes_overwrite_consequential(recorded):
    """The typed text is `{visitor}`; the click on Overwrite is the one consequential step, with a `file` effect."""
    steps = recorded.doc["steps"]
    assert [s["text"] for s in steps if s["action"] == "type"] == ["{visitor}"], steps
    save = [s for s in steps if s.get("consequential")]
    assert len(save) == 1 and save[0]["action"] == "click" and save[0] is steps[-1], [s["id"] for s in steps]
    assert save[0]["effect"]["kind"] == "file" and "{visitor}" in str(save[0]["effect"]), save[0]
    # no typed value shows beside Overwrite: its gate is a word of its dialog, not its own label (record/gate.py)
    assert save[0].get("identity") and "overwrite" not in save[0]["identity"]["text"].lower(), save[0]
    for s in steps:  # no template or fact built on the typed example
        assert EXAMPLE not in str(s.get("expect", "")) and EXAMPLE not in str(s.get("target", "")), s


def test_flpsed_replays_unedited_with_another_visitor(recorded, tmp_path):
    run_case(recorded, tmp_path, "other values", Drift(), "complete")


@pytest.mark.corpus_full
@pytest.mark.parametrize(
    "drift_name,drift,expectation,reason",
    [
        ("window moved", Drift(position=(160, 50)), "complete", ""),
        ("screen 1920x1080, natural size", Drift(screen=(1920, 1080)), "complete", ""),
        ("dark theme", Drift(dark=True), "complete", ""),  # Overwrite found by its label, gated by its dialog's words
        ("scale 1.25", Drift(scale=1.25), "complete", ""),
    ],
)
def test_flpsed_replay_under_drift(recorded, tmp_path, drift_name, drift, expectation, reason):
    run_case(recorded, tmp_path, drift_name, drift, expectation, reason)


@pytest.mark.corpus_full
def test_flpsed_dirty_start_keeps_the_clinic_already_there(recorded, tmp_path):
    run_case(recorded, tmp_path, "dirty start (the Clinic already filled in)", Drift(), "complete", dirty=True)
