"""imaging.pixels and imaging.png against OpenCV, which the core install no longer carries: OpenCV stays in the dev
extra as the reference these functions are held to (exact, or within the stated rounding)."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image, ImageDraw

from openadapt_flow.imaging import pixels
from openadapt_flow.imaging.png import decode_rgb, encode_png
from openadapt_flow.vision.template import edge_map

pytestmark = pytest.mark.usefixtures("numpy_imaging")  # our numpy code, held to OpenCV

ROOT = Path(__file__).resolve().parents[3]


def _ui(w: int = 320, h: int = 200, seed: int = 1) -> np.ndarray:
    """A UI-like frame: flat ground, filled and outlined boxes, text."""
    rng = np.random.default_rng(seed)
    im = Image.new("RGB", (w, h), (236, 236, 236))
    d = ImageDraw.Draw(im)
    for _ in range(25):
        x, y = int(rng.integers(0, w - 20)), int(rng.integers(0, h - 10))
        d.rectangle((x, y, x + int(rng.integers(5, 80)), y + int(rng.integers(5, 30))),
                    outline=tuple(rng.integers(0, 255, 3).tolist()), fill=tuple(rng.integers(0, 255, 3).tolist()))
        d.text((int(rng.integers(0, w - 40)), int(rng.integers(0, h - 10))), "Save as", fill=(0, 0, 0))
    return np.asarray(im)


FRAMES = [_ui(), _ui(131, 97, seed=2), np.random.default_rng(3).integers(0, 256, (97, 131, 3), dtype=np.uint8),
          np.random.default_rng(4).integers(0, 256, (5, 3, 3), dtype=np.uint8)]


@pytest.mark.parametrize("rgb", FRAMES)
def test_gray_and_gradients_match_opencv(rgb: np.ndarray) -> None:
    ref = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
    assert np.abs(pixels.to_gray(rgb).astype(int) - ref).max() <= 1
    assert np.array_equal(pixels.blur3(ref), cv2.GaussianBlur(ref, (3, 3), 0))
    for dx, dy in ((1, 0), (0, 1)):
        sob = pixels.sobel(ref, dx, dy)
        assert sob.dtype == np.int16 and np.array_equal(sob, cv2.Sobel(ref, cv2.CV_16S, dx, dy, ksize=3))
        assert np.array_equal(pixels.scale_abs(sob), cv2.convertScaleAbs(sob))
    assert np.array_equal(pixels.scale_abs(pixels.absdiff(ref, 255 - ref), 3.0),
                          cv2.convertScaleAbs(cv2.absdiff(ref, 255 - ref), alpha=3.0))
    assert np.array_equal(pixels.integral(ref), cv2.integral(ref, sdepth=cv2.CV_64F))


@pytest.mark.parametrize("rgb", FRAMES)
@pytest.mark.parametrize("k", [3, 5, 11])
def test_square_morphology_and_median_match_opencv(rgb: np.ndarray, k: int) -> None:
    gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
    kernel = np.ones((k, k), np.uint8)
    assert np.array_equal(pixels.dilate(gray, k), cv2.dilate(gray, kernel))
    assert np.array_equal(pixels.erode(gray, k), cv2.erode(gray, kernel))
    mask = gray > 128
    assert np.array_equal(pixels.dilate(mask, k), cv2.dilate(mask.astype(np.uint8), kernel).astype(bool))
    assert np.array_equal(pixels.erode(mask, k), cv2.erode(mask.astype(np.uint8), kernel).astype(bool))
    assert np.array_equal(pixels.median(gray, k), cv2.medianBlur(gray, k))


@pytest.mark.parametrize("rgb", FRAMES[:3])
def test_resize_samples_as_opencv(rgb: np.ndarray) -> None:
    gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
    h, w = gray.shape
    for size in ((w // 2, h // 2), (w * 2 // 3, h * 2 // 3), (max(1, w // 7), max(1, h // 5))):
        for img in (gray, rgb):
            ours = pixels.resize(img, size, "area").astype(int)
            assert np.abs(ours - cv2.resize(img, size, interpolation=cv2.INTER_AREA)).max() <= 1, size
    for factor in (2.0, 1.5):
        size = (round(w * factor), round(h * factor))
        ours = pixels.resize(gray, size, "cubic").astype(int)
        assert np.abs(ours - cv2.resize(gray, size, interpolation=cv2.INTER_CUBIC)).max() <= 1
        ours = pixels.resize(gray, size, "linear").astype(int)
        assert np.abs(ours - cv2.resize(gray, size, interpolation=cv2.INTER_LINEAR)).max() <= 1
    floats = gray.astype(np.float32) / 255
    assert np.abs(pixels.resize(floats, (w // 2, h // 2)) - cv2.resize(floats, (w // 2, h // 2),
                                                                      interpolation=cv2.INTER_AREA)).max() < 1e-5


def test_png_round_trips_and_refuses_what_is_not_an_image() -> None:
    rgb = FRAMES[0]
    assert np.array_equal(decode_rgb(encode_png(rgb)), rgb)
    gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
    assert np.array_equal(decode_rgb(encode_png(gray)), np.dstack([gray] * 3))
    ok, theirs = cv2.imencode(".png", cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))
    assert ok and np.array_equal(decode_rgb(theirs.tobytes()), rgb)
    assert np.array_equal(cv2.cvtColor(cv2.imdecode(np.frombuffer(encode_png(rgb), np.uint8), cv2.IMREAD_COLOR),
                                       cv2.COLOR_BGR2RGB), rgb)
    assert decode_rgb(b"") is None and decode_rgb(b"\x89PNG\r\n\x1a\nnot really") is None
    assert decode_rgb(encode_png(rgb)[:200]) is None


def test_fill_from_surroundings_paints_a_caret_away() -> None:
    field = np.full((20, 60, 3), 250, np.uint8)
    field[:, :1] = field[:, -1:] = 120  # the field's border
    caret = np.zeros((20, 60), bool)
    caret[4:16, 30:32] = True
    drawn = field.copy()
    drawn[caret] = 0
    painted = pixels.fill_from_surroundings(drawn, caret)
    assert np.array_equal(painted, field)
    assert np.array_equal(pixels.fill_from_surroundings(drawn, np.zeros_like(caret)), drawn)


def test_opencv_is_optional_and_imported_in_one_place() -> None:
    """The core install carries no OpenCV (issue 25's weight): only imaging/accel.py imports it, guarded, and it is
    the `fast` extra, not a dependency."""
    found = []
    for path in (ROOT / "openadapt_flow").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            found += [f"{path.relative_to(ROOT)}:{node.lineno}" for n in names if n.split(".")[0] == "cv2"]
    assert found == ["openadapt_flow/imaging/accel.py:18"]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not [d for d in project["dependencies"] if d.lower().startswith("opencv")]
    assert [d for d in project["optional-dependencies"]["fast"] if d.startswith("opencv-python-headless")]


@pytest.mark.parametrize("rgb", FRAMES)
def test_the_template_edge_map_is_opencvs(rgb: np.ndarray) -> None:
    gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
    blurred = cv2.GaussianBlur(gray, (3, 3), 0)
    sx, sy = (cv2.convertScaleAbs(cv2.Sobel(blurred, cv2.CV_16S, dx, dy, ksize=3)) for dx, dy in ((1, 0), (0, 1)))
    assert np.array_equal(edge_map(gray), cv2.addWeighted(sx, 0.5, sy, 0.5, 0))


def test_opencv_where_installed_gives_the_numpy_codes_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    """The `fast` extra only speeds up: each function handed to OpenCV answers as imaging's numpy code does."""
    from openadapt_flow.imaging import accel, components, ncc

    assert accel.installed is not None, "the dev extra installs OpenCV: this compares the two engines"
    for module in (pixels, ncc, components):
        monkeypatch.setattr(module, "cv2", accel.installed)
    rgb = FRAMES[0]
    gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
    tpl = gray[40:70, 100:190]
    mask = tpl > 120
    calls = {  # name: (how close, the call); grey and resizing round differently by one level, scores by FFT noise
        "to_gray": (1, lambda: pixels.to_gray(rgb)), "resize": (1, lambda: pixels.resize(gray, (160, 100))),
        "resize rgb": (1, lambda: pixels.resize(rgb, (211, 133))), "cubic": (1, lambda: pixels.scale(gray, 2.0, "cubic")),
        "blur3": (0, lambda: pixels.blur3(gray)), "sobel": (0, lambda: pixels.sobel(gray, 1, 0)),
        "scale_abs": (0, lambda: pixels.scale_abs(pixels.sobel(gray, 0, 1), 0.5)),
        "dilate": (0, lambda: pixels.dilate(gray > 100, 5)), "erode": (0, lambda: pixels.erode(gray, 3)),
        "median": (0, lambda: pixels.median(gray, 11)), "match": (2e-2, lambda: ncc.match_template(gray, tpl)),
        "masked match": (2e-2, lambda: ncc.match_template(gray, tpl, mask=mask)),
        "label": (0, lambda: components.label(gray > 100, 4)),
        "label_stats": (1e-9, lambda: components.label_stats(gray < 60, 8)),
        "differs": (0, lambda: pixels.differs(rgb, FRAMES[0][::-1], 16)),
        "absdiff": (0, lambda: pixels.absdiff(gray, gray[::-1])),
        "flood": (0, lambda: components.flood_box(rgb, (5, 5), 0)),
        "flood, step": (0, lambda: components.flood_box(rgb, (150, 60), 6)),
    }
    fast = {name: call() for name, (_, call) in calls.items()}
    for module in (pixels, ncc, components):
        monkeypatch.setattr(module, "cv2", None)
    for name, (tol, call) in calls.items():
        ours, theirs = call(), fast[name]
        for a, b in zip(ours if isinstance(ours, tuple) else (ours,), theirs if isinstance(theirs, tuple) else (theirs,)):
            a, b = np.asarray(a), np.asarray(b)
            assert a.shape == b.shape, name
            assert np.allclose(a.astype(np.float64), b.astype(np.float64), rtol=0, atol=tol, equal_nan=True), name


@pytest.mark.parametrize("tol", [0, 16, 254])
def test_differs_is_any_channel_over_the_tolerance(tol: int) -> None:
    a, b = FRAMES[2], FRAMES[2].copy()
    b[3:9, 5:40, 1] ^= 0x5A  # one channel changed
    expected = (np.abs(a.astype(int) - b.astype(int)) > tol).any(axis=2)
    assert np.array_equal(pixels.differs(a, b, tol), expected)
    assert np.array_equal(pixels.differs(a[..., 0], b[..., 0], tol), np.abs(a[..., 0].astype(int) - b[..., 0]) > tol)
