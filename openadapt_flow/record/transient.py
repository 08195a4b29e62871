"""A target's look at rest: what a focus ring, a caret, a selection or any other transient state drew into the
screen a template is cut from is taken out of the template.

The rule holds for every toolkit because it asks the demonstration, not the toolkit: a mark of a target's crop
that looks different in another recorded screen where the same widget is still there, in the same place and
mostly unchanged, and that is drawn as states are drawn (an outline: a focus ring, a selection's frame; a solid
bar: a caret), shows a state (a field's focus ring and caret go when the focus moves on; a selection's frame goes
when another row is picked). What changed as data (a value typed later, a cell's text) is glyphs, neither outline
nor bar, and stays. Such marks are painted over from their surroundings (OpenCV's inpainting, Navier-Stokes),
so the template shows the widget as it looks at rest, and the crop's uniqueness is judged on that
look: an empty focused field that was unique only by its ring grows to take in its label. Screens where the
pointer rests on the crop are not compared (their hovered look is `hover.unhovered`'s business), nor screens where
most of the crop changed (another widget, a closed dialog: not a state of this one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from openadapt_flow.fixture.recorder import Recording
from openadapt_flow.imaging import components
from openadapt_flow.imaging.pixels import dilate, inpaint, to_gray
from openadapt_flow.vision.ocr import local_contrast
from openadapt_flow.vision.template import Box, clip_box, intersect

STATE_TOL = 24  # grey levels (any channel): a smaller difference is rendering noise, not a state
SAME_MAX_SHARE = 0.35  # a screen where more of the crop changed shows something else there, not a state of it
CONTENT_CHANGED_MAX = 0.2  # of a crop's content marks (label, icon, text): more changed, and the widget is not there
POINTER_PAD = 8  # px: a screen whose pointer rests this near the crop is not compared (its hovered look)
BAR_MAX, BAR_MIN_LEN = 3, 8  # px: a caret or an underline: a solid stroke this thin and at least this long
OUTLINE_MIN_LEN = 24  # px: a ring or a line at least this long one way (a glyph is shorter)
# a mark at most this many pixels per unit of its bounding box's half-perimeter is a thin stroke (a ring t px thick
# has 2t); the edge of a filled area (a selected or inverted widget) reads as a band ~10 px thick and is not one
STROKE_MAX = 6.5
USUAL_AGREE = 0.95  # of the passing look's pixels a later screen shows as the earlier one did
USUAL_MIN_PX = 20  # ... judged on at least this many pixels
HOVER_REACH = 24  # px around a later screen's pointer where its own widget's hovered look is not judged
STATE_MAX_SHARE = 0.25  # a "state" painting more of the crop than this is something bigger changing: nothing painted
INK_BELOW = 160  # local_contrast darker than this is a mark (as vision.caret reads ink)


# a crop's ink, which of it is state-shaped, and its comparable screens: (-1 before the frame / +1 after, the screen's
# crop, where it differs from the frame's, the pointer's place in the crop when it rests near it)
Comparable = tuple[np.ndarray, np.ndarray, list[tuple[int, np.ndarray, np.ndarray, "tuple[int, int] | None"]]]


@dataclass(frozen=True)
class Screen:
    """A settled recorded screen and where the pointer was on it (None: away, or not known to be near)."""

    pixels: np.ndarray
    pointer: tuple[int, int] | None = None


@dataclass
class RestLook:
    """The recorded screens one frame's crops are compared with; `crop(box)` gives a crop at rest."""

    frame: np.ndarray
    others: Sequence[Screen]
    changed: dict[Box, int] = field(default_factory=dict)  # box -> transient pixels painted over (for the notes)
    # per box, computed once: uniqueness tries a box, the template is cut from it, its facts ask for its usual look
    _seen: dict[Box, Comparable] = field(default_factory=dict, repr=False)
    _usual: dict[Box, tuple[np.ndarray, np.ndarray] | None] = field(default_factory=dict, repr=False)

    def _comparable(self, box: Box) -> Comparable:
        if box not in self._seen:
            self._seen[box] = self._compare(box)
        return self._seen[box]

    def _compare(self, box: Box) -> Comparable:
        """The crop's ink, which of it is state-shaped, and the comparable screens: (-1 before the frame or +1 after
        it, the screen's crop, where it differs from the frame's, where the pointer rests in the crop if it does).
        A screen is comparable when the crop's other marks
        (its label, its icon, its text) are still there in it: the widget is in place (not a page navigated on, a
        dialog closed); a crop with no other mark, when at most SAME_MAX_SHARE of it changed. A screen whose pointer
        rests near the crop is marked so (its hovered look): `mask` leaves it out, `usual` judges it away from it."""
        h, w = self.frame.shape[:2]
        clipped = clip_box(box, w, h)
        assert clipped is not None
        x, y, bw, bh = clipped
        mine = self.frame[y : y + bh, x : x + bw].astype(np.int16)
        ink = local_contrast(to_gray(np.ascontiguousarray(self.frame[y : y + bh, x : x + bw]))) < INK_BELOW
        labels, shaped = state_shaped(ink)
        kept = ink & ~shaped[labels]  # the crop's own content: what must still be there for a screen to compare
        near = (x - POINTER_PAD, y - POINTER_PAD, bw + 2 * POINTER_PAD, bh + 2 * POINTER_PAD)
        side, out = -1, []
        for s in self.others:
            if s.pixels is self.frame:
                side = 1
                continue
            if s.pixels.shape != self.frame.shape:
                continue
            pointer = None
            if s.pointer is not None and intersect(near, (s.pointer[0], s.pointer[1], 1, 1)) is not None:
                pointer = (s.pointer[0] - x, s.pointer[1] - y)
            theirs = s.pixels[y : y + bh, x : x + bw].astype(np.int16)
            diff = np.abs(theirs - mine) > STATE_TOL
            diff = diff.any(axis=2) if diff.ndim == 3 else diff
            if kept.any():
                comparable = int((diff & kept).sum()) <= CONTENT_CHANGED_MAX * int(kept.sum())
            else:
                comparable = 0 < float(diff.mean()) <= SAME_MAX_SHARE
            if comparable:
                out.append((side, theirs, diff, pointer))
        return ink, shaped[labels], out

    def mask(self, box: Box) -> np.ndarray:
        """The crop's pixels that showed a state: its marks drawn as states are drawn (`state_shaped`), there since the
        recording began, whose pixels a comparable later screen showed otherwise (at most STATE_MAX_SHARE of the
        crop, else none)."""
        ink, shaped, screens = self._comparable(box)
        changed = np.zeros(ink.shape, bool)
        for side, _, diff, pointer in screens:
            if (
                side > 0 and pointer is None
            ):  # gone later (a focus that moved on); a look that came before and stays is the screen's now
                changed |= diff
        # the state marks' pixels that changed (a caret's part under a glyph typed later stays: it did not change)
        marks = shaped & ink & dilate(changed.astype(bool), 3)
        marks &= self._since_start(box)  # a state an input brought (the current cell after New Record) is kept
        return marks if marks.mean() <= STATE_MAX_SHARE else np.zeros_like(marks)

    def _since_start(self, box: Box) -> np.ndarray:
        """The crop's pixels that look as they did on the recording's first screen: a state shown there (a focus
        the window had when recording began) was no input's doing; the replay may not have it."""
        x, y, bw, bh = box
        first = self.others[0].pixels if self.others else self.frame
        if first.shape != self.frame.shape:
            return np.zeros((bh, bw), bool)
        same = np.abs(first[y : y + bh, x : x + bw].astype(np.int16) - self.frame[y : y + bh, x : x + bw]) <= STATE_TOL
        return same.all(axis=2) if same.ndim == 3 else same

    def usual(self, box: Box) -> tuple[np.ndarray, np.ndarray] | None:
        """The crop with the pixels where the frame showed a passing look put back as the screens before and after
        it show them (a neighbour left highlighted by the pointer's path: xedit's Quit beside Save), and where; None
        when the frame's look is the usual one. A look seen both before and after the frame is the widget's usual
        one; a look seen only in the frame was passing (a look the step itself caused would stay after it)."""
        if box not in self._usual:
            self._usual[box] = self._usual_look(box)
        return self._usual[box]

    def _usual_look(self, box: Box) -> tuple[np.ndarray, np.ndarray] | None:
        _, _, screens = self._comparable(box)
        x, y, bw, bh = box
        mine = self.frame[y : y + bh, x : x + bw].astype(np.int16)
        later = [(theirs, pointer) for side, theirs, _, pointer in screens if side > 0]
        rows, cols = np.mgrid[0:bh, 0:bw]
        for side, theirs, diff, pointer in reversed([s for s in screens if s[0] < 0]):  # the nearest first
            if pointer is not None or not diff.any() or float(diff.mean()) > SAME_MAX_SHARE:
                continue
            for after, at in later:
                agree = np.abs(after - theirs) <= STATE_TOL
                agree = agree.all(axis=2) if agree.ndim == 3 else agree
                judged = diff.copy()
                if at is not None:  # the pointer's own widget may look hovered there: judged away from it only
                    judged &= np.hypot(cols - at[0], rows - at[1]) > HOVER_REACH
                if judged.sum() >= USUAL_MIN_PX and float(agree[judged].mean()) >= USUAL_AGREE:
                    out = mine.copy()
                    out[diff] = theirs[diff]
                    return out.astype(np.uint8), diff
        return None

    def crop(self, box: Box) -> np.ndarray:
        """The frame's crop at `box` as the widget usually looks (`usual`), with its state pixels painted from their
        surroundings (`mask`)."""
        x, y, bw, bh = box
        crop = np.ascontiguousarray(self.frame[y : y + bh, x : x + bw])
        usual = self.usual(box)
        restored = 0
        if usual is not None:
            crop, where = np.ascontiguousarray(usual[0]), usual[1]
            restored = int(where.sum())
        mask = self.mask(box)
        if usual is not None:  # what was put back, and its edge (a border beside it is no state)
            mask &= ~dilate(usual[1].astype(bool), 5)
        if mask.any():
            grown = dilate(mask.astype(bool), 3)  # a state's anti-aliased edge too
            restored += int(grown.sum())
            crop = inpaint(crop, grown)
        if restored:
            self.changed[box] = restored
        return crop


def state_shaped(ink: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The crop's marks (connected `ink`) and, per mark, whether it is drawn as a state is drawn: a long thin stroke
    (a focus ring, a selection's or the current cell's frame, an underline) or a bar (a caret: one solid stroke at
    most BAR_MAX px thick). A glyph's stem is
    a bar too; it is painted out only where it changed in a comparable screen, which a label's glyphs do not."""
    n, labels, stats, _ = components.label_stats(ink, connectivity=8)
    shaped = np.zeros(n, bool)
    for i in range(1, n):
        bx, by, bw, bh, area = (int(v) for v in stats[i])
        if min(bw, bh) <= BAR_MAX and max(bw, bh) >= BAR_MIN_LEN and area == bw * bh:
            shaped[i] = True
        elif max(bw, bh) >= OUTLINE_MIN_LEN and area <= STROKE_MAX * (bw + bh):
            shaped[i] = True  # a long thin stroke: a ring (whole, or a bracket where the crop's side cuts it)
    return labels, shaped


def recorded_screens(rec: Recording) -> list[Screen]:
    """Every settled screen of a recording a crop may be compared with: each input's screen before it (the pointer
    away from its target), and the screens after it with the pointer where that input left it. The pressed and
    later screens are left out: the pointer rests on a target there (its hovered look)."""
    out: list[Screen] = []
    pointer: tuple[int, int] | None = None
    for b in rec.batches:
        out.append(Screen(b.before))
        acted = b.acted
        if acted is not None and acted.kind.endswith("click"):  # a key leaves the pointer where it was
            pointer = (acted.x, acted.y)
        for frame in (b.mid, b.after):
            if frame is not None:
                out.append(Screen(frame, pointer))
    return out


def without_passing(before: np.ndarray, after: np.ndarray, passing: np.ndarray | None) -> np.ndarray:
    """`before` with every change to `after` that touches `passing` (a neighbour's passing look found in the step's
    target, `RestLook.usual`) taken back: its ending (the pointer moved on) is no effect of the step, and no fact."""
    if passing is None or before.shape != after.shape or not passing.any():
        return before
    far = np.abs(before.astype(np.int16) - after.astype(np.int16)) > STATE_TOL
    diff = np.asarray(far.any(axis=2) if far.ndim == 3 else far, dtype=bool)
    joined = dilate(diff.astype(bool), 5)  # a widget's look: its pieces as one
    n, labels = components.label(joined, connectivity=8)
    hit = [int(v) for v in np.unique(labels[passing & diff]) if v > 0]
    if not hit:
        return before
    out = before.copy()
    back = np.isin(labels, hit) & diff
    out[back] = after[back]
    return out
