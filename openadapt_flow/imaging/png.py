"""PNG bytes to pixels and back (Pillow): templates, frames, the report's figures, Tesseract's and a model's input."""

from __future__ import annotations

import io
import threading
from collections import OrderedDict
from collections.abc import Callable

import numpy as np
from PIL import Image

# The pixels of PNGs this process encoded lately (frames it saved), so that reading one back (the report at a run's
# stop) costs no decode. Bounded by bytes held: the newest frames stay, the oldest are decoded from their bytes again.
KNOWN_BUDGET = 24 * 1024 * 1024
_known: OrderedDict[bytes, np.ndarray] = OrderedDict()
_known_lock = threading.Lock()
_known_held = 0
_on_remembered: list[Callable[[bytes], object]] = []  # when_remembered: work a later reader of the bytes will need


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


def remember_decoded(png: bytes, pixels: np.ndarray) -> None:
    """Note that `png` decodes to `pixels` (its encoder's input: an RGB uint8 array nobody writes to), for
    `known_pixels`; anything else is not kept."""
    global _known_held
    if pixels.flags.writeable or pixels.dtype != np.uint8 or pixels.ndim != 3 or pixels.shape[2] != 3:
        return
    if pixels.nbytes > KNOWN_BUDGET:
        return
    with _known_lock:
        if png in _known:
            _known.move_to_end(png)
            return
        _known[png] = pixels
        _known_held += pixels.nbytes
        while _known_held > KNOWN_BUDGET:
            _, old = _known.popitem(last=False)
            _known_held -= old.nbytes
    for prepare in _on_remembered:
        try:
            prepare(png)
        except Exception:  # noqa: BLE001 - preparing ahead is an optimisation; the reader does the work itself then
            pass


def when_remembered(prepare: Callable[[bytes], object]) -> None:
    """Call `prepare(png)` for every PNG `remember_decoded` keeps, on the thread that encoded it (a frame writer's,
    off the run's hot path): what a reader of those bytes will compute (the report's thumbnails) is then ready."""
    if prepare not in _on_remembered:
        _on_remembered.append(prepare)


def known_pixels(png: bytes) -> np.ndarray | None:
    """The RGB pixels `png` was encoded from by this process lately (read-only), or None: decode it then."""
    with _known_lock:
        return _known.get(png)
