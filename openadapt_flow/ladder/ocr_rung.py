"""OCR rung: find the target's label by Tesseract, in the window first, then on the whole frame.

Several matches are told apart only by place (exactly one inside the window
around the recorded region wins) or by landmarks (stable text at a recorded
offset from the click point) — never by reading order. With no landmarks to
decide, several matches are `ambiguous`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from openadapt_flow.bundle.models import Landmark, Target
from openadapt_flow.ladder.types import Box, Evidence, Point, Seen
from openadapt_flow.vision.ocr import OcrEngine, TextMatch, Word, find_text
from openadapt_flow.vision.template import TemplateImage, clip_box, pad_box


class WordReader:
    """OCR reads of the current frame, cached per box; the engine is created on first use."""

    def __init__(self, engine: OcrEngine | Callable[[], OcrEngine]) -> None:
        self._engine = engine if isinstance(engine, OcrEngine) else None
        self._make = None if isinstance(engine, OcrEngine) else engine
        self._frame: np.ndarray | None = None
        self._cache: dict[Box, list[Word]] = {}

    @property
    def engine(self) -> OcrEngine:
        if self._engine is None:
            assert self._make is not None
            self._engine = self._make()
        return self._engine

    def read(self, frame: np.ndarray, box: Box | None = None) -> list[Word]:
        if frame is not self._frame:
            self._frame, self._cache = frame, {}
        h, w = frame.shape[:2]
        area = clip_box(box, w, h) if box else (0, 0, w, h)
        if area is None:
            return []
        if area not in self._cache:
            self._cache[area] = self.engine.read(frame, area)
        return self._cache[area]


@dataclass(frozen=True)
class _Candidate:
    point: Point
    match: TextMatch


class OcrRung:
    def __init__(
        self,
        reader: WordReader,
        templates: Mapping[str, TemplateImage],
        *,
        min_score: float = 80.0,
        landmark_tol: int = 24,
        padding: int = 80,
    ) -> None:
        self.reader = reader
        self.templates = templates
        self.min_score = min_score
        self.landmark_tol = landmark_tol
        self.padding = padding
        self._crop_text: dict[str, tuple[float, float, int] | None] = {}

    def run(
        self, frame: np.ndarray, target: Target, *, window: Box | None, base_scale: float, lookalikes: bool = False
    ) -> list[Evidence]:
        """Evidence per area searched; the last one is the hit or the ambiguity if there is one.

        `lookalikes`: the template rung saw near-identical candidates, so a label
        inside the crop cannot tell them apart; only landmarks (or a label outside
        the crop, `text_offset`) may.
        """
        if target.text is None:
            return [self._landmarks_only(frame, target, window, base_scale)]
        h, w = frame.shape[:2]
        full = (0, 0, w, h)
        areas = [window, full] if window is not None and window != full else [full]
        evidence: list[Evidence] = []
        for area in areas:
            t0 = time.perf_counter()
            matches = find_text(self.reader.read(frame, area), target.text, self.min_score)
            if not matches:  # a small dialog's label missed at 1x: read it again enlarged (no-op for a big area)
                matches = find_text(self.reader.engine.read_enlarged(frame, area), target.text, self.min_score)
            cands = [_Candidate(self.click_for(m, target, base_scale, frame), m) for m in matches]
            ev = self._decide(frame, target, cands, base_scale, lookalikes and target.text_offset is None)
            ev.search = area
            ev.elapsed_ms = round((time.perf_counter() - t0) * 1000, 3)
            evidence.append(ev)
            if ev.verdict in ("hit", "ambiguous"):
                break
        return evidence

    def _decide(
        self, frame: np.ndarray, target: Target, cands: list[_Candidate], base: float, need_landmark: bool
    ) -> Evidence:
        text = target.text
        if not cands:
            return Evidence("ocr", "miss", 0.0, detail=f"no text matching {text!r}")
        best = cands[0]
        ev = _evidence(best, cands)
        if len(cands) == 1 and not need_landmark:
            ev.verdict, ev.point, ev.detail = "hit", best.point, f"read {best.match.text!r}"
            return ev
        # a target's text (a field's label, a button's word) is a phrase of its own: the same word inside a longer
        # line (a heading "Patient intake" over the "Patient" field) is not it
        wholes = [c for c in cands if c.match.whole]
        if not need_landmark and len(cands) > 1 and len(wholes) == 1:
            ev = _evidence(wholes[0], cands)
            ev.verdict, ev.point = "hit", wholes[0].point
            ev.detail = f"{len(cands)} matches for {text!r}; one is a phrase of its own, the others part of a longer line"
            return ev
        why = (
            f"{len(cands)} matches for {text!r}"
            if len(cands) > 1
            else f"{text!r} is on look-alike widgets the template could not tell apart"
        )
        if not target.landmarks:
            ev.verdict, ev.detail = "ambiguous", f"{why}; no landmark to decide"
            return ev
        support = [self._confirmed(frame, c.point, target.landmarks, base) for c in cands]
        top = max(len(s) for s in support)
        winners = [i for i, s in enumerate(support) if len(s) == top]
        if top == 0 or len(winners) > 1:
            ev.verdict = "ambiguous"
            ev.detail = f"{why}; landmarks confirm {top} for {len(winners)} of them"
            return ev
        win = cands[winners[0]]
        ev = _evidence(win, cands)
        ev.verdict, ev.point = "hit", win.point
        ev.detail = f"{why}; landmark {', '.join(repr(t) for t in support[winners[0]])} decides"
        return ev

    def click_for(self, m: TextMatch, target: Target, base: float, frame: np.ndarray) -> Point:
        """Text centre moved by where the recording clicked relative to that text."""
        cx, cy = m.centre
        if target.text_offset is not None:
            dx, dy = target.text_offset[0] * base, target.text_offset[1] * base
        else:
            known = self._text_in_crop(target)
            if known is None:
                dx = dy = 0.0
            else:
                ox, oy, crop_w = known
                # The same words at another zoom are wider in proportion.
                ratio = m.box[2] / crop_w if crop_w else base
                s = ratio if 0.7 * base <= ratio <= 1.4 * base else base
                dx, dy = ox * s, oy * s
        h, w = frame.shape[:2]
        return (min(max(round(cx + dx), 0), w - 1), min(max(round(cy + dy), 0), h - 1))

    def _text_in_crop(self, target: Target) -> tuple[float, float, int] | None:
        """Offset from the label's centre to the click point inside the template crop (OCR'd once)."""
        if target.template is None or target.text is None or target.template not in self.templates:
            return None
        key = f"{target.template}\0{target.text}"
        if key not in self._crop_text:
            crop = self.templates[target.template].rgb
            found = (find_text(self.reader.engine.read(crop), target.text, self.min_score)
                     or find_text(self.reader.engine.read_enlarged(crop), target.text, self.min_score))
            if found:
                tx, ty = found[0].centre
                ox, oy = target.click_offset()
                if target.region is not None:  # click offset is in region pixels
                    ox *= crop.shape[1] / target.region[2]
                    oy *= crop.shape[0] / target.region[3]
                self._crop_text[key] = (ox - tx, oy - ty, found[0].box[2])
            else:
                self._crop_text[key] = None
        return self._crop_text[key]

    def _confirmed(self, frame: np.ndarray, point: Point, landmarks: list[Landmark], base: float) -> list[str]:
        """The landmarks read where they should be relative to `point`."""
        out = []
        for lm in landmarks:
            ex, ey = point[0] + lm.dx * base, point[1] + lm.dy * base
            tol = (self.landmark_tol + 0.1 * math.hypot(lm.dx, lm.dy)) * base
            bw = (80 + 20 * len(lm.text)) * base + 2 * tol
            bh = 40 * base + 2 * tol
            box = (round(ex - bw / 2), round(ey - bh / 2), round(bw), round(bh))
            for m in find_text(self.reader.read(frame, box), lm.text, self.min_score):
                mx, my = m.centre
                if abs(mx - ex) <= tol + m.box[2] / 2 and abs(my - ey) <= tol:
                    out.append(lm.text)
                    break
        return out

    def _landmarks_only(self, frame: np.ndarray, target: Target, window: Box | None, base: float) -> Evidence:
        """No label: each landmark read implies a click point; the one point most landmarks agree on wins."""
        t0 = time.perf_counter()
        h, w = frame.shape[:2]
        recorded = target.recorded_point()
        votes: list[tuple[Point, str, TextMatch]] = []
        for lm in target.landmarks:
            areas: list[Box] = []
            if recorded is not None:
                ex, ey = (recorded[0] + lm.dx) * base, (recorded[1] + lm.dy) * base
                half = (40 + 10 * len(lm.text)) * base
                local = pad_box((round(ex - half), round(ey - 20 * base), round(2 * half), round(40 * base)),
                                round(self.padding * base), w, h)
                if local is not None:
                    areas.append(local)
            areas.append((0, 0, w, h))
            for area in areas:
                found = find_text(self.reader.read(frame, area), lm.text, self.min_score)
                if found:
                    for m in found:
                        p = (round(m.centre[0] - lm.dx * base), round(m.centre[1] - lm.dy * base))
                        votes.append((p, lm.text, m))
                    break
        elapsed = round((time.perf_counter() - t0) * 1000, 3)
        if not votes:
            return Evidence("ocr", "miss", elapsed, search=window, detail="no landmark read")
        tol = self.landmark_tol * base
        clusters: list[list[tuple[Point, str, TextMatch]]] = []
        for v in votes:
            for c in clusters:
                if abs(c[0][0][0] - v[0][0]) <= tol and abs(c[0][0][1] - v[0][1]) <= tol:
                    c.append(v)
                    break
            else:
                clusters.append([v])
        support = [len({t for _, t, _ in c}) for c in clusters]
        top = max(support)
        winners = [c for c, s in zip(clusters, support) if s == top]
        best = winners[0]
        point = _mean_point(best)
        ev = Evidence(
            "ocr",
            "hit" if len(winners) == 1 else "ambiguous",
            elapsed,
            score=round(min(m.score for _, _, m in best) / 100, 4),
            point=point if len(winners) == 1 else None,
            box=best[0][2].box,
            search=window,
            ocr_conf=round(min(m.conf for _, _, m in best), 1),
        )
        if len(winners) > 1:  # each place the landmarks fit equally: the landmark read there, and the point it implies
            ev.candidates = [Seen(w[0][2].box, round(min(m.score for _, _, m in w) / 100, 4), _mean_point(w)) for w in winners]
        names = ", ".join(sorted({t for _, t, _ in best}))
        ev.detail = (
            f"landmarks only: {names} agree on one point"
            if len(winners) == 1
            else f"landmarks only: {len(winners)} places fit {top} landmark(s) each"
        )
        return ev


def _mean_point(votes: list[tuple[Point, str, TextMatch]]) -> Point:
    xs, ys = [p[0] for p, _, _ in votes], [p[1] for p, _, _ in votes]
    return (round(sum(xs) / len(xs)), round(sum(ys) / len(ys)))


def _evidence(best: _Candidate, cands: list[_Candidate]) -> Evidence:
    others = [c.match.score for c in cands if c is not best]
    return Evidence(
        "ocr",
        "miss",
        0.0,
        score=round(best.match.score / 100, 4),
        runner_up=round(max(others) / 100, 4) if others else None,
        box=best.match.box,
        ocr_conf=round(best.match.conf, 1),
        candidates=[Seen(c.match.box, round(c.match.score / 100, 4), c.point) for c in cands] if others else None,
    )
