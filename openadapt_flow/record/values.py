"""What a recording's values are: the text typed, the values the watched store received, and the names (step ids,
params) made from them."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from typing import Any, Protocol

from openadapt_flow.bundle.params import parse_number
from openadapt_flow.fixture.recorder import Recording
from openadapt_flow.fixture.textfield import EditBuffer
from openadapt_flow.verify.filechange import hunks, text_lines
from openadapt_flow.verify.readers import NAMED_PLACEHOLDER
from openadapt_flow.vision.ocr import normalise


class Typed(Protocol):
    """A field a value was typed into, under the param it became."""

    param: str
    value: str


def typed_values(rec: Recording) -> set[str]:
    """Every value typed in the recording, and each word of it, normalised (as typed, whatever the field held)."""
    out: set[str] = set()
    for b in rec.batches:
        buf = EditBuffer()
        for g in b.edits:
            buf.apply(g)
        value = normalise(buf.text)
        out.update(v for v in [value, *value.split()] if len(v) >= 2)
    return out


def typed_texts(rec: Recording) -> list[str]:
    """Each run of text typed in the recording, whole, as typed: no screen fact may hold it or a word of it, whichever
    step typed it (a word the next step types is on no screen a replay of this one shows)."""
    out = []
    for b in rec.batches:
        buf = EditBuffer()
        for g in b.edits:
            buf.apply(g)
        if buf.text.strip():
            out.append(buf.text)
    return out


def stamp_prefix(line: str, now: datetime) -> str | None:
    """The start of a changed line that holds the date of the save (today or yesterday, UTC or local, as
    2026-12-07, 2026/12/07, 07.12.2026, 07/12/2026 or 12/07/2026), up to that date: an app's bookkeeping (a
    catalogue's `PO-Revision-Date`) that no replay writes the same. None when it holds no such date, or the start
    is too short to name the line (fewer than 3 characters)."""
    days = {d for t in (now, now.astimezone()) for d in (t.date(), t.date() - timedelta(days=1))}
    forms = [d.strftime(f) for d in days for f in ("%Y-%m-%d", "%Y/%m/%d", "%d.%m.%Y", "%d/%m/%Y", "%m/%d/%Y")]
    at = min((i for i in (line.find(x) for x in forms) if i >= 0), default=-1)
    return line[:at] if at >= 0 and len(line[:at].strip()) >= 3 else None


def file_effect(change: dict[str, Any], fields: Sequence[Typed], now: datetime | None = None) -> dict[str, Any] | None:
    """A watched file's change as a file effect. The whole change (`changes:`): the line diff of the file before and
    after the step as hunks, each typed value in them replaced by its `{param}` (the longest first), a line holding
    none left literal; a hunk inside the file (not an append at its end) also names the non-blank line above it
    (`after`), so a value saved into another entry is told apart. When no hunk holds a typed value although values
    were typed (the app saved something derived from them), or a line already holds a `{name}` of its own, the
    count of the longest typed value the new content holds more often than before (`contains: "{param}"`); else
    the file's existence when the step created it. A changed line holding no typed value but the save's date (an
    app's bookkeeping) is declared `volatile:` by its start, and left out of the diff (`now`: the save's time)."""
    if change.get("unreadable"):
        return None
    new, old = change.get("content") or "", change.get("previous") or ""
    typed = sorted((f for f in fields if f.value.strip()), key=lambda f: len(f.value), reverse=True)
    cut = hunks(text_lines(old), text_lines(new))
    volatile = sorted(
        {
            p
            for h in cut
            for x in (*h.removed, *h.added)
            if not any(f.value in x for f in typed)
            for p in [stamp_prefix(x, now or datetime.now(timezone.utc))]
            if p is not None
        }
    )
    before = [x for x in text_lines(old) if not x.startswith(tuple(volatile))]
    cut = hunks(before, [x for x in text_lines(new) if not x.startswith(tuple(volatile))])

    def param(line: str) -> str:
        for f in typed:
            line = line.replace(f.value, "{" + f.param + "}")
        return line

    lines = [x for h in cut for x in (*h.removed, *h.added, *([h.above] if h.above is not None else []))]
    holds = any(f.value in x for f in typed for x in lines)
    if cut and (holds or not typed) and not any(NAMED_PLACEHOLDER.search(x) for x in lines):
        out = []
        for h in cut:
            hunk: dict[str, Any] = {"removed": [param(x) for x in h.removed], "added": [param(x) for x in h.added]}
            if h.at < len(before) and h.above is not None:  # inside the file: where it went matters
                hunk["after"] = param(h.above)
            out.append({k: v for k, v in hunk.items() if v != []})
        return {"kind": "file", "path": change["path"], "changes": out, **({"volatile": volatile} if volatile else {})}
    held = [f for f in fields if f.value.strip() and new.count(f.value) > old.count(f.value)]
    if held:
        f = max(held, key=lambda f: len(f.value))
        return {
            "kind": "file",
            "path": change["path"],
            "contains": "{" + f.param + "}",
            "expect": {"increase_by": new.count(f.value) - old.count(f.value)},
        }
    if change.get("previous") is None and change.get("content") is not None:
        return {"kind": "file", "path": change["path"], "expect": {"equals": 1}}
    return None


def typed_columns(rec: Recording) -> dict[str, Any]:
    """Every value the recording wrote, by its text, so a typed value can find the column (and type) it became."""
    out: dict[str, Any] = {}
    for b in rec.batches:
        for _, row in b.writes:
            for value in row.values():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    out.setdefault(f"{value}", value)
                    out.setdefault(f"{value:.2f}", value)
                elif isinstance(value, str):
                    out.setdefault(value.strip(), value)
    return out


def same(value: Any, typed: str) -> bool:
    if isinstance(value, str):
        return bool(typed.strip()) and value.strip() == typed.strip()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return float(typed) == float(value)
        except ValueError:
            return False
    return False


# a key step named by what the key does, not by the key (`save`, not `ctrl-s`)
KEY_NAMES = {
    "ctrl+s": "save",
    "ctrl+z": "undo",
    "ctrl+y": "redo",
    "ctrl+c": "copy",
    "ctrl+v": "paste",
    "ctrl+x": "cut",
    "ctrl+a": "select-all",
    "ctrl+p": "print",
    "ctrl+n": "new",
    "ctrl+o": "open",
}
PLAIN_NUMBER = re.compile(r"-?(0|[1-9]\d*)(\.\d+)?")  # no leading zero, sign or exponent: a number as people write one


def example_number(value: str) -> int | float | None:
    """An example value the user wrote as a plain number (`1250.50`), as that number; None for text ("02139",
    "+44 20", "1e3": their zeros, signs and letters are part of them)."""
    return parse_number(value) if PLAIN_NUMBER.fullmatch(value.strip()) else None


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", normalise(text)).strip("-")[:40].strip("-")


def param_slug(text: str) -> str:
    name = re.sub(r"[^a-z0-9]+", "_", normalise(text)).strip("_")
    return name if name and not name[0].isdigit() else f"p_{name}"
