"""Template rung: find the recorded crop, first in the window around its recorded place, then anywhere.

Order: each local place in gray, then each in edges, then the whole frame
in gray and in edges, stopping at the first variant that is decisive (a
hit, or two look-alikes). A hit at its recorded place (within AT_PLACE px)
wins over a look-alike elsewhere on the frame: the recorder cut the crop
unique on its whole screen, and the crop is where it was. A hit that moved
inside the window is a hit only if it is also unique on the whole frame by
the margin: which look-alike the window happened to hold decides nothing.
The places (the ladder chooses them) are the recorded pixel place at the
natural size, and, on a frame of another size, the recorded place scaled
with the frame.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

from openadapt_flow.bundle.models import Target
from openadapt_flow.ladder.types import TIE_MARGIN, Box, Evidence, Point, Seen
from openadapt_flow.vision.template import (
    DEFAULT_SCALES,
    NEAR_PAD,
    Candidate,
    FrameFeatures,
    MatchResult,
    Mode,
    TemplateImage,
    Thresholds,
    find_template,
)

RUNG_NAMES: dict[Mode, str] = {"gray": "template", "edges": "template-edges"}
AT_PLACE = NEAR_PAD  # px (recorded pixels) from its recorded place within which a hit is "where it was"


@dataclass(frozen=True)
class Place:
    """Where to look: a window, where in it the crop should be (None: anywhere), and the scales to try there."""

    window: Box
    near: Box | None
    scales: tuple[float, ...]


class TemplateRung:
    """Decides whether a template match is unique and confident; never picks between look-alikes."""

    def __init__(
        self,
        templates: Mapping[str, TemplateImage],
        *,
        threshold: float = 0.85,
        edge_threshold: float = 0.75,
        margin: float = TIE_MARGIN,
        detail_min: float = 0.7,
        scales: tuple[float, ...] = DEFAULT_SCALES,
    ) -> None:
        self.templates = templates
        self.thresholds: dict[Mode, float] = {"gray": threshold, "edges": edge_threshold}
        self.margin = margin
        self.detail_min = detail_min
        self.scales = scales

    def run(
        self, feats: FrameFeatures, target: Target, places: list[Place], frame_scales: tuple[float, ...]
    ) -> list[Evidence]:
        """Evidence for every variant tried; the last one is the hit or the ambiguity if there is one.

        Each local place (a window, where the crop should be in it, and the scales to try there) is searched
        in gray, then each in edges; the whole frame only when none was decisive: at the first of `frame_scales`
        in gray and edges, then over all of them in gray and edges."""
        assert target.template is not None
        tmpl = self.templates.get(target.template)
        if tmpl is None:
            return [Evidence("template", "error", 0.0, detail=f"template {target.template} was not loaded")]
        modes: tuple[Mode, Mode] = ("gray", "edges")
        searches = [(p, mode) for mode in modes for p in places]
        if all(p.window != feats.frame_box for p in places):
            # The first scale in both modes before the rest in either: a dark theme at the natural size costs
            # two single-scale passes, not a fruitless gray pass over every scale first.
            first, every = Place(feats.frame_box, None, frame_scales[:1]), Place(feats.frame_box, None, frame_scales)
            searches += [(first, m) for m in modes] + ([(every, m) for m in modes] if len(frame_scales) > 1 else [])
        evidence: list[Evidence] = []
        for place, mode in searches:
            t0 = time.perf_counter()
            result = find_template(
                feats,
                tmpl,
                mode=mode,
                box=place.window,
                scales=place.scales,
                thresholds=Thresholds(confident=self.thresholds[mode], detail_min=self.detail_min),
                near=place.near if mode == "gray" else None,  # the healthy case: where it was
            )
            elapsed = round((time.perf_counter() - t0) * 1000, 3)
            ev = self.judge(result, target, tmpl, elapsed)
            if (
                ev.verdict == "hit"
                and place.window != feats.frame_box
                and result.best is not None
                and not _at_place(result.best, place.near)
            ):
                self._unique_on_frame(feats, tmpl, target, result, ev, frame_scales[:1])
            evidence.append(ev)
            if ev.verdict in ("hit", "ambiguous"):
                return evidence
        return evidence

    def _unique_on_frame(
        self,
        feats: FrameFeatures,
        tmpl: TemplateImage,
        target: Target,
        result: MatchResult,
        ev: Evidence,
        natural: tuple[float, ...],
    ) -> None:
        """A window hit away from its recorded place stands only if no peak elsewhere on the frame ranks within the
        margin of it; one within the margin makes `ev` `ambiguous`, both candidates named; one clearly above it makes
        it a miss (the window held a lesser likeness: the whole frame is searched next). The frame is searched at the
        hit's scale and at the frame's `natural` one: a window moved out of the searched window leaves inside it a
        likeness at another scale (a blank strip fits at 0.8 on a toolbar's edge) while the crop itself is whole
        outside."""
        hit = result.best
        assert hit is not None
        t0 = time.perf_counter()
        rivals: list[Candidate] = []
        for scale in dict.fromkeys((hit.scale, *natural)):  # each alone: a confident first scale hides the rest
            frame = find_template(
                feats,
                tmpl,
                mode=result.mode,
                box=feats.frame_box,
                scales=(scale,),
                thresholds=Thresholds(confident=self.thresholds[result.mode], detail_min=self.detail_min),
            )
            rivals += [c for c in (frame.best, frame.runner_up) if c is not None and not c.overlaps(hit)]
        rival = max(rivals, key=lambda c: (c.rank, c.score), default=None)
        ev.elapsed_ms = round(ev.elapsed_ms + (time.perf_counter() - t0) * 1000, 3)
        if rival is None or rival.rank <= hit.rank - self.margin:
            ev.detail += "; moved in the window, unique on the whole frame" + (
                f" (next {_describe(rival)})" if rival else ""
            )
            return
        if rival.rank >= hit.rank + self.margin:
            ev.verdict, ev.point = "miss", None
            ev.detail = (
                f"{_describe(hit)} at {hit.box[:2]} in the window, but the frame holds a better match: "
                f"{_describe(rival)} at {rival.box[:2]}; the window's is a likeness, the frame decides"
            )
            return
        ev.verdict, ev.point = "ambiguous", None
        ev.runner_up = round(rival.rank, 4)
        ev.candidates = [Seen(c.box, round(c.rank, 4), click_point(target, tmpl, c.box)) for c in (hit, rival)]
        ev.detail = (
            f"look-alikes: {_describe(hit)} at {hit.box[:2]}, moved from its recorded place, vs {_describe(rival)} "
            f"at {rival.box[:2]} elsewhere on the frame (margin {self.margin:.2f}); the window alone does not decide"
        )

    def judge(self, result: MatchResult, target: Target, tmpl: TemplateImage, elapsed_ms: float) -> Evidence:
        """hit: the rank (shape and content together) clears the threshold, the content clears `detail_min`, and
        every other peak ranks at least the margin lower; ambiguous: one does not, whatever it looks like."""
        rung = RUNG_NAMES[result.mode]
        threshold = self.thresholds[result.mode]
        best, runner = result.best, result.runner_up
        if best is None:
            return Evidence(rung, "miss", elapsed_ms, search=result.search, detail="no room for the template here")
        ev = Evidence(
            rung,
            "miss",
            elapsed_ms,
            score=round(best.score, 4),
            rank=round(best.rank, 4),
            runner_up=round(runner.rank, 4) if runner else None,
            box=best.box,
            search=result.search,
            scale=round(best.scale, 4),
        )
        content = f"content {best.detail:.2f}" if best.detail is not None else "content not checked"
        if best.score < threshold:
            ev.detail = f"best {best.score:.2f} below {threshold:.2f}; {content}"
            return ev
        if best.rank < threshold:
            ev.detail = f"best rank {best.rank:.2f} below {threshold:.2f} (shape {best.score:.2f}, {content})"
            return ev
        if not result.plausible(best):
            ev.detail = f"shape matches but {content} is below {self.detail_min:.2f}: a different widget"
            return ev
        if runner is not None and best.rank - runner.rank < self.margin:
            ev.verdict = "ambiguous"
            ev.candidates = [Seen(c.box, round(c.rank, 4), click_point(target, tmpl, c.box)) for c in (best, runner)]
            ev.detail = (
                f"look-alikes: {_describe(best)} at {best.box[:2]} vs {_describe(runner)} at {runner.box[:2]} "
                f"(margin {self.margin:.2f})"
            )
            return ev
        ev.verdict = "hit"
        ev.point = click_point(target, tmpl, best.box)
        ev.detail = f"rank {best.rank:.2f} ({content})" + (f"; runner-up {_describe(runner)}" if runner else "")
        return ev


def _at_place(c: Candidate, near: Box | None) -> bool:
    """Is the candidate where the crop was recorded (its centre within AT_PLACE px, at its scale)?"""
    if near is None:
        return False
    (cx, cy), (nx, ny) = c.centre, (near[0] + near[2] / 2, near[1] + near[3] / 2)
    return abs(cx - nx) <= AT_PLACE * c.scale and abs(cy - ny) <= AT_PLACE * c.scale


def _describe(c: Candidate) -> str:
    content = f"content {c.detail:.2f}" if c.detail is not None else "content unchecked"
    return f"rank {c.rank:.2f} (shape {c.score:.2f}, {content})"


def click_point(target: Target, tmpl: TemplateImage, box: Box) -> Point:
    """Where the recording clicked inside the crop, carried to the crop's found box (and scale)."""
    ox, oy = target.click_offset()
    # The offset is in recorded-region pixels; the crop covers the region.
    rw, rh = (target.region[2], target.region[3]) if target.region else (tmpl.width, tmpl.height)
    x, y, w, h = box
    return (x + round(ox * w / rw), y + round(oy * h / rh))
