"""Times the original openadapt-flow (2.4.x) matcher and OCR on frames saved to disk.

Run by path with the Python of the separate venv that holds the original
package (it has our top-level name, so it cannot share our venv):

    bench/.venv-orig/bin/python openadapt_flow/bench/orig_driver.py JOB.json OUT.json

It imports nothing of ours. The calls and thresholds are those of its own
resolver (runtime/resolver.py): the template rung at 0.985 in the padded
recorded region with `prefer_near`, then the whole frame; the OCR rung reads
the whole frame once and prefers candidates inside the padded region.

The template is timed two ways, interleaved rep by rep so load falls on both
alike: "as called" (`find_template` on PNG bytes, its decode included) and
"matcher only" (its matcher function `_find_template_arrays` on the frame and
template decoded once, untimed, by its own `_decode_gray`).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

# This script's folder holds our modules: never let them shadow the original's imports (run it with -I too).
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if p and Path(p).resolve() != _HERE]

from openadapt_flow.vision import find_template, find_text_candidates  # type: ignore[attr-defined]  # noqa: E402
from openadapt_flow.vision.match import _decode_gray, _find_template_arrays  # type: ignore[import-not-found]  # noqa: E402
from openadapt_flow.vision.ocr import clear_ocr_memo  # type: ignore[attr-defined]  # noqa: E402

TEMPLATE_THRESHOLD = 0.985  # its resolver's TEMPLATE_THRESHOLD
OCR_MIN_RATIO = 0.9  # its resolver's OCR_MIN_RATIO


def click_in(region: list[int], recorded: list[int], click: list[int]) -> list[int]:
    """Its _scaled_click_point: the recorded click offset carried into the matched region."""
    mx, my, mw, mh = region
    ax, ay, aw, ah = recorded
    return [round(mx + (click[0] - ax) * mw / aw), round(my + (click[1] - ay) * mh / ah)]


def _resolve(find: Any, screen: Any, tmpl: Any, area: str, window: list[int], near: tuple[int, int]) -> Any:
    """Its resolver's template rung: the padded region first (local), then the whole frame."""
    if area == "local":
        m = find(screen, tmpl, search_region=tuple(window), threshold=TEMPLATE_THRESHOLD, prefer_near=near)
        if m is not None:
            return m
    return find(screen, tmpl, threshold=TEMPLATE_THRESHOLD, prefer_near=near)


def _timed(fn: Any) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return (time.perf_counter() - t0) * 1000, out


def template_item(item: dict, png: bytes, tmpl: bytes) -> dict:
    region, click, window = item["region"], item["click"], item["window"]
    near = (region[0], region[1])
    screen_gray, tmpl_gray = _decode_gray(png), _decode_gray(tmpl)  # decoded once, outside every timer
    out = {}
    for area in item.get("areas", ("local", "full")):
        called: list[float] = []
        matcher: list[float] = []
        point = matcher_point = None
        for _ in range(item["reps"]):
            ms, m = _timed(lambda: _resolve(find_template, png, tmpl, area, window, near))
            called.append(ms)
            point = click_in(list(m.region), region, click) if m is not None else None
            ms, m = _timed(lambda: _resolve(_find_template_arrays, screen_gray, tmpl_gray, area, window, near))
            matcher.append(ms)
            matcher_point = click_in(list(m.region), region, click) if m is not None else None
        out[area] = {"ms": called, "point": point, "matcher_ms": matcher, "matcher_point": matcher_point}
    return out


def ocr_item(item: dict, png: bytes) -> dict:
    wx, wy, ww, wh = item["window"]
    dx, dy = item["text_offset"] or (0, 0)
    ms, point = [], None
    for _ in range(item["reps"]):
        clear_ocr_memo()
        t0 = time.perf_counter()
        cands = find_text_candidates(png, item["text"], region=None, min_ratio=OCR_MIN_RATIO)
        local = [c for c in cands if wx <= c.point[0] < wx + ww and wy <= c.point[1] < wy + wh]
        pool = local or cands
        ms.append((time.perf_counter() - t0) * 1000)
        point = [pool[0].point[0] + dx, pool[0].point[1] + dy] if len(pool) == 1 else None
    return {"ms": ms, "point": point}


def main() -> None:
    job = json.loads(Path(sys.argv[1]).read_text())
    files: dict[str, bytes] = {}

    def read(path: str) -> bytes:
        if path not in files:
            files[path] = Path(path).read_bytes()
        return files[path]

    results: dict[str, list] = {"template": [], "ocr": []}
    for item in job["template"]:
        results["template"].append(
            {"key": item["key"], **template_item(item, read(item["frame"]), read(item["template"]))}
        )
    if job["ocr"]:
        first = job["ocr"][0]
        find_text_candidates(read(first["frame"]), first["text"])  # loads the OCR models once, untimed
    for item in job["ocr"]:
        results["ocr"].append({"key": item["key"], **ocr_item(item, read(item["frame"]))})
    Path(sys.argv[2]).write_text(json.dumps(results))


if __name__ == "__main__":
    main()
