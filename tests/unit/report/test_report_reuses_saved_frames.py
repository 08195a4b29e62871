"""The report at a run's stop shows the frames the run saved without decoding them again, and their embedded copies
were made as they were saved (on the frame writer's thread); the figures are the same as from the bytes alone."""

from __future__ import annotations

import numpy as np

from openadapt_flow.imaging.png import known_pixels
from openadapt_flow.report import figures
from openadapt_flow.store.frames import FrameWriter


def _frame(seed: int) -> np.ndarray:
    img = np.full((300, 400, 3), 40, np.uint8)  # a flat desktop around an app
    img[50:250, 60 + seed : 340, :] = 200
    img[100:120, 100:200, 0] = seed
    img.flags.writeable = False  # as backends hand frames out
    return img


def test_a_saved_frame_is_shown_from_its_pixels_and_its_thumbnail_is_ready(tmp_path):
    writer = FrameWriter(tmp_path / "frames")
    frame = _frame(7)
    writer.save("000-a-after.png", frame)
    writer.close()
    png = (tmp_path / "frames" / "000-a-after.png").read_bytes()  # the report reads the file: other bytes objects
    assert known_pixels(png) is frame
    before = figures.thumbnail.cache_info()
    shown = figures.framed(png, "frames/000-a-after.png", figures.Marks(), width=figures.STEP_W, cls="after", alt="a")
    after = figures.thumbnail.cache_info()
    assert after.hits == before.hits + 1 and after.misses == before.misses  # made as it was saved

    figures.thumbnail.cache_clear()
    figures.app_region.cache_clear()
    figures._decoded.cache_clear()
    fresh = png + b""  # equal bytes, but what the report would compute from the file alone
    assert figures.app_region(fresh) == (52 + 7, 42, 296 - 7, 216)  # the app, padded by APP_PAD
    assert (
        figures.framed(fresh, "frames/000-a-after.png", figures.Marks(), width=figures.STEP_W, cls="after", alt="a")
        == shown
    )


def test_a_frame_not_saved_here_is_decoded_from_its_bytes():
    from openadapt_flow.imaging.png import encode_png

    png = encode_png(np.ascontiguousarray(_frame(3)))
    assert known_pixels(png) is None
    assert figures.app_region(png) == (52 + 3, 42, 296 - 3, 216)
