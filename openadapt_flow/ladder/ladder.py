"""The resolution ladder: template → OCR → (optional) model, first unique confident answer wins.

Rules (spec §4): every rung tried leaves evidence; two look-alikes are
`ambiguous`, never a pick; a look-alike seen by the template rung may be told
apart below only by information the template lacked (a landmark, or a label
outside the crop); the model is off unless allowed, called at most once per
resolve, never for a consequential step unless allowed, and believed only
where a deterministic check passes at its point.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np

from openadapt_flow.bundle.models import Target
from openadapt_flow.ladder.landmarks import LANDMARK_SLACK, contradicted
from openadapt_flow.ladder.model_rung import ModelClient, ModelRung
from openadapt_flow.ladder.ocr_rung import OcrRung, WordReader
from openadapt_flow.ladder.template_rung import Place, TemplateRung
from openadapt_flow.ladder.types import TIE_MARGIN, Box, Evidence, Resolution
from openadapt_flow.vision.ocr import OcrEngine
from openadapt_flow.vision.template import DEFAULT_SCALES, FrameFeatures, TemplateImage, clip_box, pad_box

ModelGate = Callable[[], str | None]  # asked before a model call: why it may not be made, or None


@dataclass(frozen=True)
class LadderOptions:
    threshold: float = 0.85  # grayscale correlation a template hit must reach
    edge_threshold: float = 0.75  # the same on edge maps (theme/colour changes)
    margin: float = TIE_MARGIN  # a hit must beat any plausible look-alike by this much
    detail_min: float = 0.7  # worst block-wise content correlation of a hit (tells "Save" from "Send")
    padding: int = 80  # px around the recorded region searched first (recorded-frame pixels)
    scales: tuple[float, ...] = DEFAULT_SCALES  # relative to the live/recorded frame size ratio; first tried alone
    # (on a frame of another size, the natural size 1.0 is tried first at the recorded pixel place)
    ocr_min_score: float = 80.0  # fuzzy similarity (0-100) of a text match
    landmark_tol: int = LANDMARK_SLACK  # px slack for a landmark's position
    allow_model: bool = False
    model_for_consequential: bool = False
    model_check_threshold: float = 0.6  # template correlation at the model's point that confirms it


_PREPARED: dict[int, tuple[np.ndarray, TemplateImage]] = {}  # id(crop) -> (the crop itself, its prepared image)
PREPARED_KEPT = 256


def prepared(rgb: np.ndarray) -> TemplateImage:
    """The crop's TemplateImage, prepared once per crop array and process: a batch's runs share one loaded bundle, so
    each run's ladder reuses its variants (a TemplateImage is a function of its crop alone)."""
    hit = _PREPARED.get(id(rgb))
    if hit is not None and hit[0] is rgb:  # the crop is held here: its id is not reused while it is
        return hit[1]
    image = TemplateImage(rgb).prepare()
    if len(_PREPARED) >= PREPARED_KEPT:
        _PREPARED.pop(next(iter(_PREPARED)))
    _PREPARED[id(rgb)] = (rgb, image)
    return image


class Ladder:
    """Resolves a step's target on a live frame; counts the model calls it makes in `model_calls`."""

    def __init__(
        self,
        templates: Mapping[str, np.ndarray],
        recorded_size: tuple[int, int],
        ocr: OcrEngine | None = None,
        model: ModelClient | None = None,
        options: LadderOptions | None = None,
    ) -> None:
        self.options = opts = options or LadderOptions()
        self.recorded_size = recorded_size
        self.templates = {path: prepared(rgb) for path, rgb in templates.items()}
        self.model_calls = 0
        self._template = TemplateRung(
            self.templates,
            threshold=opts.threshold,
            edge_threshold=opts.edge_threshold,
            margin=opts.margin,
            detail_min=opts.detail_min,
            scales=opts.scales,
        )
        reader = WordReader(ocr if ocr is not None else OcrEngine)
        self._ocr = OcrRung(
            reader,
            self.templates,
            min_score=opts.ocr_min_score,
            landmark_tol=opts.landmark_tol,
            padding=opts.padding,
            margin=opts.margin,
        )
        self._model = (
            ModelRung(
                model,
                self._ocr,
                self.templates,
                check_threshold=opts.model_check_threshold,
                detail_min=opts.detail_min,
                min_score=opts.ocr_min_score,
                margin=opts.margin,
            )
            if model is not None
            else None
        )
        self._frame: np.ndarray | None = None
        self._feats: FrameFeatures | None = None

    def resolve(
        self,
        frame: np.ndarray,
        target: Target,
        *,
        consequential: bool = False,
        intent: str | None = None,
        model_gate: ModelGate | None = None,
    ) -> Resolution:
        """A unique, confident point for `target` on `frame`, or the reason there is none.

        `model_gate`, asked right before a model call, returns why the call may not be made (or raises)."""
        feats = self._features(frame)
        base = self.base_scale(feats.width, feats.height)
        window = self.window(target, feats.width, feats.height)
        evidence: list[Evidence] = []
        lookalikes = False
        if target.template is not None:
            evidence += self._template.run(
                feats, target, self.places(target, feats.width, feats.height), self.frame_scales(base)
            )
            if evidence[-1].verdict == "hit" and not self._unconfirmed(feats.rgb, target, evidence[-1], base):
                return self._hit(evidence)
            lookalikes = evidence[-1].verdict == "ambiguous"
        if target.text is not None or target.landmarks:
            evidence += self._ocr.run(
                feats.rgb, target, window=window, base_scale=base, lookalikes=lookalikes, feats=feats
            )
            if evidence[-1].verdict == "hit":
                return self._hit(evidence)
        ambiguous = any(e.verdict == "ambiguous" for e in evidence)
        if self._model is not None and self.options.allow_model:
            ev = self._model_step(feats, target, intent, base, consequential, ambiguous, model_gate)
            evidence.append(ev)
            if ev.verdict == "hit":
                return self._hit(evidence)
        ambiguous = any(e.verdict == "ambiguous" for e in evidence)  # the model's check may have seen look-alikes too
        category: Literal["resolution", "ambiguous"] = "ambiguous" if ambiguous else "resolution"
        return Resolution(None, None, evidence, category, failure_message(target, evidence, category, intent))

    def base_scale(self, width: int, height: int) -> float:
        """Live/recorded frame size ratio (geometric mean of the two axes)."""
        rw, rh = self.recorded_size
        return float(np.sqrt((width / rw) * (height / rh)))

    def expected(self, target: Target, width: int, height: int) -> Box | None:
        """The recorded region in live pixels; None when the target has no region."""
        if target.region is None:
            return None
        sx, sy = width / self.recorded_size[0], height / self.recorded_size[1]
        x, y, w, h = target.region
        return (round(x * sx), round(y * sy), max(1, round(w * sx)), max(1, round(h * sy)))

    def places(self, target: Target, width: int, height: int) -> list[Place]:
        """Where the template rung looks first. On a frame of the recorded size: the padded recorded region.
        On another size: the recorded pixel place at the natural size (scale 1: a bigger screen, the app at its
        own pixel size), then the region scaled with the frame over the scale set (a scaled session)."""
        base = self.base_scale(width, height)
        if target.region is None:
            return [Place((0, 0, width, height), None, self.frame_scales(base))]
        scaled = Place(
            self.window(target, width, height) or (0, 0, width, height),
            self.expected(target, width, height),
            tuple(base * f for f in self.options.scales),
        )
        if abs(base - 1.0) < 1e-3:
            return [scaled]
        x, y, w, h = target.region
        near = clip_box((x, y, w, h), width, height)
        window = pad_box((x, y, w, h), self.options.padding, width, height)
        if near is None or window is None or near[2:] != (w, h):
            return [scaled]  # the recorded place is off this frame: only the scaled one exists
        return [Place(window, near, (1.0,)), scaled]

    def frame_scales(self, base: float) -> tuple[float, ...]:
        """The whole frame's scale set: the frame ratio's set, and the natural size."""
        scales = tuple(base * f for f in self.options.scales)
        return scales if any(abs(s - 1.0) < 1e-3 for s in scales) else scales + (1.0,)

    def window(self, target: Target, width: int, height: int) -> Box | None:
        """The recorded region in live pixels, padded; None when the target has no region."""
        live = self.expected(target, width, height)
        if live is None:
            return None
        pad = round(self.options.padding * self.base_scale(width, height))
        return pad_box(live, pad, width, height) or (0, 0, width, height)

    def _model_step(
        self,
        feats: FrameFeatures,
        target: Target,
        intent: str | None,
        base: float,
        consequential: bool,
        ambiguous: bool,
        gate: ModelGate | None,
    ) -> Evidence:
        assert self._model is not None
        if consequential and not self.options.model_for_consequential:
            return Evidence("model", "skipped", 0.0, detail="consequential step: the policy keeps the model off")
        if ambiguous:
            return Evidence("model", "skipped", 0.0, detail="look-alikes: a model's pick among them cannot be checked")
        if target.template is None and target.text is None:
            return Evidence("model", "skipped", 0.0, detail="nothing to check a proposal against (landmarks only)")
        refused = gate() if gate is not None else None
        if refused is not None:
            return Evidence("model", "skipped", 0.0, detail=refused)
        self.model_calls += 1
        return self._model.run(feats.rgb, feats, target, intent, base)

    def _unconfirmed(self, frame: np.ndarray, target: Target, hit: Evidence, base: float) -> bool:
        """A template hit on a target with landmarks (a table cell and its column's header) must have one of them
        where it was recorded: a cell of the same look in another column (widths change) is a look-alike, not a
        hit (its evidence turns `ambiguous`); the OCR rung then needs a landmark to decide. A landmark read nowhere
        on the screen (a small crop, a small header) is no evidence against the hit."""
        if not target.landmarks or hit.point is None:
            return False
        base = hit.scale or base  # the app's own scale where the hit was (natural size on a bigger screen: 1)
        errors = [self._ocr.landmark_error(frame, hit.point, lm, base) for lm in target.landmarks]
        if not contradicted(errors):
            return False
        hit.verdict = "ambiguous"
        hit.detail += (
            "; a look-alike: no landmark ("
            + ", ".join(repr(lm.text) for lm in target.landmarks)
            + ") where it was recorded"
        )
        return True

    def _features(self, frame: np.ndarray) -> FrameFeatures:
        # Keep the last frame's gray/edge maps: resolve and postconditions often ask about the same frame.
        if frame is not self._frame or self._feats is None:
            rgb = np.ascontiguousarray(frame[..., :3]) if frame.ndim == 3 and frame.shape[2] == 4 else frame
            self._frame, self._feats = frame, FrameFeatures(rgb)
        return self._feats

    @staticmethod
    def _hit(evidence: list[Evidence]) -> Resolution:
        win = evidence[-1]
        return Resolution(win.point, win.rung, evidence)


def best_candidate(resolution: Resolution) -> Evidence | None:
    """The evidence whose box is the best candidate seen (for the halt frame): a hit, else the highest score."""
    if resolution.winning is not None:
        return resolution.winning
    boxed = [e for e in resolution.evidence if e.box is not None]
    return max(boxed, key=lambda e: e.score or 0.0, default=None)


def target_name(target: Target, intent: str | None = None) -> str:
    """How a message names the target: by its text (and the step's intent), else by the step's intent, else by its
    landmarks — never by a template's file name, which tells an operator nothing (`templates/01.png`)."""
    why = f" for {intent!r}" if intent else ""
    if target.text:
        return f'"{target.text}"{why}'
    if intent:
        return f"of {intent!r} (its recorded picture: no text on it)"
    if target.landmarks:
        return "beside " + ", ".join(f'"{lm.text}"' for lm in target.landmarks)
    return "(its recorded picture: no text on it, no intent)"


def failure_message(target: Target, evidence: list[Evidence], category: str, intent: str | None = None) -> str:
    """One line naming the target (by its text and the step's intent) and what each rung saw."""
    name = target_name(target, intent)
    if category == "ambiguous":
        amb = next(e for e in evidence if e.verdict == "ambiguous")
        return f"target {name} is ambiguous ({amb.rung}: {amb.detail}); halting rather than picking one"
    seen = []
    tmpl = [e for e in evidence if e.rung.startswith("template") and e.score is not None]
    if tmpl:
        best = max(tmpl, key=lambda e: e.score or 0.0)
        seen.append(f"best template {best.score:.2f} ({best.detail})")
    if any(e.rung == "ocr" for e in evidence):
        ocr_hits = [e for e in evidence if e.rung == "ocr" and e.score is not None]
        seen.append(f"OCR best {max(e.score or 0 for e in ocr_hits):.2f}" if ocr_hits else "OCR read no match")
    model = [e for e in evidence if e.rung == "model"]
    if model:
        seen.append(f"model {model[-1].verdict}: {model[-1].detail}")
    return f"target {name} not found: " + ("; ".join(seen) if seen else "no rung could search for it")
