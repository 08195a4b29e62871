"""Capture the drift corpus: Debian apps on a private Xvnc, one settled frame per drift kind and screen.

    .venv/bin/python scripts/capture_drift_corpus.py capture [--app NAME] [--out tests/data/drift] [--force]
    .venv/bin/python scripts/capture_drift_corpus.py build   [--out tests/data/drift]

`capture` starts each app through `openadapt_flow.demo.thirdparty` (own Xvnc,
own HOME, no window manager) once per drift kind, drives it by keyboard only
(so no pointer hovers a widget), parks the pointer off the app, and saves the
settled screen(s) as PNG. `build` cuts the templates from the healthy frame
and writes targets.json from the annotations in scripts/drift_annotations.py:
truth boxes are derived from the known offsets where the drift only moves
pixels (and checked pixel for pixel), else read off the frames by a person.
Once tests/data/drift/CORPUS_READY exists, `capture` refuses to overwrite
frames without --force: the ladder's branch copies the committed corpus.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

import cv2  # noqa: E402
import numpy as np  # noqa: E402

from openadapt_flow.demo.thirdparty import Drift, RunningApp, start_app, wait_settled  # noqa: E402
from openadapt_flow.demo.xvnc import wait_until  # noqa: E402

OUT = REPO / "tests" / "data" / "drift"
RECORDED = (1024, 768)
NATURAL = (1920, 1080)
# Window offsets of the `moved` drift: past the ladder's 80 px search window, the app still on screen.
MOVES = {"galculator": (150, 110), "mousepad": (140, 100), "sqlitebrowser": (110, 60)}
TWIN_SIZE = {"galculator": (470, 420)}  # the calculator resized: its buttons stretch around the same labels
PATIENTS = [("Alice Martin", "Lyon"), ("Bob Tanaka", "Osaka"), ("Carol Nguyen", "Hanoi")]
NOTE_TEXT = "Invoice 42 paid on Monday"


def drifts_for(app: str) -> dict[str, tuple[Drift, str]]:
    """Each drift kind: the launch's drift and how it differs from the recording, in words."""
    dx, dy = MOVES[app]
    out = {
        "healthy": (Drift(), "the recording: 1024x768, default theme, window at 0,0"),
        "moved": (Drift(position=(dx, dy)), f"window moved by ({dx}, {dy}) px"),
        "natural": (Drift(screen=NATURAL), "screen 1920x1080, the app at its natural pixel size and place"),
        "dark": (
            Drift(dark=True),
            "GTK_THEME=Adwaita:dark" if app != "sqlitebrowser" else "its own dark style (appStyle=1)",
        ),
        "scale125": (
            Drift(scale=1.25),
            "GDK_DPI_SCALE=1.25 (text 1.25x, layout follows)"
            if app != "sqlitebrowser"
            else "QT_SCALE_FACTOR=1.25 (everything 1.25x)",
        ),
    }
    if app == "galculator":
        w, h = TWIN_SIZE[app]
        out["twin"] = (
            Drift(),
            f"window resized to {w}x{h}: buttons stretch, look-alike buttons (* and 9) nearer in score",
        )
    if app == "sqlitebrowser":
        out["twin"] = (Drift(), "a second patient row 'Carol Nguyen': the recorded cell has an identical twin")
    return out


def _xdotool(app: RunningApp, *args: str) -> None:
    subprocess.run(["xdotool", *args], env=app.xvnc.env, check=True, capture_output=True, timeout=10)


def park_pointer(app: RunningApp) -> None:
    """The pointer in the screen's bottom-right corner, off every window, so nothing is hovered."""
    w, h = app.drift.screen
    _xdotool(app, "mousemove", str(w - 1), str(h - 1))


def keys(app: RunningApp, *names: str) -> np.ndarray:
    _xdotool(app, "windowfocus", "--sync", app.window)
    _xdotool(app, "key", "--delay", "60", *names)
    return app.settle()


def type_text(app: RunningApp, text: str) -> np.ndarray:
    _xdotool(app, "windowfocus", "--sync", app.window)
    _xdotool(app, "type", "--delay", "30", text)
    return app.settle()


def _settled_change(app: RunningApp, before: np.ndarray, act: Callable[[], object]) -> np.ndarray:
    act()
    wait_until(lambda: not np.array_equal(app.screenshot(), before), 5, "the screen to change")
    return wait_settled(app.display)


def shoot_galculator(app: RunningApp, kind: str) -> dict[str, np.ndarray]:
    if kind == "twin":
        app.resize(*TWIN_SIZE["galculator"])
    park_pointer(app)
    return {"main": app.settle()}


def shoot_mousepad(app: RunningApp, kind: str) -> dict[str, np.ndarray]:
    park_pointer(app)
    main = type_text(app, NOTE_TEXT)
    menu = _settled_change(app, main, lambda: keys(app, "F10"))  # F10 opens the menubar's first menu (File)
    return {"main": main, "file-menu": menu}


_CELL: dict[str, np.ndarray] = {}  # the healthy frame's "Lyon" cell text, found again on the other drifts


def word_box(frame: np.ndarray, word: str) -> tuple[int, int, int, int]:
    """Where Tesseract reads `word` on the (healthy) frame: x, y, w, h."""
    import pytesseract

    data = pytesseract.image_to_data(frame, output_type=pytesseract.Output.DICT)
    for i, text in enumerate(data["text"]):
        if text.strip() == word:
            return data["left"][i], data["top"][i], data["width"][i], data["height"][i]
    raise RuntimeError(f"{word!r} not read on the screen")


def cell_centre(frame: np.ndarray, kind: str) -> tuple[int, int]:
    """The centre of row 1's city cell ("Lyon"): read on the healthy frame, matched (scale 1 or 1.25) elsewhere."""
    gray = cv2.cvtColor(frame, cv2.COLOR_RGB2GRAY)
    if kind == "healthy":
        x, y, w, h = word_box(frame, "Lyon")
        _CELL["lyon"] = gray[y - 2 : y + h + 2, x - 2 : x + w + 2].copy()
        return x + w // 2, y + h // 2
    best = (-1.0, (0, 0))
    for f in (1.0, 1.25):
        tmpl = cv2.resize(_CELL["lyon"], None, fx=f, fy=f, interpolation=cv2.INTER_LINEAR)
        res = cv2.matchTemplate(gray, tmpl, cv2.TM_CCOEFF_NORMED)
        _, score, _, (mx, my) = cv2.minMaxLoc(res)
        if score > best[0]:
            best = (score, (mx + tmpl.shape[1] // 2, my + tmpl.shape[0] // 2))
    if best[0] < 0.7:
        raise RuntimeError(f"row 1's city cell not found on the {kind} frame (best {best[0]:.2f})")
    return best[1]


def shoot_sqlitebrowser(app: RunningApp, kind: str) -> dict[str, np.ndarray]:
    park_pointer(app)
    before = app.settle()
    # An uncommitted edit (row 1's city), so Write Changes is enabled as the recording saw it; then the pointer leaves.
    x, y = cell_centre(before, kind)
    _xdotool(app, "windowfocus", "--sync", app.window)
    _xdotool(app, "mousemove", "--sync", str(x), str(y))
    hovered = app.settle()
    for _attempt in range(3):  # a click right after the window maps can be lost: retry until the cell is selected
        _xdotool(app, "click", "1")
        try:
            selected = _settled_change(app, hovered, lambda: None)
            break
        except TimeoutError:
            continue
    else:
        raise RuntimeError(f"sqlitebrowser ({kind}) never showed the clicked cell selected")
    _settled_change(app, selected, lambda: keys(app, "P", "a", "r", "i", "s", "Return"))
    park_pointer(app)
    return {"main": app.settle()}


def make_db(folder: Path, twin: bool) -> Path:
    path = folder / "clinic.db"
    con = sqlite3.connect(path)
    rows = PATIENTS + ([("Carol Nguyen", "Hue")] if twin else [])
    con.executescript("create table patients(id integer primary key, name text not null, city text);")
    con.executemany("insert into patients(name, city) values (?, ?)", rows)
    con.commit()
    con.close()
    return path


SHOOT = {"galculator": shoot_galculator, "mousepad": shoot_mousepad, "sqlitebrowser": shoot_sqlitebrowser}


def _launch_and_shoot(name: str, kind: str, drift: Drift, attempts: int = 3) -> tuple[dict[str, np.ndarray], tuple]:
    """One launch of the app under `drift`, its screens shot; a launch whose input was lost is tried again."""
    for attempt in range(attempts):
        with tempfile.TemporaryDirectory(prefix="drift-corpus-") as tmp:
            args = ["-t", "patients", str(make_db(Path(tmp), kind == "twin"))] if name == "sqlitebrowser" else []
            app = start_app(name, args, drift)
            try:
                return SHOOT[name](app, kind), app.refresh_geometry()
            except (RuntimeError, TimeoutError) as e:
                if attempt == attempts - 1:
                    raise
                print(f"{name} {kind}: {e}; launching again", flush=True)
            finally:
                app.stop()
    raise AssertionError("unreachable")


def capture_app(name: str, out: Path) -> dict[str, dict]:
    """Every drift kind of one app: frames written to out/<app>/<kind>-<screen>.png; returns what was captured."""
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    meta: dict[str, dict] = {}
    for kind, (drift, how) in drifts_for(name).items():
        shots, geometry = _launch_and_shoot(name, kind, drift)
        files = {}
        for screen, frame in shots.items():
            files[screen] = f"{kind}-{screen}.png"
            cv2.imwrite(
                str(folder / files[screen]), cv2.cvtColor(frame, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_PNG_COMPRESSION, 9]
            )
        meta[kind] = {"size": list(drift.screen), "how": how, "frames": files, "window": list(geometry)}
        if drift.position is not None:
            meta[kind]["offset"] = list(drift.position)
        print(f"{name} {kind}: window {geometry}, {', '.join(files.values())}", flush=True)
    (folder / "capture.json").write_text(json.dumps(meta, indent=1) + "\n")
    return meta


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("command", choices=("capture", "build"))
    ap.add_argument("--app", action="append", choices=sorted(SHOOT), help="only this app (repeatable)")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument(
        "--force", action="store_true", help="capture even though CORPUS_READY says the corpus is committed"
    )
    args = ap.parse_args(argv)
    apps = args.app or sorted(SHOOT)
    if args.command == "capture":
        if (args.out / "CORPUS_READY").exists() and not args.force:
            print(
                f"{args.out / 'CORPUS_READY'} exists: the corpus is committed and copied; pass --force to re-capture",
                file=sys.stderr,
            )
            return 2
        for name in apps:
            capture_app(name, args.out)
        return 0
    from drift_annotations import build_app

    for name in apps:
        build_app(name, args.out / name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
