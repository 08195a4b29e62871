r"""Is a typed value what the field shows? One rule for words and numbers (docs/bundle.md, "Readback").

OCR is compared with the typed value character by character after the same
canonical form is taken of both: case folded, spaces dropped, what a cell or
field border reads as (`| [ ] ( ) { } ' " \` , . : ; _`) stripped from the
ends (never `-` or `+`: a sign is part of a number), and the look-alike glyphs
Tesseract confuses mapped to one class (`o`→`0`, `i l | !`→`1`, `s`→`5`,
`b`→`8`, `z`→`2`, `,`→`.`). Nothing else is tolerated: "2arol Nguyen]" is not
"Carol Nguyen", "1250.60" is not "1250.50", "12.5" is not "12.50". A field too
narrow for its value shows it elided ("Carol …"): a read ending in an ellipsis
matches when what it shows, at least ELIDED_MIN characters, is the value's
beginning. A field's editor too narrow for its value scrolls it to the end it
was typed at ("erine Johnson" in a Qt table cell, "atherine Johnson" in a GTK
entry at scale 1.25): read from a field whose text is proven scrolled
(`scrolled`, `vision.scrolled`: its first glyph cut at its face's very edge, or
the text flush against both ends of the text area inside its padding, its first
column a cut — a value typed short shows whole with room to spare), a read
shorter than the value matches when it is the value's end and shows at least
SCROLLED_SHARE of it and SCROLLED_MIN characters or more, by the same exact
rule; the first character read may be what the field's edge left of a cut
glyph ("prine Johnson"; "<atherine Johnson", as long as the value, only when
that first character is no letter or digit: "2arol Nguyen" is a misread value). A character outside ASCII
(ü, Ω, 東) is outside what the OCR model reads: it matches any one character at
its place, so the value's length and every other character are still proven
("Zürich Müller" is read "Zirich Miller").
"""

from __future__ import annotations

import re

from openadapt_flow.vision.ocr import TextMatch, Word, phrases

ELIDED_MIN = 3
SCROLLED_MIN = 8
SCROLLED_SHARE = 0.6
_FRAME = "|[](){}'\"`"
_BORDER = _FRAME + ",.:;_"
_LOOKALIKE = str.maketrans({"o": "0", "i": "1", "l": "1", "|": "1", "!": "1", "s": "5", "b": "8", "z": "2", ",": "."})
_ELLIPSIS = re.compile(r"(\.{2,}|…)$")


def canonical(text: str) -> str:
    """The form a typed value and its reading are compared in."""
    tight = "".join(text.casefold().split()).strip(_BORDER)
    return tight.translate(_LOOKALIKE)


def _same(want: str, got: str) -> bool:
    """Equal, a character outside ASCII in `want` matching any one character of `got` at its place."""
    return len(want) == len(got) and all(w == g or not w.isascii() for w, g in zip(want, got))


def shows(typed: str, read: str, append: bool = False, scrolled: bool = False) -> bool:
    """Does a field that reads `read` show `typed` (or, with `append`, end with it)? `scrolled`: the read is of a
    field whose text the field's left edge cuts (its editor scrolled to the end typed at)."""
    want = canonical(typed)
    if not want:
        return False
    got = canonical(read)
    if _same(want, got) or (append and _same(want, got[-len(want) :])):
        return True
    tail = "".join(read.split()).strip(_FRAME)  # an ellipsis' dots are kept
    if append:
        return False
    if _ELLIPSIS.search(tail):
        visible = canonical(_ELLIPSIS.sub("", tail))
        return len(visible) >= ELIDED_MIN and want.startswith(visible)
    if not scrolled or len(got) > len(want) or (len(got) == len(want) and got[:1].isalnum()):
        return False  # as long as the value, its first glyph read as a letter: a misread value shown whole
    shown = [got, got[1:]]  # the first glyph may be what the field's edge left of a cut one ('<' of a cut K)
    return any(len(s) >= max(SCROLLED_MIN, SCROLLED_SHARE * len(want)) and want.endswith(s) for s in shown)


def scrolled_note(typed: str, read: str, append: bool = False) -> str:
    """Said after a reading that matched only as the value's end (`shows` with `scrolled`): what it proves."""
    return "" if shows(typed, read, append) else ", its end: the field scrolled, its first glyph cut at the left"


def find_typed(words: list[Word], typed: str, append: bool = False, scrolled: bool = False) -> TextMatch | None:
    """The run of words on one line that shows `typed` exactly (by `shows`), the longest first; None if none does."""
    n = max(1, len(typed.split()))
    best: TextMatch | None = None
    for run in phrases([w for w in words if w.text.strip()]):
        for i in range(len(run)):
            for j in range(i + 1, min(len(run), i + n + 2) + 1):
                part = run[i:j]
                if shows(typed, " ".join(w.text for w in part), append, scrolled):
                    match = _as_match(part)
                    if best is None or len(match.text) > len(best.text):
                        best = match
    return best


def _as_match(words: list[Word]) -> TextMatch:
    x0, y0 = min(w.box[0] for w in words), min(w.box[1] for w in words)
    x1 = max(w.box[0] + w.box[2] for w in words)
    y1 = max(w.box[1] + w.box[3] for w in words)
    conf = sum(w.conf for w in words) / len(words)
    return TextMatch(" ".join(w.text for w in words), 100.0, (x0, y0, x1 - x0, y1 - y0), conf)
