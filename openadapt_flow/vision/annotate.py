"""Draw what the ladder saw on a copy of a frame: the searched region, the best candidate, the click."""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np

from openadapt_flow.vision.template import Box

Color = tuple[int, int, int]  # RGB
SEARCH: Color = (255, 200, 0)
BEST: Color = (230, 30, 30)
OTHER: Color = (255, 120, 0)
POINT: Color = (200, 0, 200)


def annotate(
    frame: np.ndarray,
    *,
    search: Box | None = None,
    best: Box | None = None,
    point: tuple[int, int] | None = None,
    others: Sequence[Box] = (),
    label: str = "",
) -> np.ndarray:
    """A copy of `frame` with the search region (yellow), best candidate (red), other candidates (orange),
    the click point (magenta cross) and a one-line label at the top-left."""
    out = np.ascontiguousarray(frame[..., :3] if frame.ndim == 3 else np.dstack([frame] * 3)).copy()
    if search is not None:
        _rect(out, search, SEARCH, 1)
    for box in others:
        _rect(out, box, OTHER, 2)
    if best is not None:
        _rect(out, best, BEST, 2)
    if point is not None:
        x, y = int(point[0]), int(point[1])
        cv2.drawMarker(out, (x, y), POINT, cv2.MARKER_CROSS, 18, 2)
        cv2.circle(out, (x, y), 10, POINT, 1)
    if label:
        _label(out, label)
    return out


def _rect(img: np.ndarray, box: Box, color: Color, thickness: int) -> None:
    x, y, w, h = (int(v) for v in box)
    cv2.rectangle(img, (x, y), (x + max(w, 1) - 1, y + max(h, 1) - 1), color, thickness)


def _label(img: np.ndarray, text: str) -> None:
    font, scale, thick = cv2.FONT_HERSHEY_SIMPLEX, 0.5, 1
    # OpenCV's Hershey fonts are ASCII-only; keep the label legible rather than garbled.
    text = text.encode("ascii", "replace").decode("ascii")[:160]
    (tw, th), base = cv2.getTextSize(text, font, scale, thick)
    cv2.rectangle(img, (0, 0), (tw + 8, th + base + 8), (0, 0, 0), -1)
    cv2.putText(img, text, (4, th + 4), font, scale, (255, 255, 255), thick, cv2.LINE_AA)
