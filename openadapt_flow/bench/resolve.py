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
from pathlib import Path
from typing import Any

import cv2
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


def bench_template(cases: list[Case], steps: list[Step], templates: dict[str, np.ndarray], reps: int) -> list[dict]:
    """Template rung per (case, area): ms per resolve and where it clicked."""
    rows = []
    for area in AREAS:
        lad = ladder(cases[0].size, templates, area)
        for case in cases:
            cell = Cell()
            for step in steps:
                assert step.target is not None
                target, frame = template_only(step.target), case.frame_for(step.id)
                lad.resolve(frame.copy(), target)  # warm: the template's scaled variants are built once per run
                res = None
                for _ in range(reps):
                    f = frame.copy()
                    ms, res = _timed(lambda: lad.resolve(f, target))
                    cell.ms.append(ms)
                assert res is not None
                cell.score(inside(res.point, case.truth[step.id]) if res.ok else None)
            rows.append({"size": _size(case), "case": case.name, "area": area, **cell.to_json()})
    return rows


def bench_ocr(cases: list[Case], steps: list[Step], templates: dict[str, np.ndarray], reps: int, ocr: OcrEngine) -> list[dict]:
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


def bench_pyscreeze(
    cases: list[Case], steps: list[Step], templates: dict[str, np.ndarray], reps: int, folder: Path
) -> list[dict]:
    """pyscreeze.locate (the matcher behind pyautogui.locateOnScreen) with a needle file, as users call it."""
    import pyscreeze  # type: ignore[import-untyped]

    needles = write_needles(cases[0], steps, templates, folder)
    windows = ladder(cases[0].size, templates, "local")
    rows = []
    for variant, kwargs in PYSCREEZE_VARIANTS.items():
        for area in AREAS:
            for case in cases:
                cell = Cell()
                for step in steps:
                    assert step.target is not None
                    shot = Image.fromarray(case.frame_for(step.id))
                    region = windows.window(step.target, *case.size) if area == "local" else None
                    box = None
                    for _ in range(reps):
                        ms, box = _timed(lambda: _locate(pyscreeze, str(needles[step.id]), shot, region, kwargs))
                        cell.ms.append(ms)
                    if box is None:
                        cell.score(None)
                    else:  # clicked where the recording clicked inside the crop, as our rung does
                        ox, oy = step.target.click_offset()
                        cell.score(inside((int(box[0]) + ox, int(box[1]) + oy), case.truth[step.id]))
                rows.append({"engine": "pyscreeze", "variant": variant, "size": _size(case), "case": case.name,
                             "area": area, **cell.to_json()})
    return rows


def write_needles(case: Case, steps: list[Step], templates: dict[str, np.ndarray], folder: Path) -> dict[str, Path]:
    """Each step's template as a PNG file (what a pyautogui user passes), per screen size."""
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for step in steps:
        assert step.target is not None and step.target.template is not None
        path = folder / f"{_size(case)}-{Path(step.target.template).name}"
        if not path.exists():
            cv2.imwrite(str(path), cv2.cvtColor(templates[step.target.template], cv2.COLOR_RGB2BGR))
        out[step.id] = path
    return out


def _locate(pyscreeze: Any, needle: str, shot: Image.Image, region: Any, kwargs: dict[str, Any]) -> Any:
    try:
        return pyscreeze.locate(needle, shot, region=region, **kwargs)
    except pyscreeze.ImageNotFoundException:
        return None


def _size(case: Case) -> str:
    return f"{case.size[0]}x{case.size[1]}"
