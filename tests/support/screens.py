"""Synthetic UI screens drawn with a real TrueType font, so real Tesseract reads them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


def font(size: int = 20) -> ImageFont.FreeTypeFont:
    return ImageFont.truetype(FONT, size)


class Canvas:
    """A light-grey screen to draw labelled buttons and text on."""

    def __init__(self, w: int = 640, h: int = 480) -> None:
        self.img = Image.new("RGB", (w, h), (236, 236, 236))
        self.draw = ImageDraw.Draw(self.img)

    def button(self, x: int, y: int, label: str, w: int = 120, h: int = 40) -> "Canvas":
        self.draw.rectangle([x, y, x + w - 1, y + h - 1], fill=(250, 250, 250), outline=(60, 60, 60), width=2)
        self.draw.text((x + 12, y + 9), label, fill=(0, 0, 0), font=font(20))
        return self

    def text(self, x: int, y: int, text: str, size: int = 22) -> "Canvas":
        self.draw.text((x, y), text, fill=(0, 0, 0), font=font(size))
        return self

    def array(self) -> np.ndarray:
        return np.asarray(self.img, dtype=np.uint8).copy()


def crop(frame: np.ndarray, box: tuple[int, int, int, int]) -> np.ndarray:
    x, y, w, h = box
    return frame[y : y + h, x : x + w].copy()


def save_png(path: Path, rgb: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(rgb).save(path)
