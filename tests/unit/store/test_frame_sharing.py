"""FrameWriter off the hot path: what it copies, what it encodes once."""

from pathlib import Path

import cv2
import numpy as np
import pytest

from openadapt_flow.store import frames
from openadapt_flow.store.frames import FrameWriter

pytestmark = pytest.mark.timeout(30)


def _decoded(path: Path) -> np.ndarray:
    return cv2.cvtColor(cv2.imdecode(np.frombuffer(path.read_bytes(), np.uint8), cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)


def test_a_writable_frame_is_written_as_it_was_when_saved(tmp_path: Path) -> None:
    fw = FrameWriter(tmp_path / "frames")
    pixels = np.full((8, 10, 3), 40, np.uint8)
    fw.save("a.png", pixels)
    pixels[:] = 200  # the caller reuses its buffer before the writer thread gets to it
    fw.close()
    assert (_decoded(tmp_path / "frames/a.png") == 40).all()


def test_a_shared_frame_saved_twice_in_a_row_is_encoded_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    encoded: list[tuple[int, ...]] = []
    real = frames._encode_png

    def counting(pixels: np.ndarray) -> bytes:
        encoded.append(pixels.shape)
        return real(pixels)

    monkeypatch.setattr(frames, "_encode_png", counting)
    fw = FrameWriter(tmp_path / "frames")
    still = np.full((8, 10, 3), 90, np.uint8)
    still.flags.writeable = False  # as backends hand frames out: shared until the screen changes
    changed = np.full((8, 10, 3), 150, np.uint8)
    changed.flags.writeable = False
    fw.save("000-a-after.png", still)
    fw.save("001-b-before.png", still)
    fw.save("001-b-after.png", changed)
    fw.close()
    assert len(encoded) == 2
    out = tmp_path / "frames"
    assert (out / "000-a-after.png").read_bytes() == (out / "001-b-before.png").read_bytes()
    assert (_decoded(out / "001-b-before.png") == 90).all() and (_decoded(out / "001-b-after.png") == 150).all()


def test_a_masked_frame_is_never_served_from_the_unmasked_encoding(tmp_path: Path) -> None:
    fw = FrameWriter(tmp_path / "frames")
    still = np.full((8, 10, 3), 90, np.uint8)
    still.flags.writeable = False
    fw.save("a.png", still)
    fw.flush()
    fw.mask = lambda p: np.zeros_like(p)  # a secret was typed: from now on frames are painted over
    fw.save("b.png", still)
    fw.close()
    assert (_decoded(tmp_path / "frames/a.png") == 90).all()
    assert (_decoded(tmp_path / "frames/b.png") == 0).all()
