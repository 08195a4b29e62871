"""OCR rung: find the target's label by Tesseract, closely in the window around its recorded place and on the
whole frame.

Every reading on the frame is a candidate; several are told apart only by a clear margin (see `_decide`):
landmarks (stable text at a recorded offset from the click point), the recorded crop, or, for a hand-written
text-only target, a phrase of its own — never by reading order or by which one lay in the window. Else `ambiguous`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from openadapt_flow.bundle.models import Landmark, Target
from openadapt_flow.ladder.landmarks import LANDMARK_SLACK, contradicted, decide, error, fits, search_box
from openadapt_flow.ladder.types import TIE_MARGIN, Box, Evidence, Point, Seen
from openadapt_flow.vision.ocr import OcrEngine, TextMatch, Word, find_text
from openadapt_flow.vision.template import (
    FrameFeatures,
    Mode,
    TemplateImage,
    Thresholds,
    clip_box,
    find_template,
    pad_box,
)


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
    scale: float  # the app's scale where it was read (its words' width against the crop's)


# Several readings of the target's text are told apart (docs/decisions.md, "Ties"), in this order, each only by a
# clear margin: the target's landmarks (`ladder.landmarks`); else, for a target with a template, the recorded crop
# correlating at each by at least the template rung's margin, the best at least CROP_FLOOR; else, for a hand-written
# target with text only, one reading that is a phrase of its own while the others are part of longer lines. Never
# by reading order or by which one the window around the recorded place happened to hold.
CROP_FLOOR = 0.6
CROP_SHIFT = 6  # px the crop may sit off the place its reading implies (the text's box is not pixel-exact)


class OcrRung:
    def __init__(
        self,
        reader: WordReader,
        templates: Mapping[str, TemplateImage],
        *,
        min_score: float = 80.0,
        landmark_tol: int = LANDMARK_SLACK,
        padding: int = 80,
        margin: float = TIE_MARGIN,
    ) -> None:
        self.reader = reader
        self.templates = templates
        self.min_score = min_score
        self.landmark_tol = landmark_tol
        self.padding = padding
        self.margin = margin
        self._crop_text: dict[str, tuple[float, float, int] | None] = {}

    def run(
        self,
        frame: np.ndarray,
        target: Target,
        *,
        window: Box | None,
        base_scale: float,
        lookalikes: bool = False,
        feats: FrameFeatures | None = None,
    ) -> list[Evidence]:
        """Evidence of the search; the last one is the hit or the ambiguity if there is one.

        Every reading of the target's text on the whole frame is a candidate, those in the window around the
        recorded region (read first, closer) included: a single reading in the window is no answer while the
        frame holds another. `lookalikes`: the template rung saw near-identical candidates, so a label inside the
        crop cannot tell them apart; only landmarks (or a label outside the crop, `text_offset`) may.
        """
        if target.text is None:
            return [self._landmarks_only(frame, target, window, base_scale)]
        h, w = frame.shape[:2]
        full = (0, 0, w, h)
        evidence: list[Evidence] = []
        t0 = time.perf_counter()
        matches: list[TextMatch] = []
        if window is not None and window != full:
            matches = self._read(frame, window, target.text)
            if not matches:
                evidence.append(
                    Evidence("ocr", "miss", _ms(t0), search=window, detail=f"no text matching {target.text!r}")
                )
                t0 = time.perf_counter()
        in_window = len(matches)
        for m in self._read(frame, full, target.text):
            if not any(_same_place(m, k) for k in matches):
                matches.append(m)
        cands = [self._candidate(m, target, base_scale, frame) for m in matches]
        feats = feats if feats is not None else FrameFeatures(frame)
        ev = self._decide(frame, feats, target, cands, base_scale, lookalikes and target.text_offset is None)
        ev.search = full
        if in_window and len(cands) > in_window:
            ev.detail += f" ({in_window} in the window around the recorded place, {len(cands) - in_window} elsewhere)"
        ev.elapsed_ms = _ms(t0)
        evidence.append(ev)
        return evidence

    def _read(self, frame: np.ndarray, area: Box, text: str) -> list[TextMatch]:
        matches = find_text(self.reader.read(frame, area), text, self.min_score)
        if not matches:  # a small dialog's label missed at 1x: read it again enlarged (no-op for a big area)
            matches = find_text(self.reader.engine.read_enlarged(frame, area), text, self.min_score)
        return matches

    def _decide(
        self,
        frame: np.ndarray,
        feats: FrameFeatures,
        target: Target,
        cands: list[_Candidate],
        base: float,
        need_landmark: bool,
    ) -> Evidence:
        text = target.text
        if not cands:
            return Evidence("ocr", "miss", 0.0, detail=f"no text matching {text!r}")
        if target.landmarks:
            return self._by_landmarks(frame, target, cands, base, need_landmark)
        ev = _evidence(cands[0], cands)
        if need_landmark:
            ev.verdict = "ambiguous"
            ev.detail = f"{text!r} is on look-alike widgets the template could not tell apart; no landmark to decide"
            return ev
        if len(cands) == 1:
            ev.verdict, ev.point, ev.detail = "hit", cands[0].point, f"read {cands[0].match.text!r}"
            return ev
        if target.template is not None and target.template in self.templates:
            return self._by_crop(feats, target, cands)
        # a hand-written target's text (a field's label) is a phrase of its own: the same word inside a longer
        # line (a heading "Patient intake" over the "Patient" field) is not it
        wholes = [c for c in cands if c.match.whole]
        if len(wholes) == 1:
            ev = _evidence(wholes[0], cands)
            ev.verdict, ev.point = "hit", wholes[0].point
            ev.detail = (
                f"{len(cands)} matches for {text!r}; one is a phrase of its own, the others part of a longer line"
            )
            return ev
        ev.verdict, ev.detail = "ambiguous", f"{len(cands)} matches for {text!r}; no landmark to decide"
        return ev

    def _by_landmarks(
        self, frame: np.ndarray, target: Target, cands: list[_Candidate], base: float, need_landmark: bool
    ) -> Evidence:
        """The landmarks' clear-margin rule (`ladder.landmarks.decide`). A single reading the template saw no
        look-alike of stands unless its landmarks are read on the screen and none where recorded (`contradicted`)."""
        text, names = target.text, [lm.text for lm in target.landmarks]
        errors = [[self.landmark_error(frame, c.point, lm, base) for lm in target.landmarks] for c in cands]
        if len(cands) == 1 and not need_landmark:
            ev = _evidence(cands[0], cands)
            if contradicted(errors[0]):
                ev.verdict = "ambiguous"
                ev.detail = f"read {cands[0].match.text!r}, but no landmark ({', '.join(map(repr, names))}) where recorded: a look-alike"
            else:
                ev.verdict, ev.point, ev.detail = "hit", cands[0].point, f"read {cands[0].match.text!r}"
            return ev
        verdict = decide(errors, names)
        why = (
            f"{len(cands)} matches for {text!r}"
            if len(cands) > 1
            else f"{text!r} is on look-alike widgets the template could not tell apart"
        )
        if verdict.winner is None:
            ev = _evidence(cands[0], cands)
            ev.verdict, ev.detail = "ambiguous", f"{why}; {verdict.detail}"
            return ev
        win = cands[verdict.winner]
        ev = _evidence(win, cands)
        ev.verdict, ev.point, ev.detail = "hit", win.point, f"{why}; {verdict.detail}"
        return ev

    def landmark_error(self, frame: np.ndarray, point: Point, lm: Landmark, base: float) -> float:
        """The landmark's error at `point` (`ladder.landmarks.error`), from a close read around its expected place
        and the whole frame's read (a small header a crop misses is read there)."""
        near = find_text(
            self.reader.read(frame, search_box(point, lm, base, self.landmark_tol)), lm.text, self.min_score
        )
        err = error(point, lm, near, base, self.landmark_tol)
        if fits(err):
            return err
        anywhere = find_text(self.reader.read(frame), lm.text, self.min_score)
        return min(err, error(point, lm, anywhere, base, self.landmark_tol))

    def _by_crop(self, feats: FrameFeatures, target: Target, cands: list[_Candidate]) -> Evidence:
        """The recorded crop correlated where each reading puts it: the one that looks like the recording by the
        template rung's margin (and at least CROP_FLOOR) decides."""
        scores = [self._crop_score(feats, target, c) for c in cands]
        order = sorted(range(len(cands)), key=lambda i: -scores[i])
        best, second = order[0], order[1]
        ev = _evidence(cands[best], cands)
        said = f"{len(cands)} matches for {target.text!r}; the recorded crop correlates {scores[best]:.2f} at the best"
        if scores[best] >= CROP_FLOOR and scores[best] - scores[second] >= self.margin:
            ev.verdict, ev.point = "hit", cands[best].point
            ev.detail = f"{said}, {scores[second]:.2f} at the next: it decides"
        else:
            ev.verdict = "ambiguous"
            ev.detail = (
                f"{said}, {scores[second]:.2f} at the next (a decision needs a margin of {self.margin:.2f} "
                f"and at least {CROP_FLOOR:.2f})"
            )
        return ev

    def _crop_score(self, feats: FrameFeatures, target: Target, c: _Candidate) -> float:
        """The crop's best whole-crop correlation (gray or edges: a theme may have changed) within CROP_SHIFT px of
        where the reading puts it."""
        assert target.template is not None
        tmpl = self.templates[target.template]
        px, py = target.click_offset()
        ox, oy = float(px), float(py)
        if target.region is not None:  # the click offset is in region pixels; the crop covers the region
            ox, oy = ox * tmpl.width / target.region[2], oy * tmpl.height / target.region[3]
        s = c.scale
        pad = round(CROP_SHIFT * s) + 2
        box = (
            round(c.point[0] - ox * s) - pad,
            round(c.point[1] - oy * s) - pad,
            round(tmpl.width * s) + 2 * pad,
            round(tmpl.height * s) + 2 * pad,
        )
        best = 0.0
        modes: tuple[Mode, Mode] = ("gray", "edges")
        for mode in modes:
            r = find_template(
                feats,
                tmpl,
                mode=mode,
                box=box,
                scales=(s,),
                thresholds=Thresholds(confident=CROP_FLOOR, detail_min=0.0, consider=2.0),
            )
            if r.best is not None:
                best = max(best, r.best.score)
        return best

    def click_for(self, m: TextMatch, target: Target, base: float, frame: np.ndarray) -> Point:
        """Text centre moved by where the recording clicked relative to that text."""
        return self._candidate(m, target, base, frame).point

    def _candidate(self, m: TextMatch, target: Target, base: float, frame: np.ndarray) -> _Candidate:
        """The click a reading implies (its centre moved by where the recording clicked relative to that text), and
        the app's scale there (the reading's width against the crop's; else the frame's ratio)."""
        cx, cy = m.centre
        s = base
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
        return _Candidate((min(max(round(cx + dx), 0), w - 1), min(max(round(cy + dy), 0), h - 1)), m, s)

    def _text_in_crop(self, target: Target) -> tuple[float, float, int] | None:
        """Offset from the label's centre to the click point inside the template crop (OCR'd once)."""
        if target.template is None or target.text is None or target.template not in self.templates:
            return None
        key = f"{target.template}\0{target.text}"
        if key not in self._crop_text:
            crop = self.templates[target.template].rgb
            found = find_text(self.reader.engine.read(crop), target.text, self.min_score) or find_text(
                self.reader.engine.read_enlarged(crop), target.text, self.min_score
            )
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

    def _landmarks_only(self, frame: np.ndarray, target: Target, window: Box | None, base: float) -> Evidence:
        """No label: each reading of a landmark, near its recorded place or anywhere on the frame, implies a click
        point; the places they imply are the candidates, judged by the landmarks' clear-margin rule."""
        t0 = time.perf_counter()
        h, w = frame.shape[:2]
        recorded = target.recorded_point()
        votes: list[tuple[Point, str, TextMatch]] = []
        for lm in target.landmarks:
            areas: list[Box] = [(0, 0, w, h)]
            if recorded is not None:  # read closely near its recorded place too: a small word a whole read misses
                ex, ey = (recorded[0] + lm.dx) * base, (recorded[1] + lm.dy) * base
                half = (40 + 10 * len(lm.text)) * base
                local = pad_box(
                    (round(ex - half), round(ey - 20 * base), round(2 * half), round(40 * base)),
                    round(self.padding * base),
                    w,
                    h,
                )
                if local is not None:
                    areas.insert(0, local)
            seen: list[TextMatch] = []
            for area in areas:
                for m in find_text(self.reader.read(frame, area), lm.text, self.min_score):
                    if not any(_same_place(m, k) for k in seen):
                        seen.append(m)
                        votes.append(
                            ((round(m.centre[0] - lm.dx * base), round(m.centre[1] - lm.dy * base)), lm.text, m)
                        )
        elapsed = _ms(t0)
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
        points = [_mean_point(c) for c in clusters]
        errors = [[self.landmark_error(frame, p, lm, base) for lm in target.landmarks] for p in points]
        if len(points) == 1:
            off = contradicted(errors[0])
            winner: int | None = None if off else 0
            detail = (
                "landmarks only: " + ", ".join(sorted({t for _, t, _ in clusters[0]})) + " agree on one point"
                if not off
                else "landmarks only: none fits where the readings put the target"
            )
        else:
            verdict = decide(errors, [lm.text for lm in target.landmarks])
            winner, detail = verdict.winner, f"landmarks only: {len(points)} places; {verdict.detail}"
        best = clusters[winner if winner is not None else 0]
        ev = Evidence(
            "ocr",
            "hit" if winner is not None else "ambiguous",
            elapsed,
            score=round(min(m.score for _, _, m in best) / 100, 4),
            point=points[winner] if winner is not None else None,
            box=best[0][2].box,
            search=window,
            ocr_conf=round(min(m.conf for _, _, m in best), 1),
            detail=detail,
        )
        if len(points) > 1:  # each place a landmark implies: the landmark read there, and the point
            ev.candidates = [
                Seen(c[0][2].box, round(min(m.score for _, _, m in c) / 100, 4), p) for c, p in zip(clusters, points)
            ]
        return ev


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 3)


def _same_place(a: TextMatch, b: TextMatch) -> bool:
    """Two readings of one word (a close read and the whole frame's): each centre inside the other's box."""
    (ax, ay), (bx, by) = a.centre, b.centre
    return abs(ax - bx) <= max(a.box[2], b.box[2]) / 2 and abs(ay - by) <= max(a.box[3], b.box[3]) / 2


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
