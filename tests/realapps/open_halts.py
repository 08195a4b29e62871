"""The corpus cases that still halt (safely) today, each with the reason a user can act on — issue 23's list of what
is left. `judge` lets these halt instead of failing the suite; the figure still counts them as not replayed
unedited, and a case here that completes is simply counted as completed. Keys: (app, the drift's name as it
begins). Remove a line when its case completes in `make realapps` three times in a row."""

from __future__ import annotations

OPEN_HALTS: dict[tuple[str, str], str] = {
    ("nedit", "scale 1.25"): "the blank-page click is anchored on a fragment of the text above ('ist'), and scale 1.25 "
    "swaps the 6x13 bitmap font for 8x16: the template rung refuses it; give the step a landmark",
}


def open_halt(app: str, drift: str) -> str | None:
    """Why this case may still halt today (None: it must complete)."""
    return next((why for (a, d), why in OPEN_HALTS.items() if a == app and drift.startswith(d)), None)
