"""Synthetic desktop frames with known answers: buttons, labels and fields drawn with a TrueType font."""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageDraw, ImageFont

DEJAVU = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
SIZE = (1920, 1080)

LIGHT = {
    "bg": (240, 240, 240),
    "btn": (60, 120, 200),
    "btn_text": (255, 255, 255),
    "text": (20, 20, 20),
    "field": (255, 255, 255),
    "border": (150, 150, 150),
}
DARK = {
    "bg": (30, 30, 34),
    "btn": (90, 160, 90),
    "btn_text": (10, 10, 10),
    "text": (220, 220, 220),
    "field": (50, 50, 50),
    "border": (100, 100, 100),
}
MENU = ("File", "Edit", "View", "Insert", "Format", "Tools", "Help")


def font(px: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    if os.path.exists(DEJAVU):
        return ImageFont.truetype(DEJAVU, px)
    return ImageFont.load_default(size=px)


@dataclass(frozen=True)
class Button:
    text: str
    x: int
    y: int
    width: int = 90


@dataclass(frozen=True)
class Label:
    text: str
    x: int
    y: int


def button_box(b: Button, scale: float = 1.0) -> tuple[int, int, int, int]:
    """The drawn rectangle of a button (x, y, w, h) at `scale`."""
    f = font(int(15 * scale))
    tw = ImageDraw.Draw(Image.new("RGB", (1, 1))).textlength(b.text, font=f)
    w = max(int(b.width * scale), int(tw + 24 * scale))
    return (int(b.x * scale), int(b.y * scale), w, int(30 * scale))


def draw(
    buttons: tuple[Button, ...] | list[Button] = (),
    labels: tuple[Label, ...] | list[Label] = (),
    fields: tuple[tuple[int, int, int, int], ...] = (),
    *,
    theme: dict = LIGHT,
    scale: float = 1.0,
    size: tuple[int, int] = SIZE,
) -> np.ndarray:
    """An RGB frame with a menu bar and the given widgets, everything scaled by `scale` (re-rendered, not resized)."""
    im = Image.new("RGB", size, theme["bg"])
    d = ImageDraw.Draw(im)
    f = font(int(15 * scale))
    for i, word in enumerate(MENU):
        d.text((int((20 + 70 * i) * scale), int(10 * scale)), word, font=f, fill=theme["text"])
    for x, y, w, h in fields:
        s = scale
        d.rectangle(
            [int(x * s), int(y * s), int((x + w) * s), int((y + h) * s)], fill=theme["field"], outline=theme["border"]
        )
    for b in buttons:
        x, y, w, h = button_box(b, scale)
        d.rounded_rectangle([x, y, x + w, y + h], radius=int(5 * scale), fill=theme["btn"])
        tw = d.textlength(b.text, font=f)
        d.text((x + (w - tw) / 2, y + int(6 * scale)), b.text, font=f, fill=theme["btn_text"])
    for lb in labels:
        d.text((int(lb.x * scale), int(lb.y * scale)), lb.text, font=f, fill=theme["text"])
    return np.array(im)


def crop(frame: np.ndarray, box: tuple[int, int, int, int]) -> np.ndarray:
    x, y, w, h = box
    return frame[y : y + h, x : x + w].copy()


def around(box: tuple[int, int, int, int], margin: int = 6) -> tuple[int, int, int, int]:
    """A recorded region: the widget plus a margin, as a recorder would crop it."""
    x, y, w, h = box
    return (x - margin, y - margin, w + 2 * margin, h + 2 * margin)


def text_box(text: str, x: int, y: int, scale: float = 1.0) -> tuple[int, int, int, int]:
    """The ink box of `text` drawn at (x, y): what OCR reports for it."""
    d = ImageDraw.Draw(Image.new("RGB", (1, 1)))
    l, t, r, b = d.textbbox((int(x * scale), int(y * scale)), text, font=font(int(15 * scale)))
    return (int(l), int(t), int(r - l), int(b - t))


def centre(box: tuple[int, int, int, int]) -> tuple[float, float]:
    x, y, w, h = box
    return (x + w / 2, y + h / 2)


def button_text_box(b: Button, scale: float = 1.0) -> tuple[int, int, int, int]:
    """The ink box of a button's label."""
    x, y, w, _ = button_box(b, scale)
    f = font(int(15 * scale))
    d = ImageDraw.Draw(Image.new("RGB", (1, 1)))
    tw = d.textlength(b.text, font=f)
    l, t, r, bt = d.textbbox((x + (w - tw) / 2, y + int(6 * scale)), b.text, font=f)
    return (int(l), int(t), int(r - l), int(bt - t))
