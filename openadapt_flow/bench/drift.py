"""The `drift` bench part: every engine on the drift corpus of real apps, scored right / wrong / halted per drift kind.

Engines, on the same frames and templates: our ladder's template rung alone
(the target's label withheld), our full ladder with OCR, pyscreeze.locate
(what pyautogui.locateOnScreen calls) over the whole frame, and
openadapt-flow 2.4.0's resolver (template in the padded region, then the
whole frame, then OCR when the target has a label) through `orig_driver.py`.
Ours resolves as a replay does: the recorded frame size is 1024x768, so a
1920x1080 frame is a screen change to it. Every resolve gets a fresh copy of
its frame and, for OCR, a cold read cache.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from openadapt_flow.bench.drift_corpus import AppCorpus, DriftTarget, Outcome, classify
from openadapt_flow.bench.orig import DRIVER, _clean_env
from openadapt_flow.bench.stats import p95
from openadapt_flow.ladder.ladder import Ladder
from openadapt_flow.vision.ocr import OcrEngine

ENGINES = ("template", "ladder", "pyscreeze conf=0.9", "pyscreeze exact", "orig")
PYSCREEZE = {"pyscreeze conf=0.9": {"confidence": 0.9}, "pyscreeze exact": {}}


@dataclass
class DriftCell:
    """One engine on one (app, drift): per-target outcomes, rungs that answered, ms per resolve."""

    ms: list[float] = field(default_factory=list)
    right: int = 0
    wrong: int = 0
    halted: int = 0
    unambiguous: int = 0
    unambiguous_right: int = 0
    rungs: dict[str, int] = field(default_factory=dict)  # which rung gave each click (ours only)

    def add(self, outcome: Outcome, unambiguous: bool, rung: str | None = None) -> None:
        setattr(self, outcome, getattr(self, outcome) + 1)
        self.unambiguous += unambiguous
        self.unambiguous_right += unambiguous and outcome == "right"
        if rung is not None:
            self.rungs[rung] = self.rungs.get(rung, 0) + 1

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "right": self.right,
            "wrong": self.wrong,
            "halted": self.halted,
            "unambiguous": self.unambiguous,
            "unambiguous_right": self.unambiguous_right,
            "n": len(self.ms),
        }
        if self.ms:
            out |= {"median_ms": round(statistics.median(self.ms), 3), "p95_ms": round(p95(self.ms), 3)}
        if self.rungs:
            out["rungs"] = dict(sorted(self.rungs.items()))
        return out


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return (time.perf_counter() - t0) * 1000, out


def _ladder(app: AppCorpus, ocr: OcrEngine | None = None) -> Ladder:
    return Ladder(app.templates, tuple(app.model.recorded_size), ocr=ocr)  # type: ignore[arg-type]


def _targets(app: AppCorpus, drift: str) -> list[DriftTarget]:
    return [t for t in app.model.targets if drift in t.truth]


def bench_ours(app: AppCorpus, reps: int, ocr: OcrEngine | None) -> list[dict[str, Any]]:
    """Our template rung alone, and (with an OCR engine) the full ladder, per drift kind."""
    rows = []
    engines: list[tuple[str, Ladder, int]] = [("template", _ladder(app), reps)]
    if ocr is not None:
        engines.append(("ladder", _ladder(app, ocr), max(1, min(reps, 3))))
    for engine, lad, n in engines:
        for drift in app.drifts:
            cell = DriftCell()
            for t in _targets(app, drift):
                target = t.as_target()
                if engine == "template":
                    target = target.model_copy(update={"text": None, "text_offset": None, "landmarks": []})
                frame = app.frame(drift, t)
                res = None
                for _ in range(n):
                    f = frame.copy()
                    if ocr is not None:
                        ocr.clear_cache()
                    ms, res = _timed(lambda: lad.resolve(f, target))
                    cell.ms.append(ms)
                assert res is not None
                truth = t.truth[drift]
                cell.add(classify(res.point, truth), truth.unambiguous, res.rung)
            rows.append({"app": app.model.app, "drift": drift, "engine": engine, **cell.to_json()})
    return rows


def bench_pyscreeze(app: AppCorpus, reps: int) -> list[dict[str, Any]]:
    """pyscreeze.locate(needle file, screenshot) over the whole frame, as `locateOnScreen` is usually called."""
    import pyscreeze  # type: ignore[import-untyped]

    rows = []
    for engine, kwargs in PYSCREEZE.items():
        for drift in app.drifts:
            cell = DriftCell()
            for t in _targets(app, drift):
                shot = Image.fromarray(app.frame(drift, t))
                needle = str(app.folder / t.template)
                box = None
                for _ in range(reps):
                    ms, box = _timed(lambda: _locate(pyscreeze, needle, shot, kwargs))
                    cell.ms.append(ms)
                ox, oy = t.as_target().click_offset()
                point = (int(box[0]) + ox, int(box[1]) + oy) if box is not None else None
                truth = t.truth[drift]
                cell.add(classify(point, truth), truth.unambiguous)
            rows.append({"app": app.model.app, "drift": drift, "engine": engine, **cell.to_json()})
    return rows


def _locate(pyscreeze: Any, needle: str, shot: Image.Image, kwargs: dict[str, Any]) -> Any:
    try:
        return pyscreeze.locate(needle, shot, **kwargs)
    except pyscreeze.ImageNotFoundException:
        return None


def _run_driver(py: Path, job: dict[str, Any], work: Path, name: str) -> dict[str, Any]:
    job_path, out_path = work / f"{name}-job.json", work / f"{name}-out.json"
    job_path.write_text(json.dumps(job))
    proc = subprocess.run(
        [str(py), "-I", str(DRIVER), str(job_path), str(out_path)],
        capture_output=True,
        text=True,
        timeout=1800,
        cwd=work,
        env=_clean_env(),
    )
    if proc.returncode != 0:
        raise RuntimeError(f"the original engine's driver failed: {proc.stderr.strip()[-800:]}")
    return json.loads(out_path.read_text())


def bench_orig(py: Path, apps: list[AppCorpus], work: Path, reps: int, ocr_reps: int) -> list[dict[str, Any]]:
    """openadapt-flow 2.4.0's resolver: its template rung (window, then whole frame), then its OCR for a labelled miss."""
    work.mkdir(parents=True, exist_ok=True)
    labels: dict[str, DriftTarget] = {}  # "app/drift/target" -> the target (for its label)
    tmpl_job: dict[str, list[Any]] = {"template": [], "ocr": []}
    for app in apps:
        lad = _ladder(app)
        for drift in app.drifts:
            for t in _targets(app, drift):
                frame = app.frame(drift, t)
                h, w = frame.shape[:2]
                target = t.as_target()
                window = lad.window(target, w, h) or (0, 0, w, h)
                key = [app.model.app, drift, t.id]
                labels["/".join(key)] = t
                tmpl_job["template"].append(
                    {
                        "key": key,
                        "frame": str(app.folder / _frame_file(app, drift, t)),
                        "template": str(app.folder / t.template),
                        "region": list(t.region),
                        "click": list(target.recorded_point() or (0, 0)),
                        "window": list(window),
                        "reps": reps,
                        "areas": ["local"],
                    }
                )
    tmpl_out = _run_driver(py, tmpl_job, work, "drift-orig-template")
    ocr_job: dict[str, list[Any]] = {"template": [], "ocr": []}
    found: dict[str, dict[str, Any]] = {}
    for item, job_item in zip(tmpl_out["template"], tmpl_job["template"]):
        name = "/".join(item["key"])
        found[name] = {"ms": item["local"]["ms"], "point": item["local"]["point"]}
        t = labels[name]
        if item["local"]["point"] is None and t.text is not None:
            ocr_job["ocr"].append(
                {
                    "key": item["key"],
                    "frame": job_item["frame"],
                    "text": t.text,
                    "text_offset": t.text_offset,
                    "window": job_item["window"],
                    "reps": ocr_reps,
                }
            )
    if ocr_job["ocr"]:
        for item in _run_driver(py, ocr_job, work, "drift-orig-ocr")["ocr"]:
            name = "/".join(item["key"])
            base = statistics.median(found[name]["ms"])  # its template rung ran (and missed) before its OCR
            found[name] = {"ms": [base + m for m in item["ms"]], "point": item["point"]}
    return _orig_rows(apps, found)


def _frame_file(app: AppCorpus, drift: str, t: DriftTarget) -> str:
    return app.model.drifts[drift].frames[t.screen]


def _orig_rows(apps: list[AppCorpus], found: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for app in apps:
        for drift in app.drifts:
            cell = DriftCell()
            for t in _targets(app, drift):
                got = found[f"{app.model.app}/{drift}/{t.id}"]
                cell.ms += got["ms"]
                point = (int(got["point"][0]), int(got["point"][1])) if got["point"] else None
                truth = t.truth[drift]
                cell.add(classify(point, truth), truth.unambiguous)
            rows.append({"app": app.model.app, "drift": drift, "engine": "orig", **cell.to_json()})
    return rows


def frames_digest(apps: list[AppCorpus]) -> str:
    """A short digest of every frame and template, so a results file names the corpus it measured."""
    import hashlib

    h = hashlib.sha1()
    for app in apps:
        for frame_key in sorted(app.frames):
            h.update(np.ascontiguousarray(app.frames[frame_key]).tobytes())
        for file in sorted(app.templates):
            h.update(app.templates[file].tobytes())
    return h.hexdigest()[:12]
