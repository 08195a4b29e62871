"""The demo target: a small Tk invoice-entry app whose system of record is SQLite.

Run as ``python -m openadapt_flow.demo.app --db PATH [--variant normal|dark|shifted|twin]``.
Every widget is placed at fixed pixel coordinates in an 800x600 window at the
top-left of the screen, so recorded templates stay valid across runs; the
variants perturb exactly one thing each (theme, layout, a duplicated button, and
`hover`: buttons light up under the pointer and a status bar shows a tip for them,
as most desktop toolkits do).
Nothing here imports the rest of openadapt_flow: it stands for a foreign app.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import tkinter as tk
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TypeVar

VARIANTS = ("normal", "dark", "shifted", "twin", "hover")
W = TypeVar("W", bound=tk.Widget)
FONT = "DejaVu Sans"
SCHEMA = "CREATE TABLE IF NOT EXISTS invoices (id INTEGER PRIMARY KEY, vendor TEXT, amount REAL, created_at TEXT)"


HOVER_BG = "#8fc1f5"  # the hover variant's button under the pointer
TIPS = {
    "list.new": "Opens an empty invoice form",
    "form.save": "Stores the invoice permanently",
    "saved.back": "Returns to the overview",
}


@dataclass(frozen=True)
class Theme:
    bg: str
    fg: str
    field_bg: str
    button_bg: str
    error: str
    banner_bg: str
    outline: str


LIGHT = Theme(
    bg="#f4f4f4",
    fg="#101010",
    field_bg="#ffffff",
    button_bg="#dcdcdc",
    error="#b00020",
    banner_bg="#2d5fa0",
    outline="#707070",
)
DARK = Theme(
    bg="#1c1c1c",
    fg="#ececec",
    field_bg="#2e2e2e",
    button_bg="#3c3c3c",
    error="#ff7b7b",
    banner_bg="#2d5fa0",
    outline="#6a6a6a",
)

# Boxes are (x, y, w, h) in window pixels; the window sits at +0+0, so these are screen pixels too.
NORMAL_LAYOUT: dict[str, tuple[int, int, int, int]] = {
    "list.title": (40, 24, 400, 44),
    "list.new": (40, 90, 180, 44),
    "list.rows": (40, 160, 700, 420),
    "form.title": (40, 24, 400, 44),
    "form.vendor_label": (40, 110, 120, 40),
    "form.vendor": (170, 110, 320, 40),
    "form.amount_label": (40, 180, 120, 40),
    "form.amount": (170, 180, 320, 40),
    "form.save": (170, 260, 120, 44),
    "form.error": (170, 320, 500, 36),
    "saved.title": (40, 24, 600, 44),
    "saved.detail": (40, 90, 600, 40),
    "saved.back": (40, 160, 120, 44),
}


def layout_for(variant: str) -> dict[str, tuple[int, int, int, int]]:
    """Widget boxes for a variant; `shifted` drifts every block by a different offset and widens fields."""
    boxes = dict(NORMAL_LAYOUT)
    if variant == "shifted":
        # Rows get 14 px more padding each, so Save drifts 28 px further than Vendor: an identity
        # box around the Vendor entry has to tolerate that much, and Save leaves its search window.
        drift = {
            "list.title": (30, 56),
            "list.new": (64, 70),
            "form.title": (30, 56),
            "form.vendor_label": (52, 68),
            "form.vendor": (52, 68),
            "form.amount_label": (52, 82),
            "form.amount": (52, 82),
            "form.save": (52, 96),
            "form.error": (52, 96),
            "saved.title": (30, 56),
            "saved.detail": (30, 60),
            "saved.back": (72, 84),
        }
        for key, (dx, dy) in drift.items():
            x, y, w, h = boxes[key]
            grow = 40 if key in ("form.vendor", "form.amount") else 0
            boxes[key] = (x + dx, y + dy, w + grow, h)
        boxes["list.rows"] = (70, 256, 700, 320)  # moved and shortened to stay inside the window
    if variant == "twin":
        # Two identical Save buttons straddling the recorded spot, equally far from it.
        x, y, w, h = boxes["form.save"]
        boxes["form.save"] = (x, y - 26, w, h)
        boxes["form.save_twin"] = (x, y + 26, w, h)
        ex, ey, ew, eh = boxes["form.error"]
        boxes["form.error"] = (ex, ey + 40, ew, eh)
    return boxes


class InvoiceApp:
    """Three screens (list, form, saved) shown one at a time; each change is drawn at once."""

    def __init__(self, root: tk.Tk, db: Path, variant: str, refute_save: bool, geometry_file: Path | None) -> None:
        self.root, self.db, self.variant = root, db, variant
        self.refute_save, self.geometry_file = refute_save, geometry_file
        self.theme = DARK if variant == "dark" else LIGHT
        self.boxes = layout_for(variant)
        self.geometry: dict[str, dict[str, list[int]]] = {}
        self.widgets: dict[str, tk.Widget] = {}
        self.screens: dict[str, tk.Frame] = {}
        self.current = ""
        root.configure(bg=self.theme.bg)
        if variant == "shifted":
            banner = tk.Label(
                root,
                text="Accounts Payable",
                bg=self.theme.banner_bg,
                fg="#ffffff",
                font=(FONT, -18, "bold"),
                anchor="w",
                padx=16,
            )
            banner.place(x=0, y=0, width=800, height=48)
        for name in ("list", "form", "saved"):
            self.screens[name] = tk.Frame(root, bg=self.theme.bg, highlightthickness=0, bd=0)
        self.status = tk.Label(root, text="", bg=self.theme.bg, fg=self.theme.fg, anchor="w", font=(FONT, -18), bd=0)
        if variant == "hover":
            self.status.place(x=40, y=560, width=700, height=30)
        self._build()

    # -- widgets -------------------------------------------------------------

    def _label(self, key: str, text: str, size: int = -20, bold: bool = False, fg: str | None = None) -> tk.Label:
        screen = self.screens[key.split(".")[0]]
        w = tk.Label(
            screen,
            text=text,
            bg=self.theme.bg,
            fg=fg or self.theme.fg,
            anchor="w",
            justify="left",
            font=(FONT, size, "bold" if bold else "normal"),
            bd=0,
            highlightthickness=0,
        )
        return self._put(key, w)

    def _button(self, key: str, text: str, command: Callable[[], None]) -> tk.Button:
        t = self.theme
        screen = self.screens[key.split(".")[0]]
        # Hover/active colours equal the resting ones, so a template never depends on where the pointer
        # rests. Flat with a thin outline: a raised relief's bright bevel on the dark theme boxes the
        # label in, and Tesseract then skips it as a graphic.
        hover = self.variant == "hover"
        w = tk.Button(
            screen,
            text=text,
            command=command,
            font=(FONT, -20),
            bg=t.button_bg,
            fg=t.fg,
            activebackground=HOVER_BG if hover else t.button_bg,
            activeforeground=t.fg,
            relief="flat",
            bd=0,
            highlightthickness=1,
            highlightbackground=t.outline,
            highlightcolor=t.outline,
            takefocus=0,
            cursor="",
        )
        if hover and key in TIPS:
            w.bind("<Enter>", lambda _e: self.status.configure(text=TIPS[key]), add="+")
            w.bind("<Leave>", lambda _e: self.status.configure(text=""), add="+")
        return self._put(key, w)

    def _entry(self, key: str) -> tk.Entry:
        t = self.theme
        # A flat border in the field colour pads the text away from the 1 px outline (the highlight ring,
        # same colour focused or not), so OCR does not read the outline as a glyph ("[ACME").
        w = tk.Entry(
            self.screens["form"],
            font=(FONT, -20),
            bg=t.field_bg,
            fg=t.fg,
            insertbackground=t.fg,
            relief="flat",
            bd=8,
            highlightthickness=1,
            highlightbackground=t.outline,
            highlightcolor=t.outline,
            insertofftime=0,
            insertwidth=2,
            selectbackground=t.button_bg,
            selectforeground=t.fg,
        )
        # Tk binds Control-a to "line start"; replay selects all with it before typing, as on other desktops.
        w.bind("<Control-a>", _select_all)
        return self._put(key, w)

    def _put(self, key: str, widget: W) -> W:
        x, y, w, h = self.boxes[key]
        widget.place(x=x, y=y, width=w, height=h)
        self.widgets[key] = widget
        return widget

    def _build(self) -> None:
        self._label("list.title", "Invoices", size=-30, bold=True)
        self._button("list.new", "New invoice", self.show_form)
        self.rows = self._label("list.rows", "", size=-20)
        self.rows.configure(anchor="nw")
        self._label("form.title", "New invoice", size=-30, bold=True)
        self._label("form.vendor_label", "Vendor")
        self.vendor = self._entry("form.vendor")
        self._label("form.amount_label", "Amount")
        self.amount = self._entry("form.amount")
        self._button("form.save", "Save", self.save)
        if "form.save_twin" in self.boxes:
            self._button("form.save_twin", "Save", self.save)
        self.error = self._label("form.error", "", size=-18, fg=self.theme.error)
        self.saved_title = self._label("saved.title", "", size=-30, bold=True)
        self.saved_detail = self._label("saved.detail", "")
        self._button("saved.back", "Back", self.show_list)

    # -- screens -------------------------------------------------------------

    def _show(self, name: str) -> None:
        for other, frame in self.screens.items():
            if other != name:
                frame.place_forget()
        self.screens[name].place(x=0, y=0, width=800, height=600)
        self.screens[name].lower()  # below the shifted variant's banner and the hover variant's status bar
        self.status.configure(text="")
        self.current = name
        self._drawn()
        self._record_geometry(name)

    def _drawn(self) -> None:
        """Return once the X server has drawn the screen: the geometry file naming a screen promises its pixels.

        Tk draws in idle handlers and again on the server's Expose events, and Xlib buffers the requests; under load
        a reader told "list" could capture the new screen's bare background, still for two captures in a row. A
        round trip (XQueryPointer) flushes the drawing and brings the Expose events; `update` draws them; a second
        round trip returns once the server has those pixels too.
        """
        mapped = self.root.winfo_viewable()
        self.root.update_idletasks()
        if not mapped:
            return  # the first screen, before the window is mapped: `main` writes the ready file once it is drawn
        self.root.winfo_pointerxy()
        self.root.update()
        self.root.winfo_pointerxy()

    def _record_geometry(self, name: str) -> None:
        if self.geometry_file is None:
            return
        self.geometry[name] = {
            key.split(".", 1)[1]: [w.winfo_rootx(), w.winfo_rooty(), w.winfo_width(), w.winfo_height()]
            for key, w in self.widgets.items()
            if key.startswith(name + ".")
        }
        doc = {"variant": self.variant, "screen": self.current, "widgets": self.geometry}
        _write_atomic(self.geometry_file, json.dumps(doc, indent=1))

    def show_list(self) -> None:
        with self._connect() as db:
            rows = db.execute("SELECT id, vendor, amount FROM invoices ORDER BY id DESC LIMIT 12").fetchall()
        text = "\n".join(f"#{i}   {v}   {a:.2f}" for i, v, a in rows)
        self.rows.configure(text=text or "No invoices yet")
        self._show("list")

    def show_form(self) -> None:
        for entry in (self.vendor, self.amount):
            entry.delete(0, "end")
        self.error.configure(text="")
        self.root.focus_set()
        self._show("form")

    def save(self) -> None:
        vendor = self.vendor.get().strip()
        if not vendor:
            self.error.configure(text="Vendor is required")
            return
        try:
            amount = float(self.amount.get().strip())
        except ValueError:
            self.error.configure(text="Amount must be a number")
            return
        with self._connect() as db:
            if self.refute_save:
                # Claims success without writing: the effect verifier must catch this.
                (last,) = db.execute("SELECT coalesce(max(id), 0) FROM invoices").fetchone()
                number = last + 1
            else:
                now = datetime.now(timezone.utc).isoformat(timespec="seconds")
                cur = db.execute(
                    "INSERT INTO invoices (vendor, amount, created_at) VALUES (?, ?, ?)", (vendor, amount, now)
                )
                number = cur.lastrowid
        self.saved_title.configure(text=f"Saved invoice #{number}")
        self.saved_detail.configure(text=f"{vendor}   {amount:.2f}")
        self._show("saved")

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        # One short-lived connection per read/write, committed and closed, so readers see rows at once.
        db = sqlite3.connect(self.db, timeout=5)
        try:
            with db:
                db.execute(SCHEMA)
                yield db
        finally:
            db.close()


def _select_all(event: "tk.Event[tk.Entry]") -> str:
    entry = event.widget
    entry.select_range(0, "end")
    entry.icursor("end")
    return "break"


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m openadapt_flow.demo.app", description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, required=True, help="SQLite file; table invoices is created if missing")
    ap.add_argument("--variant", choices=VARIANTS, default="normal")
    ap.add_argument("--ready-file", type=Path, help="written once the first screen is drawn")
    ap.add_argument("--geometry-file", type=Path, help="JSON of widget boxes (screen pixels), rewritten per screen")
    ap.add_argument("--refute-save", action="store_true", help="show success on Save but write nothing")
    ap.add_argument("--position", default="0,0", help="X,Y of the window on the screen (a monitor's origin)")
    args = ap.parse_args(argv)
    x, y = (int(v) for v in args.position.split(","))

    root = tk.Tk(className="InvoiceDemo")
    root.title("Invoices")
    root.geometry(f"800x600+{x}+{y}")
    root.resizable(False, False)
    app = InvoiceApp(root, args.db, args.variant, args.refute_save, args.geometry_file)
    app.show_list()  # creates the table if missing, before the ready file says anyone may read it

    def ready() -> None:
        app._drawn()
        if args.ready_file is not None:
            _write_atomic(args.ready_file, json.dumps({"pid": os.getpid(), "variant": args.variant}))

    root.wait_visibility(root)
    root.update_idletasks()
    root.after_idle(ready)
    root.mainloop()


if __name__ == "__main__":
    main()
