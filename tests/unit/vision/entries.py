"""GTK-like entries drawn with a real TrueType font (DejaVu Sans, PIL), for the tests of a field's scrolled text: the
entry clips its text at its padding, PAD px inside its border, and scrolls a text too long for it so the caret stands
at the text area's right edge."""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw, ImageFont

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"  # fonts-dejavu-core
PAD = 8  # px between the entry's border and its text area, where the text is clipped
HEIGHT = 28
INK, FIELD = 30, 255
VALUE, SHORT = "Katherine Johnson", "atherine Johnson"


def font(px: int) -> ImageFont.FreeTypeFont:
    return ImageFont.truetype(FONT, px)


def entry(text: str, width: int, px: int = 15, caret: bool = True, align: str = "left") -> np.ndarray:
    """An entry's face (inside its 1 px border) `width` px wide showing `text`: laid out from the text area's left
    (`align` "left"), centred or aligned right; a text too long for the area is scrolled so the caret, 2 px after
    it, stands at the area's right edge; everything outside the area is clipped."""
    f = font(px)
    advance = round(f.getlength(text))
    area = width - 2 * PAD
    line = Image.new("L", (advance + area + 80, HEIGHT), FIELD)
    ImageDraw.Draw(line).text((40, HEIGHT // 2), text, fill=INK, font=f, anchor="lm")
    if advance + 3 > area:
        start = 40 + advance + 3 - area  # scrolled: the caret at the area's right edge
    else:
        start = {"left": 40, "centre": 40 - (area - advance) // 2, "right": 40 + advance + 3 - area}[align]
    face = np.full((HEIGHT, width), FIELD, np.uint8)
    face[:, PAD : PAD + area] = np.asarray(line.crop((start, 0, start + area, HEIGHT)))
    if caret:
        face[5 : HEIGHT - 5, PAD + 40 + advance + 2 - start] = INK
    return face


def cut_width(px: int) -> int:
    """An entry too narrow for VALUE by a third of its K (the K cut, as zenity showed it); SHORT fits it with the
    rest of the K's width to spare."""
    f = font(px)
    return round(f.getlength(VALUE) - f.getlength("K") / 3) + 3 + 2 * PAD
