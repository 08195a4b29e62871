"""The drift corpus's targets: per app, the widgets a recorded bundle would click, and per drift kind a person's seed.

Seeds were placed by looking at each frame (see scripts/drift_annotations.py
for how a seed becomes a measured box). A drift left out of `rules` is
("shift",): the healthy box moved by the drift's known offset, checked pixel
for pixel.
"""

from __future__ import annotations

from typing import Any


def _button(id_: str, label: str, seeds: dict[str, tuple[int, int]]) -> dict[str, Any]:
    rules = {d: ("flood", *xy) for d, xy in seeds.items()}
    return {"id": id_, "screen": "main", "what": f"the {label} button", "text": label, "rules": rules}


GALCULATOR = [
    _button("btn-1", "1", {"healthy": (14, 280), "dark": (14, 280), "scale125": (12, 294), "twin": (16, 334)}),
    _button("btn-2", "2", {"healthy": (79, 280), "dark": (79, 280), "scale125": (90, 294), "twin": (109, 334)}),
    _button("btn-times", "*", {"healthy": (209, 240), "dark": (209, 240), "scale125": (238, 254), "twin": (295, 279)}),
    _button("btn-equals", "=", {"healthy": (274, 300), "dark": (274, 300), "scale125": (312, 300), "twin": (388, 361)}),
]


def _menu(id_: str, label: str, screen: str, what: str, rough: dict[str, tuple[int, int, int, int]]) -> dict[str, Any]:
    rules = {d: ("ink", *r) for d, r in rough.items()}
    return {"id": id_, "screen": screen, "what": what, "text": label, "rules": rules}


# Menu items: the box is the row's drawn label (and shortcut, for items in the open menu), padded 3 px.
MOUSEPAD = [
    _menu(
        "menu-file",
        "File",
        "main",
        "the File menu in the menubar",
        {"healthy": (3, 3, 36, 18), "dark": (3, 3, 36, 18), "scale125": (2, 2, 45, 22)},
    ),
    _menu(
        "menu-search",
        "Search",
        "main",
        "the Search menu in the menubar",
        {"healthy": (82, 3, 58, 18), "dark": (82, 3, 58, 18), "scale125": (96, 2, 70, 22)},
    ),
    _menu(
        "menu-document",
        "Document",
        "main",
        "the Document menu in the menubar",
        {"healthy": (190, 3, 80, 18), "dark": (190, 3, 80, 18), "scale125": (225, 2, 100, 22)},
    ),
    _menu(
        "item-save",
        "Save",
        "file-menu",
        "File > Save (beside its near twins Save As... and Save All)",
        {"healthy": (20, 155, 280, 19), "dark": (20, 155, 280, 19), "scale125": (20, 174, 345, 22)},
    ),
    _menu(
        "item-save-as",
        "Save As...",
        "file-menu",
        "File > Save As...",
        {"healthy": (20, 180, 280, 19), "dark": (20, 180, 280, 19), "scale125": (20, 202, 345, 22)},
    ),
    _menu(
        "item-close-window",
        "Close Window",
        "file-menu",
        "File > Close Window",
        {"healthy": (20, 333, 280, 19), "dark": (20, 333, 280, 19), "scale125": (20, 372, 345, 22)},
    ),
]

# Toolbar items are borderless (ink); tabs and table cells have drawn borders (flood).
SQLITEBROWSER = [
    {
        "id": "write-changes",
        "screen": "main",
        "what": "the Write Changes toolbar button",
        "text": "Write Changes",
        "rules": {
            "healthy": ("ink", 292, 29, 112, 22),
            "dark": ("ink", 313, 37, 112, 20),
            "scale125": ("ink", 366, 37, 140, 26),
        },
    },
    {
        "id": "refresh",
        "screen": "main",
        "what": "the Refresh icon of the Browse Data toolbar (no label)",
        "text": None,
        "rules": {
            "healthy": ("ink", 205, 97, 26, 26),
            "dark": ("ink", 216, 105, 26, 26),
            "scale125": ("ink", 258, 125, 30, 28),
        },
    },
    {
        "id": "new-record",
        "screen": "main",
        "what": "the New Record icon of the Browse Data toolbar (no label)",
        "text": None,
        "rules": {
            "healthy": ("ink", 387, 98, 26, 26),
            "dark": ("none", "not on screen: the narrower dark toolbar puts it in its overflow menu (»)"),
            "scale125": ("none", "not on screen: the scaled toolbar puts it in its overflow menu (»)"),
        },
    },
    {
        "id": "tab-structure",
        "screen": "main",
        "what": "the Database Structure tab",
        "text": "Database Structure",
        "rules": {"healthy": ("flood", 8, 76), "dark": ("flood", 7, 80), "scale125": ("flood", 9, 94)},
    },
    {
        "id": "cell-carol",
        "screen": "main",
        "what": "row 3's name cell, 'Carol Nguyen'",
        "text": "Carol Nguyen",
        "rules": {
            "healthy": ("flood", 127, 242),
            "dark": ("flood", 139, 253),
            "scale125": ("flood", 157, 302),
            "twin": ("none", "two identical 'Carol Nguyen' cells (rows 3 and 4): no click is right"),
        },
    },
]

TARGETS: dict[str, list[dict[str, Any]]] = {
    "galculator": GALCULATOR,
    "mousepad": MOUSEPAD,
    "sqlitebrowser": SQLITEBROWSER,
}
