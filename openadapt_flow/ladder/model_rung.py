"""Model rung: a grounding model proposes a point; a deterministic check at that point decides.

The model is an OpenAI-compatible chat-completions endpoint that sees the frame
(base64 PNG data URI) and the instruction, and answers `{"x": int, "y": int}`.
Its proposal is accepted only if the target's text is read by OCR around the
point, or the template correlates there (shape and content) above a lower
threshold, and nothing elsewhere on the frame passes the same check as well
(within the tie margin): a model's pick between look-alikes is a guess. The
click then lands relative to what the check found.
"""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from openadapt_flow.bundle.models import Target
from openadapt_flow.imaging.png import encode_png
from openadapt_flow.ladder.chat_http import ModelError, post_chat
from openadapt_flow.ladder.ocr_rung import OcrRung
from openadapt_flow.ladder.template_rung import click_point
from openadapt_flow.ladder.types import TIE_MARGIN, Evidence, Point, Seen
from openadapt_flow.vision.ocr import find_text
from openadapt_flow.vision.template import Candidate, FrameFeatures, Mode, TemplateImage, Thresholds, find_template

_JSON_OBJECT = re.compile(r"\{[^{}]*\}")


class ModelClient:
    """OpenAI-compatible chat-completions client for a grounding model (stdlib HTTP, always with a timeout)."""

    def __init__(self, base_url: str, model: str, *, api_key: str | None = None, timeout_s: float = 30.0) -> None:
        self.base_url = base_url
        self.model = model
        self.api_key = api_key
        self.timeout_s = timeout_s

    def locate(self, image: np.ndarray, instruction: str) -> Point:
        """Ask where to act in `image`; return the model's (x, y) in image pixels."""
        data_uri = "data:image/png;base64," + base64.b64encode(encode_png(image)).decode("ascii")
        body = {
            "model": self.model,
            "temperature": 0,
            "max_tokens": 64,
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": instruction},
                        {"type": "image_url", "image_url": {"url": data_uri}},
                    ],
                }
            ],
        }
        return _parse_point(post_chat(self.base_url, body, timeout_s=self.timeout_s, api_key=self.api_key))


def _parse_point(content: str) -> Point:
    for candidate in [content.strip(), *_JSON_OBJECT.findall(content)]:
        try:
            obj = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(obj, dict) and _is_number(obj.get("x")) and _is_number(obj.get("y")):
            return (round(obj["x"]), round(obj["y"]))
    raise ModelError(f'model reply holds no {{"x": int, "y": int}}: {content[:80]!r}')


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def instruction_for(target: Target, intent: str | None, width: int, height: int) -> str:
    what = f'the element labelled "{target.text}"' if target.text else "the element shown in the recording"
    parts = [f"Find {what} in this {width}x{height} screenshot."]
    if intent:
        parts.append(f"The step's intent: {intent}.")
    parts.append('Answer only with JSON {"x": <int>, "y": <int>}: the pixel to click.')
    return " ".join(parts)


class ModelRung:
    """One model call, then the deterministic check at the proposed point."""

    def __init__(
        self,
        client: ModelClient,
        ocr: OcrRung,
        templates: Mapping[str, TemplateImage],
        *,
        check_threshold: float = 0.6,
        detail_min: float = 0.6,
        min_score: float = 80.0,
        slack: int = 12,
        margin: float = TIE_MARGIN,
    ) -> None:
        self.client = client
        self.ocr = ocr
        self.templates = templates
        self.check_threshold = check_threshold
        self.detail_min = detail_min
        self.min_score = min_score
        self.slack = slack
        self.margin = margin

    def run(self, frame: np.ndarray, feats: FrameFeatures, target: Target, intent: str | None, base: float) -> Evidence:
        t0 = time.perf_counter()
        h, w = frame.shape[:2]
        try:
            proposed = self.client.locate(frame, instruction_for(target, intent, w, h))
        except ModelError as e:
            return Evidence("model", "error", _ms(t0), detail=str(e))
        ev = Evidence("model", "miss", 0.0, box=(proposed[0] - 8, proposed[1] - 8, 16, 16))
        if not (0 <= proposed[0] < w and 0 <= proposed[1] < h):
            ev.detail = f"model proposed {proposed}, outside the {w}x{h} frame"
        else:
            self._check(frame, feats, target, base, proposed, ev)
        ev.elapsed_ms = _ms(t0)
        return ev

    def _check(
        self, frame: np.ndarray, feats: FrameFeatures, target: Target, base: float, p: Point, ev: Evidence
    ) -> None:
        """Fill `ev` with the check's verdict: hit only if the template or the text is really at `p`."""
        s = round(self.slack * base)
        if target.template is not None and target.template in self.templates and target.region is not None:
            tmpl = self.templates[target.template]
            ox, oy = target.click_offset()
            fw, fh = round(target.region[2] * base), round(target.region[3] * base)
            x0, y0 = round(p[0] - ox * base), round(p[1] - oy * base)
            modes: tuple[Mode, Mode] = ("gray", "edges")
            for mode in modes:
                r = find_template(
                    feats,
                    tmpl,
                    mode=mode,
                    box=(x0 - s, y0 - s, fw + 2 * s, fh + 2 * s),
                    scales=(base,),
                    thresholds=Thresholds(
                        confident=self.check_threshold, detail_min=self.detail_min, consider=self.check_threshold
                    ),
                )
                if r.best is not None and r.best.score >= self.check_threshold and r.plausible(r.best):
                    ev.verdict, ev.score, ev.box = "hit", round(r.best.score, 4), r.best.box
                    ev.point, ev.scale = click_point(target, tmpl, r.best.box), round(base, 4)
                    ev.detail = f"model proposed {p}; template ({mode}) {r.best.score:.2f} there"
                    twin = self._template_twin(feats, tmpl, mode, r.best, base)
                    if twin is not None:
                        ev.verdict, ev.point, ev.runner_up = "ambiguous", None, round(twin.rank, 4)
                        ev.candidates = [
                            Seen(c.box, round(c.rank, 4), click_point(target, tmpl, c.box)) for c in (r.best, twin)
                        ]
                        ev.detail += (
                            f", but a look-alike at {twin.box[:2]} ranks {twin.rank:.2f} against its "
                            f"{r.best.rank:.2f} (margin {self.margin:.2f}): the model's pick is a guess"
                        )
                    return
        if target.text is not None:
            dx, dy = target.text_offset if target.text_offset is not None else (0, 0)
            cx, cy = p[0] - dx * base, p[1] - dy * base
            bw, bh = (60 + 16 * len(target.text)) * base + 2 * s, 40 * base + 2 * s
            box = (round(cx - bw / 2), round(cy - bh / 2), round(bw), round(bh))
            found = find_text(self.ocr.reader.read(frame, box), target.text, self.min_score)
            if found:
                m = found[0]
                ev.verdict, ev.score, ev.box, ev.ocr_conf = "hit", round(m.score / 100, 4), m.box, round(m.conf, 1)
                ev.point = self.ocr.click_for(m, target, base, frame)
                ev.detail = f"model proposed {p}; OCR read {m.text!r} there"
                # any other reading of the text, there or anywhere on the frame, passes the same check: a tie
                others = [
                    o
                    for o in found[1:] + find_text(self.ocr.reader.read(frame), target.text, self.min_score)
                    if not (
                        abs(o.centre[0] - m.centre[0]) <= max(o.box[2], m.box[2]) / 2
                        and abs(o.centre[1] - m.centre[1]) <= max(o.box[3], m.box[3]) / 2
                    )
                ]
                if others:
                    ev.verdict, ev.point = "ambiguous", None
                    ev.candidates = [
                        Seen(o.box, round(o.score / 100, 4), self.ocr.click_for(o, target, base, frame))
                        for o in [m, *others]
                    ]
                    ev.detail += f", but it is also read at {others[0].box[:2]}: the model's pick is a guess"
                return
        ev.detail = f"model proposed {p}; neither the template nor the text is there"

    def _template_twin(
        self, feats: FrameFeatures, tmpl: TemplateImage, mode: Mode, hit: Candidate, scale: float
    ) -> Candidate | None:
        """A place elsewhere on the frame where the template ranks within the margin of the checked one (or above)."""
        r = find_template(
            feats,
            tmpl,
            mode=mode,
            box=feats.frame_box,
            scales=(scale,),
            thresholds=Thresholds(
                confident=self.check_threshold, detail_min=self.detail_min, consider=max(0.0, hit.rank - self.margin)
            ),
        )
        rivals = [c for c in (r.best, r.runner_up) if c is not None and not c.overlaps(hit)]
        twin = max(rivals, key=lambda c: (c.rank, c.score), default=None)
        return twin if twin is not None and twin.rank > hit.rank - self.margin else None


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 3)
