"""Our template and OCR rungs, and pyscreeze (what `pyautogui.locateOnScreen` calls), on the same frames.

"local" resolves as a replay does: the window around the recorded region
first, the whole frame only if the window has no confident match. "full"
searches the whole frame from the start (a target recorded without a region,
or a caller that passes none). Every resolve gets a fresh copy of its frame,
so no per-frame cache carries over from the previous one.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from openadapt_flow.bench.frames import BUNDLE_DIR, Case, inside
from openadapt_flow.bench.stats import Cell
from openadapt_flow.bundle.loader import load_bundle
from openadapt_flow.bundle.models import Step, Target
from openadapt_flow.ladder.ladder import Ladder, LadderOptions
from openadapt_flow.vision.ocr import OcrEngine

AREAS = ("local", "full")
FULL_FRAME_PADDING = 1_000_000  # a window padded past every edge is the whole frame
PYSCREEZE_VARIANTS: dict[str, dict[str, Any]] = {"exact": {}, "conf=0.9": {"confidence": 0.9}}


def bundle_steps() -> list[Step]:
    """The demo bundle's steps: every one has a template, a region and a label."""
    return list(load_bundle(BUNDLE_DIR).model.steps)


def recorded_templates(healthy: Case, steps: list[Step]) -> dict[str, np.ndarray]:
    """Each step's template cut from the healthy frames of this screen size, as a recorder would cut it."""
    out = {}
    for step in steps:
        t = step.target
        assert t is not None and t.template is not None and t.region is not None
        x, y, w, h = t.region
        out[t.template] = np.ascontiguousarray(healthy.frame_for(step.id)[y : y + h, x : x + w])
    return out


def template_only(t: Target) -> Target:
    return t.model_copy(update={"text": None, "text_offset": None, "landmarks": []})


def ocr_only(t: Target) -> Target:
    return t.model_copy(update={"template": None})


def ladder(size: tuple[int, int], templates: dict[str, np.ndarray], area: str, ocr: OcrEngine | None = None) -> Ladder:
    padding = 80 if area == "local" else FULL_FRAME_PADDING
    return Ladder(templates, size, ocr=ocr, options=LadderOptions(padding=padding))


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return (time.perf_counter() - t0) * 1000, out


def bench_template(
    cases: list[Case],
    steps: list[Step],
    templates: dict[str, np.ndarray],
    reps: int,
    folder: Path | None = None,
    ours: bool = True,
) -> tuple[list[dict], list[dict]]:
    """Our template rung and (given a needle folder) pyscreeze, interleaved rep by rep on each (case, target).

    Returns our rows (ms per `Ladder.resolve`, where it clicked) and pyscreeze's, each pyscreeze row timed as
    called (needle file, PIL screenshot) and, in `matcher_only`, on arrays held in memory."""
    ps = _Pyscreeze(cases[0], steps, templates, folder) if folder is not None else None
    ours_rows: list[dict] = []
    ps_cells = {(v, a, c.name): (Cell(), Cell()) for v in PYSCREEZE_VARIANTS for a in AREAS for c in cases}
    for area in AREAS:
        lad = ladder(cases[0].size, templates, area)
        for case in cases:
            cell = Cell()
            for step in steps:
                assert step.target is not None
                target, frame = template_only(step.target), case.frame_for(step.id)
                if ours:
                    lad.resolve(frame.copy(), target)  # warm: the template's scaled variants are built once per run
                ps_calls = ps.calls(case, step, area, lad) if ps is not None else []
                res, ps_boxes = None, [[None, None] for _ in ps_calls]  # last box: as called, matcher only
                for _ in range(reps):
                    if ours:
                        f = frame.copy()
                        ms, res = _timed(lambda: lad.resolve(f, target))
                        cell.ms.append(ms)
                    for i, (variant, called, matcher) in enumerate(ps_calls):
                        for j, fn in enumerate((called, matcher)):
                            ms, ps_boxes[i][j] = _timed(fn)
                            ps_cells[(variant, area, case.name)][j].ms.append(ms)
                if ours:
                    assert res is not None
                    cell.score(inside(res.point, case.truth[step.id]) if res.ok else None)
                for (variant, _, _), boxes in zip(ps_calls, ps_boxes):
                    for j, box in enumerate(boxes):
                        ps_cells[(variant, area, case.name)][j].score(_box_hit(box, step.target, case.truth[step.id]))
            if ours:
                ours_rows.append({"size": _size(case), "case": case.name, "area": area, **cell.to_json()})
    ps_rows = (
        [
            {
                "engine": "pyscreeze",
                "variant": v,
                "size": _size(cases[0]),
                "case": c,
                "area": a,
                **called.to_json(),
                "matcher_only": matcher.to_json(),
            }
            for (v, a, c), (called, matcher) in ps_cells.items()
        ]
        if ps is not None
        else []
    )
    return ours_rows, ps_rows


def bench_ocr(
    cases: list[Case], steps: list[Step], templates: dict[str, np.ndarray], reps: int, ocr: OcrEngine
) -> list[dict]:
    """OCR rung alone (the target's template withheld): ms per resolve, every read cold."""
    rows = []
    lad = ladder(cases[0].size, templates, "local", ocr)
    for case in cases:
        cell = Cell()
        for step in steps:
            assert step.target is not None
            target, frame = ocr_only(step.target), case.frame_for(step.id)
            res = None
            for _ in range(reps):
                f = frame.copy()
                ocr.clear_cache()
                ms, res = _timed(lambda: lad.resolve(f, target))
                cell.ms.append(ms)
            assert res is not None
            cell.score(inside(res.point, case.truth[step.id]) if res.ok else None)
        rows.append({"size": _size(case), "case": case.name, **cell.to_json()})
    return rows


class _Pyscreeze:
    """pyscreeze.locate (the matcher behind pyautogui.locateOnScreen), two ways per call.

    As called: a needle PNG file and a PIL screenshot, as `locateOnScreen` passes them (its file read and
    conversions are timed). Matcher only: the needle and the frame as BGR arrays held in memory (its documented
    OpenCV input), so only its own grayscale conversion and match are timed."""

    def __init__(self, case: Case, steps: list[Step], templates: dict[str, np.ndarray], folder: Path) -> None:
        import pyscreeze  # type: ignore[import-untyped]

        self.mod = pyscreeze
        self.needles = write_needles(case, steps, templates, folder)
        self.needle_arrays = {
            s.id: np.ascontiguousarray(templates[s.target.template][..., ::-1])
            for s in steps
            if s.target is not None and s.target.template is not None
        }
        self.shots: dict[int, tuple[Image.Image, np.ndarray]] = {}

    def calls(
        self, case: Case, step: Step, area: str, lad: Ladder
    ) -> list[tuple[str, Callable[[], Any], Callable[[], Any]]]:
        """(variant, as-called, matcher-only) per variant; the screenshot and arrays are made here, untimed."""
        assert step.target is not None
        frame = case.frame_for(step.id)
        if id(frame) not in self.shots:
            self.shots[id(frame)] = (Image.fromarray(frame), np.ascontiguousarray(frame[..., ::-1]))
        shot, bgr = self.shots[id(frame)]
        region = lad.window(step.target, *case.size) if area == "local" else None
        needle, needle_bgr = str(self.needles[step.id]), self.needle_arrays[step.id]
        return [
            (
                variant,
                partial(_locate, self.mod, needle, shot, region, kwargs),
                partial(_locate, self.mod, needle_bgr, bgr, region, kwargs),
            )
            for variant, kwargs in PYSCREEZE_VARIANTS.items()
        ]


def _box_hit(box: Any, target: Target, truth: tuple[int, int, int, int]) -> bool | None:
    """Scored as our rung clicks: the box's origin plus the recorded click offset inside the crop."""
    if box is None:
        return None
    ox, oy = target.click_offset()
    return inside((int(box[0]) + ox, int(box[1]) + oy), truth)


def write_needles(case: Case, steps: list[Step], templates: dict[str, np.ndarray], folder: Path) -> dict[str, Path]:
    """Each step's template as a PNG file (what a pyautogui user passes), per screen size."""
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for step in steps:
        assert step.target is not None and step.target.template is not None
        path = folder / f"{_size(case)}-{Path(step.target.template).name}"
        if not path.exists():
            Image.fromarray(templates[step.target.template]).save(path)
        out[step.id] = path
    return out


def _locate(pyscreeze: Any, needle: Any, shot: Any, region: Any, kwargs: dict[str, Any]) -> Any:
    try:
        return pyscreeze.locate(needle, shot, region=region, **kwargs)
    except pyscreeze.ImageNotFoundException:
        return None


def _size(case: Case) -> str:
    return f"{case.size[0]}x{case.size[1]}"
