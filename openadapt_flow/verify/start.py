"""The start state judged on one frame (spec §22): does the screen show what the recording started from?

Pure deciding, as `verify.screen` is. Each text fact is read in its recorded region first (all regions in one
OCR pass); one not read there is looked for on the whole frame, where it must be read exactly once: a word read at
two other places cannot say which is the start's, so it does not hold (a start check never guesses either). The
text facts found tell where the app's window is now (moved, scaled): the scale and offset most of them agree on (a
word laid out anew by a theme or a scale, a toolbar's, does not drag the others). Every other fact (a text that must
be absent, a template, a blank area) is judged where that placement puts it, never anywhere else on the frame.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from openadapt_flow.bundle.models import Postcondition
from openadapt_flow.ladder.types import TIE_MARGIN
from openadapt_flow.records.models import Check
from openadapt_flow.verify.blank import blank_check
from openadapt_flow.verify.place import Placement
from openadapt_flow.verify.screen import TEMPLATE_PAD, TEMPLATE_PRESENT_MIN, TEXT_ABSENT_PAD, ScreenChecks, clip_box
from openadapt_flow.vision.ocr import TextMatch
from openadapt_flow.vision.template import Box, Thresholds, find_template, intersect

TEXT_PAD = 16  # px around a text_present fact's region read first
ABSENT_PAD = TEXT_ABSENT_PAD  # px around a text_absent fact's region, as for `expect:`: wider only makes "absent" fail
FIT_TOL = 24  # px (at scale 1) apart, two located facts agree on where the app is
MIN_SPREAD = 40  # px between located facts before a scale of their own is fitted (else the screen's size ratio)
SCALE_RANGE = (0.5, 2.0)
NOT_READ = "not read"  # a text_present's detail when it was read nowhere: read again where the app now is
Point = tuple[float, float]


@dataclass
class StartVerdict:
    """Every start fact's check, and where the app was found (the placement the facts were judged at)."""

    checks: list[Check]
    placement: Placement

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def differs(self) -> str:
        """What differs from the recorded start, in one line."""
        return "; ".join(_phrase(c) for c in self.checks if not c.ok)


def judge_start(
    checks: ScreenChecks,
    facts: Sequence[Postcondition],
    texts: Sequence[str | None],
    frame: np.ndarray,
    anchor: tuple[str, Box] | None = None,
) -> StartVerdict:
    """Judge the start facts (`texts`: their interpolated texts) on one frame. `anchor`: the first step's target
    (its template's name and recorded region), which places a moved app when its words alone cannot."""
    default = Placement(checks.sx, checks.sy)
    ocr = checks.ocr
    ocr.read_many(
        frame,
        [
            _window(default, pc, TEXT_PAD if pc.kind == "text_present" else ABSENT_PAD)
            for pc in facts
            if pc.region is not None and pc.kind in ("text_present", "text_absent")
        ],
    )
    out: list[Check | None] = [None] * len(facts)
    located: list[tuple[int, Point, Point, bool]] = []  # fact, recorded centre, live centre, read in its region
    for i, (pc, text) in enumerate(zip(facts, texts)):
        if pc.kind == "text_present":
            assert text is not None
            out[i], at, here = _present(checks, frame, pc, text, default)
            if at is not None and pc.region is not None:
                x, y, w, h = pc.region
                located.append((i, (x + w / 2, y + h / 2), at, here))
    placement, off = _place(default, [(r, v, here) for _, r, v, here in located])
    unread = [
        i for i, c in enumerate(out) if c is not None and c.kind == "text_present" and not c.ok and c.detail == NOT_READ
    ]
    anchored = _anchored(checks, frame, anchor, default) if unread and anchor is not None else default
    if placement == default:
        placement = anchored
    # where the app now is, by its words or by its first target (which also knows the app's own scale: natural size
    # on a bigger screen): an unread label is read again in its window there — a small label a whole-frame read misses
    places = [p for p in dict.fromkeys((placement, anchored)) if p != default]
    for i in unread:
        pc, text = facts[i], texts[i]
        if pc.region is None or text is None:
            continue
        for place in places:
            seen = _read(checks, frame, text, _window(place, pc, TEXT_PAD))
            if seen:
                best = max(seen, key=lambda m: m.score)
                out[i] = Check(
                    "text_present",
                    text,
                    True,
                    f"read {best.text!r} where the app now is (moved)",
                    {"at": list(best.box)},
                )
                break
    for (i, _, _, _), miss in zip(located, off):
        c = out[i]
        if (
            miss is not None and c is not None
        ):  # still the start's (read once): a theme or a scale lays toolbars out anew
            out[i] = Check(
                c.kind,
                c.expected,
                c.ok,
                f"{c.detail}, {miss} px from where the other start facts place the app",
                c.evidence,
            )
    for i, (pc, text) in enumerate(zip(facts, texts)):
        if out[i] is None:
            out[i] = _placed(checks, frame, pc, text, placement)
    return StartVerdict([c for c in out if c is not None], placement)


def _window(p: Placement, pc: Postcondition, pad: int) -> Box:
    assert pc.region is not None
    x, y, w, h = p.box(pc.region)
    return (x - pad, y - pad, w + 2 * pad, h + 2 * pad)


def _digits(text: str) -> str:
    return "".join(ch for ch in text if ch.isdigit())


def _read(checks: ScreenChecks, frame: np.ndarray, text: str, box: Box | None) -> list[TextMatch]:
    if box is not None:
        clipped = clip_box(box, frame.shape[1], frame.shape[0])
        if clipped is None:
            return []
        box = clipped
    return [m for m in checks.ocr.find(frame, text, box=box) if _digits(m.text) == _digits(text)]


def _present(
    checks: ScreenChecks, frame: np.ndarray, pc: Postcondition, text: str, p: Placement
) -> tuple[Check, Point | None, bool]:
    """A text that must be shown: in its region, else exactly once elsewhere; its check, where it was read, and
    whether that was in its region."""
    if pc.region is not None:
        here = _read(checks, frame, text, _window(p, pc, TEXT_PAD))
        if here:
            best = max(here, key=lambda m: m.score)
            return (
                Check("text_present", text, True, f"read {best.text!r} where recorded", {"at": list(best.box)}),
                best.centre,
                True,
            )
    anywhere = _read(checks, frame, text, None)
    if not anywhere:
        return Check("text_present", text, False, NOT_READ, {}), None, False
    if pc.region is None:
        best = max(anywhere, key=lambda m: m.score)
        return Check("text_present", text, True, f"read {best.text!r}", {"at": list(best.box)}), None, False
    if len(anywhere) > 1:
        return (
            Check(
                "text_present",
                text,
                False,
                f"read at {len(anywhere)} places, none where recorded: which is the start's cannot be told",
                {"at": [list(m.box) for m in anywhere]},
            ),
            None,
            False,
        )
    (only,) = anywhere
    return (
        Check(
            "text_present",
            text,
            True,
            f"read {only.text!r} away from where recorded (the app moved)",
            {"at": list(only.box)},
        ),
        only.centre,
        False,
    )


def _place(default: Placement, located: list[tuple[Point, Point, bool]]) -> tuple[Placement, list[int | None]]:
    """Where the app is, from the located text facts (recorded centre, live centre, read in its region), and for each
    one that does not agree with it, how far off it was read (None: it agrees).

    Three or more, spread out, may fit a scale of their own (an app drawn bigger); else the scale is the screen's size
    ratio and the offset the one most facts agree on (a tie goes to the facts read where recorded). Only two or more
    agreeing words move the app away from its recorded place."""
    if not located:
        return default, []
    rec = np.array([r for r, _, _ in located], float)
    live = np.array([v for _, v, _ in located], float)
    if len(located) >= 3 and float(np.abs(rec - rec.mean(axis=0)).max()) >= MIN_SPREAD:
        rc, lc = rec.mean(axis=0), live.mean(axis=0)
        s = float(((rec - rc) * (live - lc)).sum() / ((rec - rc) ** 2).sum())
        s = min(max(s, SCALE_RANGE[0]), SCALE_RANGE[1])
        fitted = Placement(s, s, float(lc[0] - s * rc[0]), float(lc[1] - s * rc[1]))
        misses = _misses(fitted, rec, live)
        if not any(m is not None for m in misses):
            return fitted, misses
    shifts = live - rec * (default.sx, default.sy)
    tol = FIT_TOL * max(default.sx, default.sy)
    groups = [
        [j for j in range(len(located)) if float(np.abs(shifts[j] - shifts[i]).max()) <= tol]
        for i in range(len(located))
    ]
    best = max(groups, key=lambda g: (len(g), sum(located[j][2] for j in g)))
    if len(best) < 2 and not located[best[0]][2]:
        # one word read away from its place, alone, may be a look-alike ("invoice" in a form's title for the list's
        # "Invoices"): it moves nothing, and the other facts are judged where the recording had them
        return default, _misses(default, rec, live)
    dx, dy = shifts[best].mean(axis=0)
    placed = Placement(default.sx, default.sy, float(dx), float(dy))
    return placed, _misses(placed, rec, live)


def _anchored(checks: ScreenChecks, frame: np.ndarray, anchor: tuple[str, Box], default: Placement) -> Placement:
    """Where the first target's template is found on the whole frame, and at what scale, places the app, when it is
    found confidently, its content holds and no look-alike comes within TIE_MARGIN; else `default`."""
    name, region = anchor
    tmpl = checks.templates.get(name)
    if tmpl is None:
        return default
    found = find_template(frame, tmpl, thresholds=Thresholds(confident=TEMPLATE_PRESENT_MIN))
    best = found.best
    if (
        best is None
        or found.score < TEMPLATE_PRESENT_MIN
        or not found.plausible(best)
        or found.runner_up_score >= found.score - TIE_MARGIN
    ):
        return default
    sc = best.scale  # the app's own scale where the target was found (natural size on a bigger screen: 1)
    return Placement(sc, sc, float(best.box[0] - sc * region[0]), float(best.box[1] - sc * region[1]))


def _misses(p: Placement, rec: np.ndarray, live: np.ndarray) -> list[int | None]:
    tol = FIT_TOL * max(p.sx, p.sy)
    out: list[int | None] = []
    for (rx, ry), (lx, ly) in zip(rec, live):
        px, py = p.point(rx, ry)
        off = round(max(abs(px - lx), abs(py - ly)))
        out.append(off if off > tol else None)
    return out


def _placed(checks: ScreenChecks, frame: np.ndarray, pc: Postcondition, text: str | None, p: Placement) -> Check:
    """A fact judged where the placement puts it (text_absent, template_present, blank)."""
    if pc.kind == "text_absent":
        assert text is not None
        # where the placement puts it and where it was recorded: looking in one more place only makes "absent" fail
        here = Placement(checks.sx, checks.sy)
        boxes = list(dict.fromkeys(_window(q, pc, ABSENT_PAD) for q in (p, here))) if pc.region is not None else [None]
        seen = [m for box in boxes for m in _read(checks, frame, text, box)]
        where = " where the recording showed the start" if pc.region is not None else ""
        if seen:
            return Check("text_absent", text, False, f"read {seen[0].text!r}{where}", {"at": list(seen[0].box)})
        return Check("text_absent", text, True, "absent" + where, {})
    if pc.kind == "blank":
        assert pc.blank is not None
        return blank_check(frame, p.box(pc.blank), list(pc.blank))
    if pc.kind == "template_present":
        assert pc.template_present is not None and pc.region is not None
        place = p.box(pc.region)
        window = clip_box(
            (
                place[0] - TEMPLATE_PAD,
                place[1] - TEMPLATE_PAD,
                place[2] + 2 * TEMPLATE_PAD,
                place[3] + 2 * TEMPLATE_PAD,
            ),
            frame.shape[1],
            frame.shape[0],
        )
        found = find_template(
            frame,
            checks.templates[pc.template_present],
            box=window,
            thresholds=Thresholds(confident=TEMPLATE_PRESENT_MIN),
        )
        best = found.best
        at: dict[str, object] = {"score": round(found.score, 3), "at": list(best.box) if best else None}
        if best is None or found.score < TEMPLATE_PRESENT_MIN or not found.plausible(best):
            return Check("template_present", pc.template_present, False, f"best score {found.score:.3f}", at)
        if intersect(best.box, place) is None:  # a look-alike beside its place is not it
            return Check(
                "template_present",
                pc.template_present,
                False,
                f"matched at {list(best.box)}, not at its place {list(place)}",
                at,
            )
        return Check("template_present", pc.template_present, True, f"best score {found.score:.3f} at its place", at)
    return Check(pc.kind, str(pc.box), False, f"a start fact cannot be {pc.kind}", {})


def _phrase(c: Check) -> str:
    if c.kind == "text_present":
        return f"{c.expected!r} is not shown as at the start ({c.detail})"
    if c.kind == "text_absent":
        return f"{c.expected!r} is shown ({c.detail}), which the recorded start did not show"
    if c.kind == "blank":
        return f"the area {c.expected} is not empty as at the start ({c.detail})"
    if c.kind == "template_present":  # named by what it is, not by its file's name
        return f"the picture the recording starts with is not shown where it was ({c.detail})"
    return f"{c.kind} {c.expected!r} did not hold ({c.detail})"
