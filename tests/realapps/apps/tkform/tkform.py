"""A patient-intake form in Tk: labelled Patient and Clinic entries and a Save button that adds a row to SQLite.

    python tkform.py DB [--patient TEXT] [--clinic TEXT] [--options FILE] [--scaling FACTOR]

--patient/--clinic prefill a field (someone left a value there); --options reads a Tk option database (the dark
look is dark.options beside this file); --scaling multiplies `tk scaling` (fonts and the window are sized in points,
so everything grows with it). The window has a fixed size.
"""

from __future__ import annotations

import argparse
import sqlite3
import tkinter as tk
from tkinter import font

BASE_SCALING = 96 / 72  # pixels per point on a 96 dpi screen: the same on every Xvnc, whatever it reports
SIZE_PT = (330, 120)  # the window, in points


def save(db: str, patient: str, clinic: str) -> int:
    with sqlite3.connect(db) as c:
        c.execute("CREATE TABLE IF NOT EXISTS patients(id INTEGER PRIMARY KEY, patient TEXT, clinic TEXT)")
        return c.execute("INSERT INTO patients(patient, clinic) VALUES (?, ?)", (patient, clinic)).lastrowid


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db")
    parser.add_argument("--patient", default="")
    parser.add_argument("--clinic", default="")
    parser.add_argument("--options", default=None, help="a Tk option database file (e.g. a dark look)")
    parser.add_argument("--scaling", type=float, default=1.0)
    ns = parser.parse_args()

    root = tk.Tk(className="tkform")
    root.title("Patient intake")
    root.tk.call("tk", "scaling", BASE_SCALING * ns.scaling)
    # Tk's X11 fonts are sized in pixels, which `tk scaling` leaves alone: size them in points instead
    for name in ("TkDefaultFont", "TkTextFont", "TkHeadingFont", "TkMenuFont"):
        font.nametofont(name).configure(family="DejaVu Sans", size=10)
    root.option_add("*insertOffTime", 0)  # a steady caret: a blinking one keeps the screen from ever settling
    if ns.options:
        root.option_readfile(ns.options)

    form = tk.Frame(root, padx="9p", pady="7p")
    form.pack(fill="both", expand=True)
    entries = {}
    for row, (label, value) in enumerate((("Patient", ns.patient), ("Clinic", ns.clinic))):
        tk.Label(form, text=label).grid(row=row, column=0, sticky="w", padx=(0, "7p"), pady="3p")
        entry = tk.Entry(form, width=28)
        entry.insert(0, value)
        entry.grid(row=row, column=1, sticky="we", pady="3p")
        entries[label] = entry
    status = tk.Label(form, text="")
    status.grid(row=2, column=0, columnspan=2, sticky="w", pady=("6p", 0))

    def on_save() -> None:
        patient, clinic = entries["Patient"].get().strip(), entries["Clinic"].get().strip()
        if not patient or not clinic:
            status.configure(text="Both fields are required")
            return
        number = save(ns.db, patient, clinic)
        status.configure(text=f"Record {number} saved")

    tk.Button(form, text="Save", width=8, command=on_save).grid(row=2, column=1, sticky="e", pady=("6p", 0))
    form.columnconfigure(1, weight=1)

    width, height = (int(root.winfo_fpixels(f"{v}p")) for v in SIZE_PT)
    root.geometry(f"{width}x{height}+0+0")
    root.resizable(False, False)
    root.mainloop()


if __name__ == "__main__":
    main()
