"""Times the original openadapt-flow (2.4.x) matcher and OCR on frames saved to disk.

Run by path with the Python of the separate venv that holds the original
package (it has our top-level name, so it cannot share our venv):

    bench/.venv-orig/bin/python openadapt_flow/bench/orig_driver.py JOB.json OUT.json

It imports nothing of ours. The calls and thresholds are those of its own
resolver (runtime/resolver.py): the template rung at 0.985 in the padded
recorded region with `prefer_near`, then the whole frame; the OCR rung reads
the whole frame once and prefers candidates inside the padded region.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

# This script's folder holds our modules: never let them shadow the original's imports (run it with -I too).
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if p and Path(p).resolve() != _HERE]

from openadapt_flow.vision import find_template, find_text_candidates  # type: ignore[attr-defined]  # noqa: E402
from openadapt_flow.vision.ocr import clear_ocr_memo  # type: ignore[attr-defined]  # noqa: E402

TEMPLATE_THRESHOLD = 0.985  # its resolver's TEMPLATE_THRESHOLD
OCR_MIN_RATIO = 0.9  # its resolver's OCR_MIN_RATIO


def click_in(region: list[int], recorded: list[int], click: list[int]) -> list[int]:
    """Its _scaled_click_point: the recorded click offset carried into the matched region."""
    mx, my, mw, mh = region
    ax, ay, aw, ah = recorded
    return [round(mx + (click[0] - ax) * mw / aw), round(my + (click[1] - ay) * mh / ah)]


def template_item(item: dict, png: bytes, tmpl: bytes) -> dict:
    region, click, window = item["region"], item["click"], item["window"]
    near = (region[0], region[1])
    out = {}
    for area in item.get("areas", ("local", "full")):
        ms, point = [], None
        for _ in range(item["reps"]):
            t0 = time.perf_counter()
            if area == "local":
                m = find_template(png, tmpl, search_region=tuple(window), threshold=TEMPLATE_THRESHOLD, prefer_near=near)
                if m is None:
                    m = find_template(png, tmpl, threshold=TEMPLATE_THRESHOLD, prefer_near=near)
            else:
                m = find_template(png, tmpl, threshold=TEMPLATE_THRESHOLD, prefer_near=near)
            ms.append((time.perf_counter() - t0) * 1000)
            point = click_in(list(m.region), region, click) if m is not None else None
        out[area] = {"ms": ms, "point": point}
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
        results["template"].append({"key": item["key"], **template_item(item, read(item["frame"]), read(item["template"]))})
    if job["ocr"]:
        first = job["ocr"][0]
        find_text_candidates(read(first["frame"]), first["text"])  # loads the OCR models once, untimed
    for item in job["ocr"]:
        results["ocr"].append({"key": item["key"], **ocr_item(item, read(item["frame"]))})
    Path(sys.argv[2]).write_text(json.dumps(results))


if __name__ == "__main__":
    main()
