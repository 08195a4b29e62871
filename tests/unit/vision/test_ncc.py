"""imaging.ncc (OpenCV's TM_CCOEFF_NORMED) held to the exact float64 score worked out window by window, and to the
rules the template rung relies on: flat templates, flat windows, masks, raster order of the peak."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw

from openadapt_flow.imaging.ncc import best, match_template


def _screen(w: int, h: int, seed: int) -> np.ndarray:
    """A gray UI-like frame: title bar, buttons with unique labels, lines of text, flat background."""
    rng = np.random.default_rng(seed)
    im = Image.new("L", (w, h), 240)
    d = ImageDraw.Draw(im)
    d.rectangle([0, 0, w, 24], fill=60)
    for i in range(max(1, w * h // 25_000)):
        x, y = int(rng.integers(0, max(1, w - 150))), int(rng.integers(30, max(31, h - 40)))
        d.rectangle(
            [x, y, x + int(rng.integers(40, 140)), y + int(rng.integers(15, 35))],
            fill=int(rng.integers(150, 230)),
            outline=int(rng.integers(50, 120)),
        )
        d.text((x + 5, y + 4), f"Btn {seed}-{i}", fill=int(rng.integers(0, 60)))
    for i in range(max(1, w * h // 20_000)):
        at = (int(rng.integers(0, max(1, w - 200))), int(rng.integers(30, max(31, h - 20))))
        d.text(at, f"line {i} of {seed} q{i * 7}", fill=20)
    return np.asarray(im).copy()


def _noise(w: int, h: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (h, w), dtype=np.uint8)


def _truth_at(
    image: np.ndarray, templ: np.ndarray, ys: np.ndarray, xs: np.ndarray, mask: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
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


def _sample(shape: tuple[int, ...], seed: int, k: int = 150) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.integers(0, shape[0], k), rng.integers(0, shape[1], k)


CASES = [  # name, image, (y, x, h, w) of the template crop
    ("frame 1280x800 / 120x30", lambda: _screen(1280, 800, 1), (300, 500, 30, 120)),
    ("search 400x200 / 120x30", lambda: _screen(400, 200, 3), (80, 150, 30, 120)),
    ("near-size 200x100 / 190x90", lambda: _screen(200, 100, 5), (5, 5, 90, 190)),
    ("noise 300x200 / 40x30", lambda: _noise(300, 200, 6), (100, 150, 30, 40)),
    ("noise 120x80 / 3x3", lambda: _noise(120, 80, 7), (40, 50, 3, 3)),
]


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
@pytest.mark.parametrize("name,make,crop", CASES, ids=[c[0] for c in CASES])
def test_scores_are_the_exact_correlation_and_the_crop_is_the_peak(
    name: str, make: object, crop: tuple[int, int, int, int], dtype: type
) -> None:
    image = make().astype(dtype)  # type: ignore[operator]
    y, x, h, w = crop
    templ = image[y : y + h, x : x + w].copy()
    ours = match_template(image, templ)
    assert ours.dtype == np.float32 and ours.shape == (image.shape[0] - h + 1, image.shape[1] - w + 1)
    ys, xs = _sample(ours.shape, 0)
    truth, var = _truth_at(image, templ, ys, xs)
    contrast = var >= 64  # OpenCV works in float32: on near-flat windows its own error reaches ~1e-2
    assert contrast.sum() > 20
    assert np.abs(ours[ys, xs] - truth)[contrast].max() <= 1e-4
    assert best(ours)[1] == (x, y) and best(ours)[0] == pytest.approx(1.0, abs=1e-5)


def test_flat_templates_score_one_and_flat_windows_zero() -> None:
    image = _noise(80, 60, 13)
    image[10:40, 20:60] = 200  # a flat patch: windows inside it are flat
    for flat in (np.full((5, 7), 9, np.uint8), image[0:1, 0:1].copy()):  # 1x1 templates are flat too
        assert np.all(match_template(image, flat) == 1.0)
    scores = match_template(image, image[40:50, 0:12].copy())
    assert np.all(scores[10:31, 20:49] == 0.0) and not np.isnan(scores).any()


def test_masked_scores_count_only_the_masked_pixels_and_flat_ones_are_zero_not_nan() -> None:
    image = _screen(400, 200, seed=21)
    templ = image[80:110, 150:270].copy()
    dist = np.abs(templ.astype(np.float64) - 240) + np.arange(templ.size).reshape(templ.shape) * 1e-6
    mask = (dist >= np.quantile(dist, 0.6)).astype(np.uint8)  # the 40 % of pixels furthest from the background
    assert 0.35 < mask.mean() < 0.45
    scores = match_template(image, templ, mask)
    ys, xs = _sample(scores.shape, 1)
    truth, var = _truth_at(image, templ, ys, xs, mask)
    assert np.abs(scores[ys, xs] - truth)[var >= 16].max() <= 1e-3  # OpenCV's masked path is float32 throughout
    assert best(scores)[1] == (150, 80)
    noise = _noise(70, 50, 31)
    noise[5:30, 5:40] = 120
    small = _noise(12, 8, 32)
    holes = (np.random.default_rng(33).random(small.shape) < 0.4).astype(np.uint8)
    got = match_template(noise, small, holes)
    assert np.isfinite(got).all() and np.all(got[5:23, 5:29] == 0.0)  # flat windows under the mask
    assert np.all(match_template(noise, np.full_like(small, 77), holes) == 0.0)  # a flat template under the mask
    assert np.all(match_template(noise, small, np.zeros_like(holes)) == 0.0)


def test_template_larger_than_the_image_is_refused() -> None:
    image = np.zeros((20, 30), np.uint8)
    for shape in ((21, 10), (10, 31), (25, 35)):
        with pytest.raises(ValueError, match=r"\(20, 30\)"):
            match_template(image, np.zeros(shape, np.uint8))
    with pytest.raises(ValueError):
        match_template(image, np.zeros((3, 3), np.uint8), np.zeros((3, 4), np.uint8))


def test_best_is_the_first_peak_in_raster_order() -> None:
    scores = np.zeros((4, 5), np.float32)
    scores[1, 3] = scores[3, 0] = 0.9
    assert best(scores) == (pytest.approx(0.9), (3, 1))
    assert best(scores[:, 1:]) == (pytest.approx(0.9), (2, 1))  # a view: its own coordinates
