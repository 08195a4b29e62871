"""vision/ncc against OpenCV (the reference it replaces) and against a float64 brute-force correlation.

OpenCV works in float32 (its DFT numerator, its whole masked path), so on low-contrast windows it is itself
off the exact score by up to ~1e-2; there ncc is held to the float64 truth instead, and to OpenCV where a
window has some contrast (variance >= 64, a grey-level spread of 8).
"""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view
from PIL import Image, ImageDraw

from openadapt_flow.imaging.ncc import best, match_template, min_max_loc

pytestmark = pytest.mark.usefixtures("numpy_imaging")  # our numpy code, held to OpenCV


def _screen(w: int, h: int, seed: int) -> np.ndarray:
    """A gray UI-like frame: title bar, buttons with unique labels, lines of text, flat background."""
    rng = np.random.default_rng(seed)
    im = Image.new("L", (w, h), 240)
    d = ImageDraw.Draw(im)
    d.rectangle([0, 0, w, 24], fill=60)
    for i in range(max(1, w * h // 25_000)):
        x, y = int(rng.integers(0, max(1, w - 150))), int(rng.integers(30, max(31, h - 40)))
        d.rectangle([x, y, x + int(rng.integers(40, 140)), y + int(rng.integers(15, 35))],
                    fill=int(rng.integers(150, 230)), outline=int(rng.integers(50, 120)))
        d.text((x + 5, y + 4), f"Btn {seed}-{i}", fill=int(rng.integers(0, 60)))
    for i in range(max(1, w * h // 20_000)):
        at = (int(rng.integers(0, max(1, w - 200))), int(rng.integers(30, max(31, h - 20))))
        d.text(at, f"line {i} of {seed} q{i * 7}", fill=20)
    return np.asarray(im).copy()


def _noise(w: int, h: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (h, w), dtype=np.uint8)


def _cv(image: np.ndarray, templ: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    if mask is None:
        res = cv2.matchTemplate(image, templ, cv2.TM_CCOEFF_NORMED)
    else:
        res = cv2.matchTemplate(image, templ, cv2.TM_CCOEFF_NORMED, mask=mask)
    return np.nan_to_num(res, nan=0, posinf=0, neginf=0)


def _truth_at(image: np.ndarray, templ: np.ndarray, ys: np.ndarray, xs: np.ndarray,
              mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Exact float64 scores (and window variances under the mask) at the given positions."""
    h, w = templ.shape
    m = np.ones((h, w)) if mask is None else (mask != 0).astype(np.float64)
    t = templ.astype(np.float64)
    tc = m * (t - (m * t).sum() / m.sum())
    scores, variances = [], []
    for y, x in zip(ys, xs):
        win = image[y : y + h, x : x + w].astype(np.float64)
        wc = m * (win - (m * win).sum() / m.sum())
        den = np.sqrt((wc * wc).sum() * (tc * tc).sum())
        scores.append((wc * tc).sum() / den if den > 1e-9 else 0.0)
        variances.append((wc * wc).sum() / m.sum())
    return np.array(scores), np.array(variances)


def _window_variance(image: np.ndarray, h: int, w: int) -> np.ndarray:
    i = image.astype(np.float64)
    s = np.pad(i.cumsum(0).cumsum(1), ((1, 0), (1, 0)))
    q = np.pad((i * i).cumsum(0).cumsum(1), ((1, 0), (1, 0)))

    def box(c: np.ndarray) -> np.ndarray:
        return c[h:, w:] - c[:-h, w:] - c[h:, :-w] + c[:-h, :-w]

    return box(q) / (h * w) - (box(s) / (h * w)) ** 2


def _sample(shape: tuple[int, ...], seed: int, k: int = 150) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.integers(0, shape[0], k), rng.integers(0, shape[1], k)


CASES = [  # name, image, (y, x, h, w) of the template crop
    ("frame 1280x800 / 120x30", lambda: _screen(1280, 800, 1), (300, 500, 30, 120)),
    ("frame 1280x800 / 300x200", lambda: _screen(1280, 800, 2), (200, 300, 200, 300)),
    ("search 400x200 / 120x30", lambda: _screen(400, 200, 3), (80, 150, 30, 120)),
    ("half 640x400 / 60x15", lambda: _screen(640, 400, 4), (150, 250, 15, 60)),
    ("near-size 200x100 / 190x90", lambda: _screen(200, 100, 5), (5, 5, 90, 190)),
    ("noise 300x200 / 40x30", lambda: _noise(300, 200, 6), (100, 150, 30, 40)),
    ("noise 120x80 / 3x3", lambda: _noise(120, 80, 7), (40, 50, 3, 3)),
    ("noise 60x40 / 2x1", lambda: _noise(60, 40, 8), (10, 20, 1, 2)),
    ("noise 50x40 / 7x9", lambda: _noise(50, 40, 9), (11, 13, 9, 7)),
]


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
@pytest.mark.parametrize("name,make,crop", CASES, ids=[c[0] for c in CASES])
def test_matches_opencv_and_the_exact_score(
    name: str, make: object, crop: tuple[int, int, int, int], dtype: type
) -> None:
    image = make().astype(dtype)  # type: ignore[operator]
    y, x, h, w = crop
    templ = image[y : y + h, x : x + w].copy()
    ours, ref = match_template(image, templ), _cv(image, templ)
    assert ours.dtype == np.float32 and ours.shape == ref.shape == (image.shape[0] - h + 1, image.shape[1] - w + 1)
    contrast = _window_variance(image, h, w) >= 64
    assert np.abs(ours - ref)[contrast].max() <= 1e-4
    assert np.abs(ours - ref).max() <= 2e-2  # low-contrast windows: OpenCV's own float32 error
    ys, xs = _sample(ours.shape, 0)
    truth, _ = _truth_at(image, templ, ys, xs)
    assert np.abs(ours[ys, xs] - truth).max() <= 1e-6
    assert best(ours)[1] == cv2.minMaxLoc(ref)[3]
    if h * w > 2:  # two pixels correlate +-1 with any two unequal ones: ties everywhere, OpenCV's first wins
        assert best(ours)[1] == (x, y)
    assert best(ours)[0] == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_template_the_size_of_the_image(dtype: type) -> None:
    image = _screen(90, 60, 11).astype(dtype)
    ours, ref = match_template(image, image.copy()), _cv(image, image.copy())
    assert ours.shape == (1, 1) and abs(float(ours[0, 0]) - float(ref[0, 0])) <= 1e-5
    other = _noise(90, 60, 12).astype(dtype)
    assert abs(float(match_template(image, other)[0, 0]) - float(_cv(image, other)[0, 0])) <= 1e-4


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_flat_templates_score_one_and_flat_windows_zero_as_opencv(dtype: type) -> None:
    image = _noise(80, 60, 13)
    image[10:40, 20:60] = 200  # a flat patch: windows inside it are flat
    image = image.astype(dtype)
    for flat in (np.full((5, 7), 9, dtype), image[0:1, 0:1].copy()):  # 1x1 templates are flat too
        ours, ref = match_template(image, flat), _cv(image, flat)
        assert np.array_equal(ours, ref) and np.all(ours == 1.0)
    templ = image[40:50, 0:12].copy()
    ours, ref = match_template(image, templ), _cv(image, templ)
    assert np.all(ours[10:31, 20:49] == 0.0) and np.all(ref[10:31, 20:49] == 0.0)
    assert not np.isnan(ours).any() and np.abs(ours - ref).max() <= 1e-4


def test_nearly_flat_float_windows_score_zero_as_opencv() -> None:
    """OpenCV zeroes a window whose summed squared deviation is <= 0.5, however well it correlates."""
    image = np.full((30, 40), 100.0, np.float32)
    image[5:15, 5:15] += np.random.default_rng(14).random((10, 10)).astype(np.float32) * 0.05
    templ = image[5:10, 5:10].copy() * 20
    ours, ref = match_template(image, templ), _cv(image, templ)
    assert ref[5, 5] == 0.0 and ours[5, 5] == 0.0
    assert np.abs(ours - ref).max() <= 1e-4


def _foreground(templ: np.ndarray, frac: float = 0.4) -> np.ndarray:
    """Mask of the ~frac of template pixels furthest from the background grey."""
    dist = np.abs(templ.astype(np.float64) - 240) + np.arange(templ.size).reshape(templ.shape) * 1e-6
    return (dist >= np.quantile(dist, 1 - frac)).astype(np.uint8)


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
@pytest.mark.parametrize("size,crop", [((400, 200), (80, 150, 30, 120)), ((1280, 800), (300, 500, 30, 120)),
                                       ((160, 90), (20, 30, 40, 50))])
def test_masked_matches_opencv(size: tuple[int, int], crop: tuple[int, int, int, int], dtype: type) -> None:
    image = _screen(*size, seed=21).astype(dtype)
    y, x, h, w = crop
    templ = image[y : y + h, x : x + w].copy()
    mask = _foreground(templ)
    assert 0.35 < mask.mean() < 0.45
    ours, ref = match_template(image, templ, mask), _cv(image, templ, mask)
    assert ours.dtype == np.float32 and ours.shape == ref.shape and np.isfinite(ours).all()
    ys, xs = _sample(ours.shape, 1)
    truth, var = _truth_at(image, templ, ys, xs, mask)
    assert np.abs(ours[ys, xs] - truth).max() <= 1e-6
    contrast = var >= 16
    assert np.abs(ours[ys, xs] - ref[ys, xs])[contrast].max() <= 1e-3  # OpenCV's masked path is float32 throughout
    assert best(ours)[1] == cv2.minMaxLoc(ref)[3] == (x, y)


def test_masked_flat_windows_and_templates_score_zero_where_opencv_gives_nan() -> None:
    image = _noise(70, 50, 31)
    image[5:30, 5:40] = 120
    templ = _noise(12, 8, 32)
    mask = (np.random.default_rng(33).random(templ.shape) < 0.4).astype(np.uint8)
    raw = cv2.matchTemplate(image, templ, cv2.TM_CCOEFF_NORMED, mask=mask)
    ours = match_template(image, templ, mask)
    assert not np.isfinite(raw[5:23, 5:29]).any() and np.all(ours[5:23, 5:29] == 0.0)
    assert np.abs(ours - _cv(image, templ, mask)).max() <= 1e-3
    flat = np.full_like(templ, 77)
    assert not np.isfinite(cv2.matchTemplate(image, flat, cv2.TM_CCOEFF_NORMED, mask=mask)).any()
    assert np.all(match_template(image, flat, mask) == 0.0)
    assert np.all(match_template(image, templ, np.zeros_like(mask)) == 0.0)


def test_template_larger_than_the_image_is_refused() -> None:
    image = np.zeros((20, 30), np.uint8)
    for shape in ((21, 10), (10, 31), (25, 35)):
        with pytest.raises(ValueError, match=r"\(20, 30\)"):
            match_template(image, np.zeros(shape, np.uint8))
    with pytest.raises(ValueError):
        match_template(image, np.zeros((3, 3), np.uint8), np.zeros((3, 4), np.uint8))


def test_min_max_loc_mirrors_opencv_first_in_raster_order() -> None:
    scores = np.zeros((4, 5), np.float32)
    scores[1, 3] = scores[3, 0] = 0.9
    scores[0, 4] = scores[2, 1] = -0.5
    assert min_max_loc(scores) == cv2.minMaxLoc(scores) == (-0.5, pytest.approx(0.9), (4, 0), (3, 1))
    assert best(scores) == (pytest.approx(0.9), (3, 1))
    noise = np.random.default_rng(41).random((37, 53)).astype(np.float32)
    assert min_max_loc(noise) == cv2.minMaxLoc(noise)
    assert best(noise) == (cv2.minMaxLoc(noise)[1], cv2.minMaxLoc(noise)[3])
