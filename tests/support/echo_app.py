"""A tiny Tk app that lets backend tests read their input back.

    python tests/support/echo_app.py OUTDIR

- an Entry: on <Return> its text is written to OUTDIR/text.txt (atomically);
  Ctrl+A selects all, as in most apps (Tk's own X11 binding moves to line start);
- a Canvas with a red marker square: every pointer event on it is appended to
  OUTDIR/events.log as `press|release|double|motion BUTTON X_ROOT Y_ROOT`, and
  every left press toggles the canvas background (a visible change to wait on);
- OUTDIR/keys.log: every key press the Entry sees (key code, keysym, character), for diagnosis;
- OUTDIR/ready.json, written once the window is drawn: the root-pixel boxes
  [x, y, w, h] of "entry", "canvas" and "marker". The window sits at +0+0.
"""

from __future__ import annotations

import json
import os
import sys
import tkinter as tk
from pathlib import Path

MARKER = (200, 120, 24, 24)  # x, y, w, h inside the canvas
BACKGROUNDS = ("#f0f0f0", "#4060c0")


def main(outdir: Path) -> None:
    root = tk.Tk()
    root.title("echo")
    root.geometry("640x420+0+0")
    entry = tk.Entry(root, font=("DejaVu Sans", 14), insertofftime=0)  # no blinking: the screen stays still
    entry.pack(fill="x", padx=10, pady=10)
    canvas = tk.Canvas(root, width=600, height=320, background=BACKGROUNDS[0], highlightthickness=0)
    canvas.pack(padx=10, pady=(0, 10))
    mx, my, mw, mh = MARKER
    canvas.create_rectangle(mx, my, mx + mw - 1, my + mh - 1, fill="#ff0000", outline="#ff0000")
    log = (outdir / "events.log").open("a", encoding="utf-8", buffering=1)
    state = {"bg": 0}

    def record(kind: str, event: tk.Event) -> None:
        log.write(f"{kind} {getattr(event, 'num', '?')} {event.x_root} {event.y_root}\n")

    def on_press(event: tk.Event) -> None:
        record("press", event)
        if event.num == 1:
            state["bg"] ^= 1
            canvas.configure(background=BACKGROUNDS[state["bg"]])

    def on_double(event: tk.Event) -> None:
        # A matching Double binding swallows the second press, so log and toggle for it here.
        on_press(event)
        record("double", event)

    def on_return(_event: tk.Event) -> None:
        tmp = outdir / "text.txt.tmp"
        tmp.write_text(entry.get(), encoding="utf-8")
        os.replace(tmp, outdir / "text.txt")

    def on_select_all(_event: tk.Event) -> str:
        entry.select_range(0, "end")
        entry.icursor("end")
        return "break"

    canvas.bind("<ButtonPress>", on_press)
    canvas.bind("<ButtonRelease>", lambda e: record("release", e))
    canvas.bind("<Double-Button-1>", on_double)
    canvas.bind("<B1-Motion>", lambda e: record("motion", e))
    keys = (outdir / "keys.log").open("a", encoding="utf-8", buffering=1)
    entry.bind("<KeyPress>", lambda e: keys.write(f"press {e.keycode} {e.keysym} {e.char!r}\n"), add="+")
    entry.bind("<Return>", on_return)
    entry.bind("<Control-a>", on_select_all)

    def announce() -> None:
        root.update_idletasks()

        def box(w: tk.Misc) -> list[int]:
            return [w.winfo_rootx(), w.winfo_rooty(), w.winfo_width(), w.winfo_height()]

        cx, cy, _, _ = box(canvas)
        info = {"entry": box(entry), "canvas": box(canvas), "marker": [cx + mx, cy + my, mw, mh], "pid": os.getpid()}
        tmp = outdir / "ready.json.tmp"
        tmp.write_text(json.dumps(info))
        os.replace(tmp, outdir / "ready.json")

    entry.focus_force()
    root.wait_visibility()
    root.after_idle(announce)
    root.mainloop()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
