"""Ground truth of the drift corpus: where each target's widget is, per drift kind, and targets.json built from it.

A person placed a seed on each widget in each frame, looking at the frames;
the box is then measured from the pixels, not typed in: `flood` grows the
widget's face from a seed inside it up to its drawn border (buttons, tabs,
table cells), `ink` takes the bounding box of everything drawn in a rough
rectangle around a borderless widget (menu and toolbar items, icons) and pads
it by a few pixels — smaller than the real widget, so a click counted right
surely hit it. Drifts that only move pixels (moved, natural, and the twin
where the target is untouched) take the healthy box plus the known offset,
checked pixel for pixel; those boxes are marked "derived", the rest
"annotated". A target with no box in a drift is one no click can be right
about there: absent from the screen, or with an identical twin.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from openadapt_flow.bench.drift_corpus import SCHEMA, DriftCorpus

Box = tuple[int, int, int, int]
# A rule per target per drift: ("flood", x, y) | ("ink", x, y, w, h) | ("shift",) from healthy | ("none", why).
Rule = tuple[Any, ...]
PACKAGES = {
    "galculator": ("galculator 2.1.4-1.2", "GTK 3"),
    "mousepad": ("mousepad 0.5.10-2", "GTK 3"),
    "sqlitebrowser": ("sqlitebrowser 3.12.2-1", "Qt 5"),
}
INK_PAD = 3


def flood_box(frame: np.ndarray, seed: tuple[int, int], tol: int = 3) -> Box:
    """The face of a bordered widget: flood from `seed` over small steps (gradients) up to the border; its bounding box."""
    gray = cv2.cvtColor(frame, cv2.COLOR_RGB2GRAY)
    mask = np.zeros((gray.shape[0] + 2, gray.shape[1] + 2), np.uint8)
    _, _, _, rect = cv2.floodFill(gray.copy(), mask, seed, 0, (tol,), (tol,), 4 | cv2.FLOODFILL_MASK_ONLY | (255 << 8))
    x, y, w, h = (int(v) for v in rect)
    if w * h > 200 * 120:
        raise ValueError(f"flood from {seed} leaked ({w}x{h}): no border around it")
    return x, y, w, h


def ink_box(frame: np.ndarray, rough: Box, pad: int = INK_PAD, diff: int = 150) -> Box:
    """Bounding box of what is drawn in `rough` (pixels far from its commonest colour), padded."""
    x, y, w, h = rough
    patch = frame[y : y + h, x : x + w].reshape(-1, 3).astype(int)
    colours, counts = np.unique(patch, axis=0, return_counts=True)
    bg = colours[counts.argmax()]
    ink = (np.abs(patch - bg).sum(axis=1) > diff).reshape(h, w)
    ys, xs = np.nonzero(ink)
    if len(xs) == 0:
        raise ValueError(f"nothing drawn in {rough}")
    fh, fw = frame.shape[:2]
    x0, y0 = max(0, x + xs.min() - pad), max(0, y + ys.min() - pad)
    x1, y1 = min(fw, x + xs.max() + 1 + pad), min(fh, y + ys.max() + 1 + pad)
    return int(x0), int(y0), int(x1 - x0), int(y1 - y0)


def measure(frame: np.ndarray, rule: Rule) -> Box:
    if rule[0] == "flood":
        return flood_box(frame, (rule[1], rule[2]))
    if rule[0] == "ink":
        return ink_box(frame, tuple(rule[1:5]))  # type: ignore[arg-type]
    raise ValueError(f"rule {rule[0]!r} measures nothing")


def _shift(box: Box, offset: tuple[int, int]) -> Box:
    return (box[0] + offset[0], box[1] + offset[1], box[2], box[3])


def _same_pixels(a: np.ndarray, box_a: Box, b: np.ndarray, box_b: Box) -> bool:
    (xa, ya, w, h), (xb, yb, _, _) = box_a, box_b
    return np.array_equal(a[ya : ya + h, xa : xa + w], b[yb : yb + h, xb : xb + w])


def read_rgb(path: Path) -> np.ndarray:
    return cv2.cvtColor(cv2.imread(str(path), cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)


def truth_for(folder: Path, capture: dict, target: dict, drift: str, healthy_box: Box) -> dict[str, Any]:
    """One target's truth in one drift, from its rule; shifted boxes are checked against the healthy pixels."""
    rule: Rule = target["rules"].get(drift, ("shift",))
    screen = target["screen"]
    frame = read_rgb(folder / capture[drift]["frames"][screen])
    if rule[0] == "none":
        return {"box": None, "unambiguous": False, "source": "annotated", "note": rule[1]}
    if rule[0] == "shift":
        box = _shift(healthy_box, tuple(capture[drift].get("offset") or (0, 0)))  # type: ignore[arg-type]
        healthy = read_rgb(folder / capture["healthy"]["frames"][screen])
        if not _same_pixels(healthy, healthy_box, frame, box):
            raise ValueError(
                f"{target['id']} in {drift}: the widget's pixels are not the healthy ones moved: annotate it"
            )
        return {"box": list(box), "unambiguous": True, "source": "derived"}
    box = measure(frame, rule)
    offset = tuple(capture[drift].get("offset") or (0, 0))
    source = "derived" if box == _shift(healthy_box, offset) else "annotated"  # type: ignore[arg-type]
    return {"box": list(box), "unambiguous": True, "source": source}


def build_app(name: str, folder: Path) -> None:
    """Cut the templates from the healthy frame and write targets.json (validated) for one app."""
    from drift_targets import TARGETS

    capture = json.loads((folder / "capture.json").read_text())
    (folder / "crops").mkdir(exist_ok=True)
    targets = []
    for t in TARGETS[name]:
        healthy = read_rgb(folder / capture["healthy"]["frames"][t["screen"]])
        box = measure(healthy, t["rules"]["healthy"])
        x, y, w, h = box
        crop = f"crops/{t['id']}.png"
        cv2.imwrite(
            str(folder / crop),
            cv2.cvtColor(healthy[y : y + h, x : x + w], cv2.COLOR_RGB2BGR),
            [cv2.IMWRITE_PNG_COMPRESSION, 9],
        )
        truth = {d: truth_for(folder, capture, t, d, box) for d in capture}
        targets.append(
            {
                "id": t["id"],
                "screen": t["screen"],
                "what": t["what"],
                "template": crop,
                "region": list(box),
                "text": t.get("text"),
                "truth": truth,
            }
        )
    package, toolkit = PACKAGES[name]
    drifts = {d: {k: v for k, v in c.items() if k in ("size", "how", "frames", "offset")} for d, c in capture.items()}
    doc = {
        "schema": SCHEMA,
        "app": name,
        "package": package,
        "toolkit": toolkit,
        "recorded_size": capture["healthy"]["size"],
        "drifts": drifts,
        "targets": targets,
    }
    DriftCorpus.model_validate(doc)
    (folder / "targets.json").write_text(json.dumps(doc, indent=1) + "\n")
    print(f"{name}: {len(targets)} targets × {len(drifts)} drifts -> {folder / 'targets.json'}")
