"""What a recorded step can be checked by: targets cut so they are unique, and screen facts read by OCR.

A fact is chosen only when it will judge the same way at replay: a word of three
or more letters read with confidence (a one-letter `a` is OCR's noise), not any
text the demonstration typed, before or after the step (that would tie the fact
to the recorded params, or want text a later step types), not a number (ids and
counters change per run), not one the engine's own matcher would find on the
other screen (a "new" word it would already have read before the input, a "gone"
one it would still read after), and stable across two recorded frames (a new
word still there once the pointer moved on; a gone word shown on the screen
before this input too and still gone after: a tooltip comes and goes by itself).

A result is the exception: what a final or consequential step shows is what
the demonstration was for, so it is checked numbers included (`result_fact`):
as `{param}` where it is a typed value, else as the recorded literal.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

import numpy as np

from openadapt_flow.vision.diff import changed_box
from openadapt_flow.vision.ocr import OcrEngine, Word, find_text, normalise
from openadapt_flow.vision.template import Box, Thresholds, find_template, intersect, pad_box

FACT_MIN_CONF = 85.0
FACT_MIN_LEN = 3
RESULT_MIN_CONF = 80.0
RESULT_PAD = 8  # px around the changed area read for a result
NAME_MIN_CONF = 85.0  # a word names a step or param only when read this surely
NAME_MIN_LEN = 3
NAME_WORDS = 3
LABEL_REACH = 320  # px left of a field searched for its label
FIELD_PART = 60  # px of an (empty, alike) field kept beside its label in a template
LABEL_SURE = 80.0  # a field's label read less surely than this at 1x is read again enlarged
GROW = 16  # px a template grows per try until it is unique on its screen
GROW_TRIES = 5
UNIQUE_MARGIN = 0.08  # the runner-up must score this much below the crop itself
TYPED_INSIDE_MIN = 4  # letters: a shorter typed word ("ab") inside a word read is chance, not the value
_EDGE = re.compile(r"^[^\w]+|[^\w]+$")


@dataclass(frozen=True)
class Fact:
    kind: str  # text_present | text_absent | region_changed | template_present
    text: str | None  # the text; a template_present's template path
    region: Box


def readable(words: list[Word], typed: Collection[str]) -> list[Word]:
    """Words fit to be a fact: confident, a word (FACT_MIN_LEN letters in a row), not (part of) a typed value: OCR
    splits typed text where it likes ("com" of "x@acme.com"), and a fragment of it is the typed value, not the app's
    word; nor a word holding a typed word (a save dialog's folder name read glued to what surrounds it)."""
    whole = {normalise(t) for t in typed}
    # each word of it, and each piece between its punctuation (a path's folder `run-x7k2qz` of `/tmp/run-x7k2qz/a.txt`)
    typed_norm = (
        whole
        | {w for t in whole for w in t.split()}
        | {p for t in whole for p in re.split(r"[^\w]+", t) if len(p) >= FACT_MIN_LEN}
    )
    out = []
    for w in words:
        n = normalise(w.text)
        if (
            w.conf < FACT_MIN_CONF
            or not is_word(n)
            or n in typed_norm
            or any(n in t for t in whole)
            or shows_typed(n, typed_norm)
        ):
            continue
        out.append(w)
    return out


def is_word(text: str) -> bool:
    """Does `text` hold FACT_MIN_LEN letters in a row (a word, not `a`, `x1` or a border read as `|l`)?"""
    return re.search(rf"[^\W\d_]{{{FACT_MIN_LEN},}}", text) is not None


def result_like(text: str) -> bool:
    """A result may be a number of any length (`7`) or a word (is_word); a lone letter or two is OCR's noise."""
    n = normalise(text)
    return bool(re.search(r"[0-9]", n)) or is_word(n)


def result_fact(
    before: np.ndarray,
    after: np.ndarray,
    ocr: OcrEngine,
    params: dict[str, str],
    typed: Collection[str],
    generated: set[str],
    chosen: Collection[str] = (),
) -> Fact | None:
    """The result a step showed: the word that appeared where the screen changed, numbers included, the most
    result-like (with digits, then a param's value, then tallest, then longest); as `{param}` when it is a string
    param's whole recorded value (`params`). Any other typed text (a word of a longer value, a number the app
    formats its own way: `1250.50` for 1250.5) is no result, nor a value the system made (`generated`: written,
    never typed: ids), nor a word already `chosen` as a fact. None when nothing new is read."""
    box = changed_box(before, after)
    if box is None:
        return None
    area = pad_box(box, RESULT_PAD, after.shape[1], after.shape[0]) or box
    was, now = ocr.read_closely(before, area), ocr.read_closely(after, area)
    by_value = {normalise(v): name for name, v in params.items() if normalise(v)}
    pool = [
        w
        for w in now
        if w.conf >= RESULT_MIN_CONF
        and result_like(w.text)
        and normalise(w.text) not in generated
        and normalise(w.text) not in {normalise(c) for c in chosen}
        and (normalise(w.text) in by_value or not shows_typed(w.text, typed))
        and not find_text(_at(was, w.box), w.text)
        and whole_word(after, w.box)
    ]
    return _most_result_like(pool, by_value)


def still_shown(
    after: np.ndarray, area: Box, ocr: OcrEngine, params: dict[str, str], typed: Collection[str]
) -> Fact | None:
    """For a step that changed nothing: what the screen still shows in `area` (where the last change was: a
    calculator's display after "×"), chosen and written as a result is. None when nothing there reads surely."""
    by_value = {normalise(v): name for name, v in params.items() if normalise(v)}
    pool = [
        w
        for w in ocr.read_closely(after, area)
        if w.conf >= RESULT_MIN_CONF
        and result_like(w.text)
        and (normalise(w.text) in by_value or not shows_typed(w.text, typed))
        and whole_word(after, w.box)
    ]
    return _most_result_like(pool, by_value)


def _most_result_like(pool: list[Word], by_value: dict[str, str]) -> Fact | None:
    if not pool:
        return None
    best = max(
        pool,
        key=lambda w: (
            bool(re.search(r"[0-9]", w.text)),
            normalise(w.text) in by_value,
            w.box[3],
            len(normalise(w.text)),
        ),
    )
    param = by_value.get(normalise(best.text))
    return Fact("text_present", "{" + param + "}" if param else _EDGE.sub("", best.text), best.box)


def _at(words: list[Word], box: Box) -> list[Word]:
    """The words read where `box` is (a word shown there before is no result; the same word elsewhere may be)."""
    x, y, w, h = box
    return [v for v in words if intersect(v.box, (x - 4, y - 4, w + 8, h + 8)) is not None]


def name_of(words: list[Word], avoid: Collection[str]) -> str | None:
    """A name for a step or param from the words read on its target, only from words that look real: read
    surely, letters only, long enough, with a vowel and no run of four consonants, not a typed value. OCR noise
    (`browsg`, `als`) names nothing; the caller falls back to `click-N` or the column name."""
    good = []
    for w in words:
        n = normalise(w.text)
        if (
            w.conf >= NAME_MIN_CONF
            and len(n) >= NAME_MIN_LEN
            and n.isalpha()
            and n not in avoid
            and re.search(r"[aeiouy]", n)
            and not re.search(r"[^aeiouy]{4}", n)
        ):
            good.append(n)
    return " ".join(good[:NAME_WORDS]) or None


def screen_facts(
    before: np.ndarray,
    after: np.ndarray,
    ocr: OcrEngine,
    typed: Collection[str],
    later: np.ndarray | None = None,
    earlier: np.ndarray | None = None,
) -> list[Fact]:
    """At most one word that appeared and one that vanished; else the changed area; [] if nothing changed.

    `typed` is all the demonstration typed (every step's, later ones' too) and every param's value. `later` is the
    screen once the pointer had moved on (the recorder's `later`): a word that appeared only while the pointer
    rested on the step's own target (a status tip, a tooltip) is not there and is no fact. `earlier` is the screen
    the step before was checked on: a word that vanished must have shown there too (a tooltip that came up while
    the pointer rested, then went away, is no effect of the step), and must still be gone in `later`."""
    box = changed_box(before, after)
    if box is None:
        return []
    was, now = ocr.read_closely(before), ocr.read_closely(after)  # bold titles read again, not dropped as doubtful
    stays = ocr.read_closely(later) if later is not None and not np.array_equal(later, after) else None
    facts = []
    # only where pixels changed: a word read differently where nothing changed (OCR grouping a border with it,
    # "fQuit") is no fact
    new = [
        w
        for w in readable(now, typed)
        if not find_text(was, w.text)
        and (stays is None or find_text(stays, w.text))
        and _changed_under(before, after, w.box)
        and whole_word(after, w.box)
    ]
    gone = [
        w
        for w in readable(was, typed)
        if not find_text(now, w.text)
        and _changed_under(before, after, w.box)
        and whole_word(before, w.box)
        and (stays is None or not find_text(stays, w.text))
    ]
    if gone and earlier is not None and not np.array_equal(earlier, before):
        shown = ocr.read_closely(earlier)
        gone = [w for w in gone if find_text(shown, w.text)]
    for kind, pool in (("text_present", new), ("text_absent", gone)):
        if pool:
            best = max(pool, key=lambda w: (len(normalise(w.text)), w.conf))
            facts.append(Fact(kind, best.text, best.box))
    if not facts:
        facts.append(Fact("region_changed", None, box))
    return facts


def field_label(
    frame: np.ndarray,
    field: Box,
    ocr: OcrEngine,
    avoid: Collection[str] = (),
    landmark: Callable[[Word], bool] | None = None,
) -> Word | None:
    """The word nearest left of a field on its row: its label. None when that word is a typed value (`avoid`):
    then the field sits in a row of data (a table), and anything further left is data too; unless `landmark`
    says the word is the app's own, shown where it is before anything was typed (record/shown.py)."""
    fx, fy, fw, fh = field
    row = (max(0, fx - LABEL_REACH), fy, min(fx, LABEL_REACH), fh)

    def left_of(read: list[Word]) -> list[Word]:
        return [
            w
            for w in read
            if w.box[0] + w.box[2] <= fx
            and len(normalise(w.text)) >= 2
            and not repeats(frame[w.box[1] : w.box[1] + w.box[3], w.box[0] : w.box[0] + w.box[2]])
        ]

    label = max(left_of(ocr.read(frame, row)), key=lambda w: w.box[0], default=None)
    if label is None or label.conf < LABEL_SURE:  # a small font missed or half read at 1x ("it" for "Patient")
        again = max(left_of(ocr.read_enlarged(frame, row)), key=lambda w: w.box[0], default=None)
        # taken only when it reads as a word, surely (a table row's "3 3" read enlarged gave "al")
        if (
            again is not None
            and again.conf >= LABEL_SURE
            and len(normalise(again.text)) >= 3
            and normalise(again.text).isalpha()
            and (label is None or again.conf > label.conf)
        ):
            label = again
    if label is not None and shows_typed(label.text, avoid) and not (landmark is not None and landmark(label)):
        return None
    return label


def shows_typed(text: str, avoid: Collection[str]) -> bool:
    """Does `text` hold a typed value (or a word of one)? OCR glues a cell's text to its neighbours (`3i\\Grace`
    for row 3's "Grace"): a typed word of TYPED_INSIDE_MIN letters or more counts anywhere inside a word read."""
    n = normalise(text)
    parts = set(n.split()) | set(re.split(r"[^\w]+", n))
    return (
        n in avoid
        or any(w in avoid for w in parts)
        or any(len(a) >= TYPED_INSIDE_MIN and a.isalpha() and a in p for a in avoid for p in parts)
    )


def target_crop(frame: np.ndarray, widget: Box, label: Word | None, click: tuple[int, int]) -> Box:
    """A button is its own face; a field is its label and its first few pixels (an empty field looks like every
    other), reaching at least past the click (the click point lies inside the crop)."""
    if label is None:
        return widget
    fx, fy, fw, fh = widget
    lx, ly, lw, lh = label.box
    x0, y0 = min(lx - 4, fx), min(ly - 4, fy)
    x1, y1 = min(fx + fw, max(fx + FIELD_PART, click[0] + 8)), max(ly + lh + 4, fy + fh)
    return pad_box((x0, y0, x1 - x0, y1 - y0), 0, frame.shape[1], frame.shape[0]) or widget


def unique_crop(
    frame: np.ndarray,
    box: Box,
    allowed: Callable[[Box], bool] = lambda _: True,
    crop_of: Callable[[Box], np.ndarray] | None = None,
    within: Box | None = None,
) -> tuple[Box, bool]:
    """`box`, grown until its crop matches only itself on the frame (True), or the last try (False). A growth that
    is not `allowed` (it would take in a typed value) is not made: the last allowed box is returned. `crop_of`: the
    template a box would be cut as (a crop at rest, `transient.RestLook`); default the frame's own pixels. It
    grows inside `within` only (the app's region: never into the desktop around its window)."""
    h, w = frame.shape[:2]
    for _ in range(GROW_TRIES):
        if is_unique(frame, box, crop_of):
            return box, True
        grown = pad_box(box, GROW, w, h)
        if grown is not None and within is not None:
            grown = intersect(grown, within) or grown
        if grown is None or grown == box or not allowed(grown):
            break
        box = grown
    return box, False


def is_unique(frame: np.ndarray, box: Box, crop_of: Callable[[Box], np.ndarray] | None = None) -> bool:
    """Does the crop at `box` (as `crop_of` cuts it) match itself best on the frame, every other place at least
    UNIQUE_MARGIN lower?"""
    x, y, bw, bh = box
    crop = crop_of(box) if crop_of is not None else np.ascontiguousarray(frame[y : y + bh, x : x + bw])
    found = find_template(frame, crop, thresholds=Thresholds(confident=0.9))
    mine = found.best is not None and intersect(found.best.box, box) is not None
    runner = found.runner_up.score if found.runner_up and found.plausible(found.runner_up) else 0.0
    return mine and runner < found.score - UNIQUE_MARGIN


def fact_doc(f: Fact, paired: bool, relative: bool) -> dict[str, Any]:
    """A fact as the bundle says it. A text_absent keeps its region (absent from where it was) only beside a
    text_present: alone it must hold on the whole frame, or a dialog that moved and stayed open would pass. A
    step with a target places the areas of its facts relative to where the target is found (a moved window)."""
    where = {"relative_to": "target"} if relative else {}
    if f.kind == "template_present":
        return {f.kind: f.text, "region": list(f.region), **where}
    if f.text is None:
        return {"region_changed": list(f.region), **where}
    if f.kind == "text_absent" and not paired:
        return {f.kind: f.text}
    return {f.kind: f.text, "region": list(f.region), **where}


def _changed_under(before: np.ndarray, after: np.ndarray, box: Box) -> bool:
    """Did any pixel change under a word's box (the word itself, not only its reading)? Its edge is left out: OCR
    boxes a word with a border line under it (a spreadsheet's cell cursor), and that line moving away is no change
    of the word ("name" read as "frame" once the line went)."""
    x, y, w, h = box
    if w > 2 * WORD_EDGE + 2 and h > 2 * WORD_EDGE + 2:
        x, y, w, h = x + WORD_EDGE, y + WORD_EDGE, w - 2 * WORD_EDGE, h - 2 * WORD_EDGE
    a, b = before[max(0, y) : y + h, max(0, x) : x + w], after[max(0, y) : y + h, max(0, x) : x + w]
    return a.shape != b.shape or bool((a != b).any())


WORD_EDGE = 2  # px of a word's OCR box that may be a neighbour's line, not the word
WORD_GAP = 2  # px beside a word's OCR box that hold no ink when the box holds the whole word
GAP_INK = 80  # grey levels from the word's background that count as ink beside it


def whole_word(frame: np.ndarray, box: Box) -> bool:
    """Is the word read in `box` the whole word on the screen? A reading that dropped a glyph ('ile' of xedit's bold
    'File') has that glyph's ink right beside its box, closer than any space between words; such a fragment reads
    otherwise in another font or at another scale, so it is no fact. The WORD_GAP columns at each side, on the box's
    rows, must hold no ink (the frame's edge counts as blank); a line that goes on above and below the box (a pane's
    border, a table's rule) is no glyph."""
    x, y, w, h = box
    y0, y1 = max(0, y - 2), min(frame.shape[0], y + h + 2)  # the box's rows and two more each way
    rows = frame[y0:y1]
    gray = rows.astype(np.int16).mean(axis=2) if rows.ndim == 3 else rows.astype(np.int16)
    top, bottom = y - y0, y - y0 + h
    inside = gray[top:bottom, max(0, x) : x + w]
    if inside.size == 0:
        return True
    ink = np.abs(gray - float(np.median(inside))) > GAP_INK
    for col in [*range(max(0, x - WORD_GAP), max(0, x)), *range(x + w, min(frame.shape[1], x + w + WORD_GAP))]:
        line = bool(ink[:top, col].any()) and bool(ink[bottom:, col].any()) if 0 < top and bottom < len(ink) else False
        if ink[top:bottom, col].any() and not line:
            return False
    return True


REPEAT_MAX = 4  # px: a patch equal to itself shifted by this little, down or across, is a texture ...
REPEAT_TOL = 8  # ... within this many grey levels


def repeats(patch: np.ndarray) -> bool:
    """Does the patch (gray or RGB) repeat itself a few pixels down or across: a scrollbar's stipple (which OCR reads
    as "aI"), a border line? Such a detail looks the same wherever it is slid along itself; text does not."""
    gray = patch.astype(np.float32)
    gray = gray.mean(axis=2) if gray.ndim == 3 else gray
    h, w = gray.shape
    return any(
        (h > p and bool((np.abs(gray[p:] - gray[:-p]) <= REPEAT_TOL).all()))
        or (w > p and bool((np.abs(gray[:, p:] - gray[:, :-p]) <= REPEAT_TOL).all()))
        for p in range(1, REPEAT_MAX + 1)
    )
