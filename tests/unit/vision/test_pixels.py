"""imaging.pixels and imaging.png held to values worked out by hand: each function is an OpenCV call (or a few lines
around one), and these pin what the package relies on — rounding, borders, types — whatever OpenCV version is in."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
import tomllib
from PIL import Image, ImageDraw

from openadapt_flow.imaging import pixels
from openadapt_flow.imaging.png import decode_rgb, encode_png
from openadapt_flow.vision.template import edge_map

ROOT = Path(__file__).resolve().parents[3]


def _ui(w: int = 320, h: int = 200, seed: int = 1) -> np.ndarray:
    """A UI-like frame: flat ground, filled and outlined boxes, text."""
    rng = np.random.default_rng(seed)
    im = Image.new("RGB", (w, h), (236, 236, 236))
    d = ImageDraw.Draw(im)
    for _ in range(25):
        x, y = int(rng.integers(0, w - 20)), int(rng.integers(0, h - 10))
        d.rectangle(
            (x, y, x + int(rng.integers(5, 80)), y + int(rng.integers(5, 30))),
            outline=tuple(rng.integers(0, 255, 3).tolist()),
            fill=tuple(rng.integers(0, 255, 3).tolist()),
        )
        d.text((int(rng.integers(0, w - 40)), int(rng.integers(0, h - 10))), "Save as", fill=(0, 0, 0))
    return np.asarray(im)


def test_gray_is_the_rounded_luminance() -> None:
    rgb = np.array([[[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 255, 255], [10, 20, 30]]], np.uint8)
    assert pixels.to_gray(rgb).tolist() == [[76, 150, 29, 255, 18]]  # 0.299 R + 0.587 G + 0.114 B, rounded
    gray = np.arange(12, dtype=np.uint8).reshape(3, 4)
    assert pixels.to_gray(gray) is gray


def test_blur_and_sobel_of_an_impulse_and_a_step() -> None:
    dot = np.zeros((5, 5), np.uint8)
    dot[2, 2] = 160
    assert pixels.blur3(dot)[1:4, 1:4].tolist() == [[10, 20, 10], [20, 40, 20], [10, 20, 10]]
    step = np.zeros((4, 6), np.uint8)
    step[:, 3:] = 100
    sx = pixels.sobel(step, 1, 0)
    assert sx.dtype == np.int16 and sx[1].tolist() == [0, 0, 400, 400, 0, 0]  # [-1 0 1] x [1 2 1]
    assert not pixels.sobel(step, 0, 1).any()
    assert pixels.scale_abs(-sx).max() == 255 and pixels.scale_abs(sx, 0.25)[1].tolist() == [0, 0, 100, 100, 0, 0]
    with pytest.raises(ValueError, match="dx=1, dy=1"):
        pixels.sobel(step, 1, 1)


@pytest.mark.parametrize("k", [3, 5])
def test_square_morphology_grows_and_shrinks_by_half_the_side(k: int) -> None:
    dot = np.zeros((11, 11), bool)
    dot[5, 5] = True
    grown = pixels.dilate(dot, k)
    r = k // 2
    assert grown.dtype == np.bool_ and grown.sum() == k * k and grown[5 - r : 6 + r, 5 - r : 6 + r].all()
    assert np.array_equal(pixels.erode(grown, k), dot)
    full = np.full((4, 4), 200, np.uint8)
    assert np.array_equal(pixels.erode(full, k), full)  # outside the image does not erode the edge
    assert np.array_equal(pixels.dilate(dot, 1), dot) and pixels.dilate(dot, 1) is not dot


def test_median_takes_out_salt_and_keeps_edges() -> None:
    gray = np.zeros((9, 9), np.uint8)
    gray[:, 5:] = 200
    salted = gray.copy()
    salted[2, 1] = salted[6, 2] = 255
    assert np.array_equal(pixels.median(salted, 3), gray)


def test_integral_is_the_table_of_sums() -> None:
    x = np.arange(6, dtype=np.uint8).reshape(2, 3)
    table = pixels.integral(x)
    assert table.dtype == np.float64 and table.tolist() == [[0, 0, 0, 0], [0, 0, 1, 3], [0, 3, 8, 15]]
    assert pixels.integral(x.astype(np.int64)).tolist() == table.tolist()


def test_resize_by_whole_blocks_averages_and_keeps_the_type() -> None:
    img = np.array([[0, 4, 8, 8], [4, 8, 8, 8]], np.uint8)
    assert pixels.resize(img, (2, 1)).tolist() == [[4, 8]]
    assert pixels.resize(img, (4, 2)) is img
    floats = img.astype(np.float32) / 8
    half = pixels.resize(floats, (2, 1))
    assert half.dtype == np.float32 and half.tolist() == [[0.5, 1.0]]
    big = pixels.scale(img, 2.0, "cubic")
    assert big.shape == (4, 8) and big.dtype == np.uint8
    assert pixels.scale(_ui(), 0.5).shape == (100, 160, 3)
    assert pixels.scale(np.zeros((3, 3), np.uint8), 0.1).shape == (1, 1)  # at least one pixel


def test_png_round_trips_and_refuses_what_is_not_an_image() -> None:
    rgb = _ui()
    assert np.array_equal(decode_rgb(encode_png(rgb)), rgb)
    gray = pixels.to_gray(rgb)
    assert np.array_equal(decode_rgb(encode_png(gray)), np.dstack([gray] * 3))
    assert decode_rgb(b"") is None and decode_rgb(b"\x89PNG\r\n\x1a\nnot really") is None
    assert decode_rgb(encode_png(rgb)[:200]) is None


def test_inpaint_paints_a_caret_away() -> None:
    field = np.full((20, 60, 3), 250, np.uint8)
    field[:, :1] = field[:, -1:] = 120  # the field's border
    caret = np.zeros((20, 60), bool)
    caret[4:16, 30:32] = True
    drawn = field.copy()
    drawn[caret] = 0
    assert np.array_equal(pixels.inpaint(drawn, caret), field)
    assert np.array_equal(pixels.inpaint(drawn, np.zeros_like(caret)), drawn)


def test_the_template_edge_map_of_a_step_and_of_its_negative() -> None:
    step = np.zeros((6, 10), np.uint8)
    step[:, 5:] = 100
    row = [0, 0, 0, 50, 128, 128, 50, 0, 0, 0]  # blurred, |Sobel x| + |Sobel y| halved, held to 255
    assert edge_map(step).tolist() == [row] * 6 and edge_map(255 - step).tolist() == [row] * 6
    assert not edge_map(np.full((30, 30), 77, np.uint8)).any()


@pytest.mark.parametrize("tol", [0, 16, 254])
def test_differs_is_any_channel_over_the_tolerance(tol: int) -> None:
    a = np.random.default_rng(3).integers(0, 256, (97, 131, 3), dtype=np.uint8)
    b = a.copy()
    b[3:9, 5:40, 1] ^= 0x5A  # one channel changed
    expected = (np.abs(a.astype(int) - b.astype(int)) > tol).any(axis=2)
    assert np.array_equal(pixels.differs(a, b, tol), expected)
    assert np.array_equal(pixels.differs(a[..., 0], b[..., 0], tol), np.abs(a[..., 0].astype(int) - b[..., 0]) > tol)
    assert np.array_equal(pixels.absdiff(a, b), np.abs(a.astype(int) - b.astype(int)).astype(np.uint8))


def test_one_image_engine_opencv_in_the_core_install_called_from_imaging_only() -> None:
    """Issue 32: OpenCV is a core dependency and imaging/ is the one place that calls it; no engine switch is left."""
    found = []
    for path in (ROOT / "openadapt_flow").rglob("*.py"):
        text = path.read_text()
        assert "OPENADAPT_FLOW_IMAGING" not in text and "cv2 is not None" not in text, path
        for node in ast.walk(ast.parse(text, str(path))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            found += [str(path.relative_to(ROOT)) for n in names if n.split(".")[0] == "cv2"]
    assert sorted(found) == [
        "openadapt_flow/imaging/components.py",
        "openadapt_flow/imaging/ncc.py",
        "openadapt_flow/imaging/pixels.py",
    ]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert [d for d in project["dependencies"] if d.startswith("opencv-python-headless")]
    assert "fast" not in project["optional-dependencies"]
    assert pixels.opencv_version().split(".")[0].isdigit()
