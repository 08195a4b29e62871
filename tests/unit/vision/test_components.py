"""openadapt_flow.imaging.components against OpenCV, the reference it replaces (cv2 stays in the dev extra)."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from PIL import Image, ImageDraw

from openadapt_flow.imaging.components import AREA, HEIGHT, LEFT, TOP, WIDTH, canny, flood_box, label, label_stats

pytestmark = pytest.mark.usefixtures("numpy_imaging")  # our numpy code, held to OpenCV


def _spiral(n: int) -> np.ndarray:
    """A square spiral one pixel wide with one-pixel gaps: one long component that needs many union rounds."""
    m = np.zeros((n, n), bool)
    y, x, dy, dx, lo, hi = 0, 0, 0, 1, 0, n - 1
    while lo <= hi:
        m[lo, lo : hi + 1] = True
        m[lo : hi + 1, hi] = True
        m[hi, lo : hi + 1] = True
        if lo + 2 <= hi:
            m[lo + 2 : hi + 1, lo] = True
            m[lo + 2, lo : lo + 3] = True
        lo, hi = lo + 2, hi - 2
    return m


def _snake(h: int, w: int) -> np.ndarray:
    """Rows joined alternately at the right and left ends: a boustrophedon, again one component."""
    m = np.zeros((h, w), bool)
    m[::2] = True
    m[1::4, -1] = True
    m[3::4, 0] = True
    return m


def _comb(h: int, w: int) -> np.ndarray:
    """Vertical teeth joined only along the bottom row, so the first rows hold many runs of one component."""
    m = np.zeros((h, w), bool)
    m[:, ::2] = True
    m[-1] = True
    return m


def _masks() -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    out: list[np.ndarray] = [
        np.zeros((5, 7), bool),
        np.ones((5, 7), bool),
        np.ones((1, 1), bool),
        np.zeros((1, 1), bool),
        np.ones((1, 9), bool),
        rng.random((1, 40)) < 0.5,
        rng.random((40, 1)) < 0.5,
        (np.indices((9, 12)).sum(0) % 2).astype(bool),  # checkerboard: 8-connectivity joins it all
        _spiral(61),
        _spiral(62),
        _snake(41, 30),
        _comb(30, 41),
        _comb(30, 41)[::-1],
        _spiral(40).T[::-1],
    ]
    for density in (0.05, 0.3, 0.45, 0.55, 0.7, 0.95):
        for shape in ((1, 13), (17, 1), (2, 2), (3, 5), (31, 47), (64, 64), (120, 90)):
            out.append(rng.random(shape) < density)
    out.append(rng.random((300, 400)) < 0.5)
    return out


@pytest.mark.parametrize("connectivity", [4, 8])
def test_label_matches_cv2_label_for_label(connectivity: int) -> None:
    for mask in _masks():
        n_ref, ref = cv2.connectedComponents(mask.astype(np.uint8), connectivity=connectivity)
        n, labels = label(mask, connectivity)
        assert n == n_ref, (mask.shape, connectivity)
        assert labels.dtype == np.int32 and labels.shape == mask.shape
        np.testing.assert_array_equal(labels, ref, err_msg=f"{mask.shape} connectivity {connectivity}")


def test_label_takes_integer_masks_and_8_differs_from_4_on_a_checkerboard() -> None:
    board = np.indices((6, 6)).sum(0) % 2 * 7  # int64, nonzero = set
    assert label(board, 8)[0] == 2
    assert label(board, 4)[0] == 19
    assert label(board.astype(np.uint8), 4)[0] == cv2.connectedComponents(board.astype(np.uint8), connectivity=4)[0]


def test_8_connectivity_numbers_by_2x2_block_as_cv2_does() -> None:
    mask = np.zeros((4, 6), bool)
    mask[0, 3] = mask[1, 0] = True  # pixel raster order would number (0, 3) first
    assert label(mask, 8)[1][1, 0] == 1 == cv2.connectedComponents(mask.astype(np.uint8), connectivity=8)[1][1, 0]
    assert label(mask, 4)[1][0, 3] == 1


@pytest.mark.parametrize("connectivity", [4, 8])
def test_label_stats_match_cv2(connectivity: int) -> None:
    for mask in _masks():
        n_ref, ref, stats_ref, cent_ref = cv2.connectedComponentsWithStats(mask.astype(np.uint8), connectivity=connectivity)
        n, labels, stats, cent = label_stats(mask, connectivity)
        assert n == n_ref
        np.testing.assert_array_equal(labels, ref)
        assert stats.dtype == np.int32 and cent.dtype == np.float64
        np.testing.assert_array_equal(stats, stats_ref, err_msg=f"{mask.shape} connectivity {connectivity}")
        np.testing.assert_allclose(cent, cent_ref, rtol=1e-9, atol=1e-9, equal_nan=True)


def test_stats_row_0_without_background_is_cv2s() -> None:
    _, _, stats, cent = label_stats(np.ones((3, 4), bool))
    ref = cv2.connectedComponentsWithStats(np.ones((3, 4), np.uint8))
    np.testing.assert_array_equal(stats, ref[2])
    assert stats[0].tolist() == [-1, 2**31 - 1, 0, 0, 0]
    assert np.isnan(cent[0]).all() and np.isnan(ref[3][0]).all()
    assert (LEFT, TOP, WIDTH, HEIGHT, AREA) == (
        cv2.CC_STAT_LEFT,
        cv2.CC_STAT_TOP,
        cv2.CC_STAT_WIDTH,
        cv2.CC_STAT_HEIGHT,
        cv2.CC_STAT_AREA,
    )


def _ui_image(seed: int) -> np.ndarray:
    """A rendered UI-like screen: flat background, panels, text, and a gradient button with a darker 1-px border."""
    rng = np.random.default_rng(seed)
    img = Image.new("RGB", (320, 200), (236, 236, 236))
    draw = ImageDraw.Draw(img)
    draw.rectangle((10, 10, 150, 90), fill=(255, 255, 255), outline=(160, 160, 160))
    for i in range(5):
        x, y = int(rng.integers(0, 260)), int(rng.integers(0, 185))
        draw.text((x, y), "Save As... 0123", fill=(int(rng.integers(0, 80)),) * 3)
    draw.line((0, 120, 319, 120), fill=(200, 200, 200))
    arr = np.array(img)
    # the button: rows 140..171, columns 180..279, a vertical gradient 3 levels a row, border 40 darker
    top, bottom, left, right = 140, 171, 180, 279
    shade = (250 - 3 * np.arange(bottom - top + 1)).astype(np.uint8)
    arr[top : bottom + 1, left : right + 1] = shade[:, None, None]
    arr[top, left : right + 1] = arr[bottom, left : right + 1] = 150
    arr[top : bottom + 1, left] = arr[top : bottom + 1, right] = 150
    arr[150:158, 200:240] = 30  # the button's label
    return arr


def _cv2_flood_rect(image: np.ndarray, seed: tuple[int, int], step: int) -> tuple[int, int, int, int]:
    h, w = image.shape[:2]
    mask = np.zeros((h + 2, w + 2), np.uint8)
    flags = 4 | cv2.FLOODFILL_MASK_ONLY | (255 << 8)
    rect = cv2.floodFill(image.copy(), mask, seed, (0, 0, 0), (step,) * 3, (step,) * 3, flags)[3]
    return (int(rect[0]), int(rect[1]), int(rect[2]), int(rect[3]))


@pytest.mark.parametrize("step", [0, 3, 4, 5, 6, 8])
def test_flood_box_matches_cv2_on_ui_images(step: int) -> None:
    rng = np.random.default_rng(step)
    for variant in range(3):
        image = _ui_image(variant)
        seeds = [(2, 2), (200, 145), (181, 141), (230, 165), (50, 50), (180, 150), (205, 153)]
        seeds += [(int(rng.integers(0, 320)), int(rng.integers(0, 200))) for _ in range(15)]
        for seed in seeds:
            assert flood_box(image, seed, step) == _cv2_flood_rect(image, seed, step), (variant, seed, step)
            gray = np.ascontiguousarray(image[:, :, 1])
            assert flood_box(gray, seed, step) == _cv2_flood_rect(gray, seed, step), (variant, seed, step)


def test_flood_box_gradient_button_depends_on_step() -> None:
    image = _ui_image(0)
    assert flood_box(image, (200, 145), 3) == (181, 141, 98, 30)  # the whole face, inside the border
    assert flood_box(image, (200, 145), 2) == (181, 145, 98, 1)  # one row: 3 levels a row is too far
    assert flood_box(image, (2, 2), 0) == _cv2_flood_rect(image, (2, 2), 0)


def test_flood_box_on_random_images_matches_cv2() -> None:
    rng = np.random.default_rng(3)
    for t in range(150):
        h, w = (int(v) for v in rng.integers(1, 40, 2))
        img = rng.integers(0, int(rng.integers(1, 12)), (h, w, 3)).astype(np.uint8)
        if t % 2:
            img = np.cumsum(img, axis=t % 3 % 2).astype(np.uint8)
        step = int(rng.integers(0, 9))
        seed = (int(rng.integers(0, w)), int(rng.integers(0, h)))
        assert flood_box(img, seed, step) == _cv2_flood_rect(img, seed, step), (t, seed, step)


def _within_1px(a: np.ndarray, b: np.ndarray) -> float:
    """Fraction of a's pixels with a pixel of b within 1 px (3x3)."""
    grown = cv2.dilate(b.astype(np.uint8), np.ones((3, 3), np.uint8)) > 0
    return float((a & grown).sum() / max(int(a.sum()), 1))


def _ui_gray(seed: int) -> np.ndarray:
    return cv2.cvtColor(_ui_image(seed), cv2.COLOR_RGB2GRAY)


@pytest.mark.parametrize(("low", "high"), [(50, 150), (20, 60), (10, 30), (100, 200), (30.5, 90.9)])
def test_canny_agrees_with_cv2_on_ui_images(low: float, high: float) -> None:
    for seed in range(3):
        gray = _ui_gray(seed)
        ref = cv2.Canny(gray, low, high) > 0
        ours = canny(gray, low, high)
        assert ours.dtype == bool and ours.shape == gray.shape
        assert ref.sum() > 100
        assert _within_1px(ref, ours) >= 0.9 and _within_1px(ours, ref) >= 0.9
        assert (ours == ref).mean() >= 0.99


def test_canny_on_a_smooth_noisy_image_agrees_with_cv2() -> None:
    rng = np.random.default_rng(0)
    gray = cv2.GaussianBlur(rng.integers(0, 256, (120, 160)).astype(np.uint8), (5, 5), 2)
    ref = cv2.Canny(gray, 10, 30) > 0
    ours = canny(gray, 10, 30)
    assert _within_1px(ref, ours) >= 0.9 and _within_1px(ours, ref) >= 0.9


def test_canny_of_a_flat_image_is_empty() -> None:
    assert not canny(np.full((20, 30), 128, np.uint8), 10, 30).any()


def test_flood_box_grown_window_by_window_is_the_whole_frames() -> None:
    """flood_box fills in a window around the seed and grows it while the area reaches the window's edge: areas
    larger than the first window, reaching it only at one side, or snaking out of it must still give cv2's box."""
    rng = np.random.default_rng(7)
    for _ in range(60):
        w, h = int(rng.integers(200, 700)), int(rng.integers(200, 500))
        im = Image.new("RGB", (w, h), (230, 230, 230))
        d = ImageDraw.Draw(im)
        for _ in range(int(rng.integers(0, 30))):
            x, y = int(rng.integers(0, w)), int(rng.integers(0, h))
            d.rectangle((x, y, x + int(rng.integers(2, 400)), y + int(rng.integers(2, 300))),
                        fill=tuple(rng.integers(200, 240, 3).tolist()), outline=tuple(rng.integers(0, 255, 3).tolist()))
        a = np.asarray(im)
        step = int(rng.choice([0, 3, 20]))
        seed = (int(rng.integers(0, w)), int(rng.integers(0, h)))
        ref = cv2.floodFill(a.copy(), np.zeros((h + 2, w + 2), np.uint8), seed, (0, 0, 0), (step,) * 3, (step,) * 3,
                            4 | cv2.FLOODFILL_MASK_ONLY | (255 << 8))[3]
        assert flood_box(a, seed, step) == tuple(ref), (w, h, seed, step)
