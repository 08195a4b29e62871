"""The screen a demonstration started from, as the facts a replay checks before its first input (`start:`).

Three kinds, each chosen so that it judges a dirty app apart from a clean one the same way at every replay:

- words the start screen shows (`text_present` with its region): read surely on the first recorded frame and at
  the same place on the second (nothing blinking or passing), once on the screen (a word shown twice cannot say
  where the app is), not typed, not a number, not a row of the system of record, not inside a field typed into.
  Words still there at the end of the demonstration come first: the next item of a batch starts from that screen;
  only words the replay's reading finds in their own window are taken (the start check reads windows first).
- words shown only while an item is under way (`text_absent` with where they showed): absent from the start and
  the end of the demonstration, shown on a screen between, and not only while the pointer rested on something (a
  tip). Absent means drawn anew: a word whose pixels are the same at the start or the end is there all along, only
  read otherwise (Tesseract reads an underlined menu title 'File' on one screen and not on the next). A halted item leaves the app on such a screen (a form, a row not saved): a replay that reads one there
  is not at the start. A half-typed form that still shows the same labels is told apart only by such words.
- an empty page the demonstration typed into at its caret (`blank`): appended text goes after whatever is there, so
  the page must be empty as it was. A field a `type` step replaces needs no such fact: its content is replaced.

Every fact is tried on the recorded start frame as the replay will judge it, and dropped with a note if it does
not hold there.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import numpy as np

from openadapt_flow.bundle.models import StartFact
from openadapt_flow.fixture.recorder import Recording
from openadapt_flow.record.facts import FACT_MIN_LEN, readable, shows_typed
from openadapt_flow.verify.blank import blank_check
from openadapt_flow.verify.screen import ScreenChecks
from openadapt_flow.verify.start import TEXT_PAD, judge_start
from openadapt_flow.vision.diff import same
from openadapt_flow.vision.ocr import OcrEngine, Word, find_text, normalise
from openadapt_flow.vision.template import Box, clip_box, intersect, pad_box

START_WORDS = 3  # words the start screen must show
BETWEEN_WORDS = 3  # words shown only mid-item that must be absent
WORD_GAP = 30  # px between the centres of two chosen start words: apart, they place the app's window (and its scale)
SAME_PLACE = 6  # px a word may shift between two recorded frames and still be the same word
PAGE_INSET = 3  # px of a page's edge left out of its blank area
# A start word is read this surely at least (a step's facts ask 85): small toolkit labels (Tk's 10 pt "Patient")
# read at 70-80 and are still read the same at every replay of the same app; each is proven with the replay's own
# reading before it is kept
START_MIN_CONF = 60.0


def start_facts(
    rec: Recording, ocr: OcrEngine, typed: Collection[str], fields: Sequence[Box], pages: Sequence[Box]
) -> tuple[list[dict[str, Any]], list[str]]:
    """The `start:` facts of a recording (as flow.yaml says them) and notes for the compiler's warnings. `typed`:
    every value typed (normalised); `fields`: the boxes typed into; `pages`: text areas typed into at the caret."""
    if not rec.batches:
        return [], []
    first = rec.initial
    end = _end_frame(rec)
    avoid = [*typed, *(normalise(v) for v in rec.data_values)]
    start_words = ocr.read_closely(first)
    end_words = ocr.read_closely(end)
    facts: list[dict[str, Any]] = [
        {"text_present": w.text, "region": list(w.box)} for w in _shown(rec, ocr, start_words, end_words, avoid, fields)
    ]
    facts += [
        {"text_absent": w.text, "region": list(w.box)}
        for w in _between(rec, ocr, start_words, end_words, avoid, (first, end))
    ]
    for page in pages:
        inner = pad_box(page, -PAGE_INSET, first.shape[1], first.shape[0])
        if inner is not None and blank_check(first, inner).ok:
            facts.append({"blank": list(inner)})
    return _proven(facts, first, end, ocr)


def _end_frame(rec: Recording) -> np.ndarray:
    last = rec.batches[-1]
    frame = last.later if last.later is not None else last.after
    assert frame is not None
    return frame


def _near(words: list[Word], box: Box) -> list[Word]:
    x, y, w, h = box
    return [
        v for v in words if intersect(v.box, (x - SAME_PLACE, y - SAME_PLACE, w + 2 * SAME_PLACE, h + 2 * SAME_PLACE))
    ]


def _fit(w: Word, avoid: list[str]) -> bool:
    return not shows_typed(w.text, avoid) and normalise(w.text).isalpha()


def _shown(
    rec: Recording, ocr: OcrEngine, words: list[Word], end_words: list[Word], avoid: list[str], fields: Sequence[Box]
) -> list[Word]:
    """Start words: stable, unique, not typed or data, not in a typed field; those still at their place at the end
    first, then the longest; spread out."""
    again = ocr.read_closely(rec.batches[0].before)
    pool = [
        w
        for w in words
        if w.conf >= START_MIN_CONF
        and len(normalise(w.text)) >= FACT_MIN_LEN
        and _fit(w, avoid)
        and len(find_text(words, w.text)) == 1
        and find_text(_near(again, w.box), w.text)
        and not any(intersect(w.box, f) for f in fields)
    ]
    pool.sort(
        key=lambda w: (bool(find_text(_near(end_words, w.box), w.text)), len(normalise(w.text)), w.conf), reverse=True
    )
    chosen: list[Word] = []
    for w in pool:
        if len(chosen) < START_WORDS and all(_apart(w, c) for c in chosen) and _read_in_place(ocr, rec.initial, w):
            chosen.append(w)
    return chosen


def _read_in_place(ocr: OcrEngine, frame: np.ndarray, w: Word) -> bool:
    """Does the replay's reading find the word in its own window (as the start check reads it first)? Tesseract
    reads a small crop differently from the whole screen; a word found only on the whole screen costs every replay
    a whole-screen read."""
    x, y, bw, bh = w.box
    window = clip_box(
        (x - TEXT_PAD, y - TEXT_PAD, bw + 2 * TEXT_PAD, bh + 2 * TEXT_PAD), frame.shape[1], frame.shape[0]
    )
    return window is not None and bool(ocr.find(frame, w.text, window))


def _apart(a: Word, b: Word) -> bool:
    (ax, ay), (bx, by) = a.centre, b.centre
    return max(abs(ax - bx), abs(ay - by)) >= WORD_GAP and normalise(a.text) != normalise(b.text)


def _between(
    rec: Recording,
    ocr: OcrEngine,
    start_words: list[Word],
    end_words: list[Word],
    avoid: list[str],
    ends: tuple[np.ndarray, np.ndarray],
) -> list[Word]:
    """Words shown on a screen between the start and the end only (not a passing tip, not a word drawn the same at
    the start or the end that only read otherwise there): the most often shown first."""
    seen: dict[str, tuple[int, Word]] = {}
    for b in rec.batches[:-1]:
        assert b.after is not None
        later = ocr.read_closely(b.later) if b.later is not None else None
        for w in readable(ocr.read_closely(b.after), avoid):
            n = normalise(w.text)
            if (
                not _fit(w, avoid)
                or find_text(start_words, w.text)
                or find_text(end_words, w.text)
                or (later is not None and not find_text(_near(later, w.box), w.text))
                or any(same(frame, b.after, w.box) for frame in ends)
            ):
                continue
            count, first = seen.get(n, (0, w))
            seen[n] = (count + 1, first)
    ranked = sorted(seen.values(), key=lambda cw: (cw[0], len(normalise(cw[1].text)), cw[1].conf), reverse=True)
    return [w for _, w in ranked[:BETWEEN_WORDS]]


def _proven(
    facts: list[dict[str, Any]], first: np.ndarray, end: np.ndarray, ocr: OcrEngine
) -> tuple[list[dict[str, Any]], list[str]]:
    """The facts that hold on the recorded start frame, judged as a replay judges them; a note for each dropped, and
    one when they do not hold on the screen the demonstration ended on (every batch item then needs a reset)."""
    if not facts:
        return [], []
    models = [StartFact.model_validate(f) for f in facts]
    checks = ScreenChecks(ocr, {})
    verdict = judge_start(checks, models, [m.text for m in models], first)
    kept = [f for f, c in zip(facts, verdict.checks) if c.ok]
    notes = [
        f"start fact {m.kind} {m.text or m.box!r} does not hold on the recorded start screen ({c.detail}); left out"
        for m, c in zip(models, verdict.checks)
        if not c.ok
    ]
    kept_models = [m for m, c in zip(models, verdict.checks) if c.ok]
    at_end = judge_start(checks, kept_models, [m.text for m in kept_models], end)
    if kept and not at_end.ok:
        notes.append(
            "the demonstration ended on a screen that is not its start (" + at_end.differs() + "): in a batch, "
            "every item after the first halts at the start check unless the app is reset before it "
            "(declare reset: with reset_before_each: true)"
        )
    return kept, notes
