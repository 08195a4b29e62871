"""A tiny Tk app that saves a text file, for recording with `flow record --watch-file`.

    python tests/support/note_app.py FILE READY

A "Note" field and a Save button: Save writes `Note: <text>` and a newline to FILE
(atomically). READY is written once the window is drawn. The window sits at +0+0.
"""

from __future__ import annotations

import os
import sys
import tkinter as tk
from pathlib import Path

FONT = ("DejaVu Sans", -20)
ENTRY = (120, 30, 360, 40)  # x, y, w, h
SAVE = (120, 100, 120, 44)


def main(path: Path, ready: Path) -> None:
    root = tk.Tk()
    root.title("notes")
    root.geometry("640x300+0+0")
    root.configure(bg="#f4f4f4")
    tk.Label(root, text="Note", font=FONT, bg="#f4f4f4", anchor="w").place(x=30, y=30, width=80, height=40)
    entry = tk.Entry(
        root,
        font=FONT,
        relief="flat",
        bd=8,
        highlightthickness=1,
        highlightbackground="#707070",
        highlightcolor="#707070",
        insertofftime=0,
    )
    entry.place(x=ENTRY[0], y=ENTRY[1], width=ENTRY[2], height=ENTRY[3])

    def select_all(_event: tk.Event) -> str:
        entry.select_range(0, "end")
        entry.icursor("end")
        return "break"

    entry.bind("<Control-a>", select_all)
    saved = tk.Label(root, text="", font=FONT, bg="#f4f4f4", anchor="w")
    saved.place(x=30, y=180, width=560, height=40)

    def save() -> None:
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(f"Note: {entry.get()}\n", encoding="utf-8")
        os.replace(tmp, path)
        saved.configure(text=f"Saved to {path.name}")

    tk.Button(
        root,
        text="Save",
        font=FONT,
        command=save,
        relief="flat",
        bd=0,
        bg="#dcdcdc",
        activebackground="#dcdcdc",
        highlightthickness=1,
        highlightbackground="#707070",
    ).place(x=SAVE[0], y=SAVE[1], width=SAVE[2], height=SAVE[3])
    root.wait_visibility(root)
    root.update_idletasks()
    root.after_idle(lambda: ready.write_text(str(os.getpid())))
    root.mainloop()


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
