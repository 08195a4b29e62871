"""Draw what the ladder saw on a copy of a frame: the searched region, the best candidate, the click."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from PIL import Image, ImageDraw

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
    img = Image.fromarray(np.ascontiguousarray(frame[..., :3] if frame.ndim == 3 else np.dstack([frame] * 3)), "RGB")
    draw = ImageDraw.Draw(img)
    if search is not None:
        _rect(draw, search, SEARCH, 1)
    for box in others:
        _rect(draw, box, OTHER, 2)
    if best is not None:
        _rect(draw, best, BEST, 2)
    if point is not None:
        x, y = int(point[0]), int(point[1])
        draw.line([(x - 9, y), (x + 9, y)], fill=POINT, width=2)
        draw.line([(x, y - 9), (x, y + 9)], fill=POINT, width=2)
        draw.ellipse([(x - 10, y - 10), (x + 10, y + 10)], outline=POINT, width=1)
    if label:
        _label(draw, label)
    return np.array(img)


def _rect(draw: ImageDraw.ImageDraw, box: Box, color: Color, thickness: int) -> None:
    """The box's outline, `thickness` pixels drawn outwards from its edge pixels."""
    x, y, w, h = (int(v) for v in box)
    grow = thickness // 2
    draw.rectangle(
        [(x - grow, y - grow), (x + max(w, 1) - 1 + grow, y + max(h, 1) - 1 + grow)], outline=color, width=thickness
    )


def _label(draw: ImageDraw.ImageDraw, text: str) -> None:
    """`text` in white on a black band at the top-left (Pillow's built-in font; characters it lacks become "?")."""
    text = text.encode("ascii", "replace").decode("ascii")[:160]
    left, top, right, bottom = draw.textbbox((4, 4), text)
    draw.rectangle([(0, 0), (right + 4, bottom + 4)], fill=(0, 0, 0))
    draw.text((4, 4), text, fill=(255, 255, 255))
