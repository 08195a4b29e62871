"""PNG bytes to pixels and back (Pillow): templates, frames, the report's figures, Tesseract's and a model's input."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image


def encode_png(pixels: np.ndarray, level: int = 1) -> bytes:
    """PNG bytes of an RGB or gray uint8 image; `level` is zlib's (1: fast, what frames use)."""
    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(pixels, dtype=np.uint8)).save(buf, "PNG", compress_level=level)
    return buf.getvalue()


def decode_rgb(data: bytes) -> np.ndarray | None:
    """An RGB uint8 array of an encoded image (PNG, JPEG, …; gray and alpha made RGB), None when it does not decode."""
    try:
        with Image.open(io.BytesIO(data)) as im:
            return np.asarray(im.convert("RGB"))
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError):  # not an image, truncated, corrupt, huge
        return None
