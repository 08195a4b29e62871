"""imaging.components (OpenCV's labels, stats, flood fill and Canny) held to answers worked out by hand: what the
recorder and the fixture's widget finder rely on — component counts, label order, stats, a flood's box."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw

from openadapt_flow.imaging.components import AREA, HEIGHT, LEFT, TOP, WIDTH, canny, flood_box, label, label_stats


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


def test_long_shapes_are_one_component() -> None:
    for mask in (_spiral(61), _spiral(62), _snake(41, 30), _comb(30, 41), _comb(30, 41)[::-1], _spiral(40).T[::-1]):
        for connectivity in (4, 8):
            n, labels = label(mask, connectivity)
            assert n == 2 and labels.dtype == np.int32 and np.array_equal(labels > 0, mask)


def test_a_checkerboard_is_one_component_at_8_and_many_at_4() -> None:
    board = np.indices((6, 6)).sum(0) % 2 * 7  # int64, nonzero = set
    assert label(board, 8)[0] == 2
    assert label(board, 4)[0] == 19
    with pytest.raises(ValueError, match="2-D"):
        label(np.zeros((2, 2, 3), bool))


def test_8_connectivity_numbers_by_2x2_block() -> None:
    mask = np.zeros((4, 6), bool)
    mask[0, 3] = mask[1, 0] = True  # pixel raster order would number (0, 3) first
    assert label(mask, 8)[1][1, 0] == 1
    assert label(mask, 4)[1][0, 3] == 1


def test_stats_and_centroids_of_two_boxes() -> None:
    mask = np.zeros((10, 12), bool)
    mask[1:3, 2:6] = True  # 4 x 2 at (2, 1)
    mask[5:10, 9:12] = True  # 3 x 5 at (9, 5)
    n, labels, stats, cent = label_stats(mask)
    assert n == 3 and labels[1, 2] == 1 and labels[9, 11] == 2
    assert stats[1].tolist() == [2, 1, 4, 2, 8] and stats[2].tolist() == [9, 5, 3, 5, 15]
    assert stats[0, AREA] == 120 - 23 and (stats[0, LEFT], stats[0, TOP], stats[0, WIDTH], stats[0, HEIGHT]) == (
        0,
        0,
        12,
        10,
    )
    assert cent[1].tolist() == [3.5, 1.5] and cent[2].tolist() == [10.0, 7.0]


def test_stats_row_0_without_background() -> None:
    _, _, stats, cent = label_stats(np.ones((3, 4), bool))
    assert stats[0].tolist() == [-1, 2**31 - 1, 0, 0, 0]
    assert np.isnan(cent[0]).all() and stats[1].tolist() == [0, 0, 4, 3, 12]


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


def test_flood_box_gradient_button_depends_on_step() -> None:
    image = _ui_image(0)
    assert flood_box(image, (200, 145), 3) == (181, 141, 98, 30)  # the whole face, inside the border
    assert flood_box(image, (200, 145), 2) == (181, 145, 98, 1)  # one row: 3 levels a row is too far
    assert flood_box(image, (181, 141), 0) == (181, 141, 98, 1)  # step 0: one flat row of the gradient
    assert flood_box(image, (200, 150), 3) == (200, 150, 40, 8)  # the label, apart from the face
    gray = np.ascontiguousarray(image[:, :, 1])
    assert flood_box(gray, (200, 145), 3) == (181, 141, 98, 30)
    frozen = image.copy()
    frozen.flags.writeable = False
    assert flood_box(frozen, (200, 145), 3) == (181, 141, 98, 30)
    assert np.array_equal(frozen, image)  # never written


def test_canny_outlines_a_box_and_finds_nothing_on_a_flat_image() -> None:
    assert not canny(np.full((20, 30), 128, np.uint8), 10, 30).any()
    box = np.zeros((40, 50), np.uint8)
    box[10:30, 15:35] = 200
    edges = canny(box, 50, 150)
    assert edges.dtype == bool and edges.any()
    ys, xs = np.nonzero(edges)
    assert ys.min() >= 9 and ys.max() <= 30 and xs.min() >= 14 and xs.max() <= 35  # on the outline, within 1 px
    assert not edges[13:27, 18:32].any()  # nothing inside
