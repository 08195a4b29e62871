"""Template matching on generated images with known answers."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from openadapt_flow.vision.template import (
    FrameFeatures,
    TemplateImage,
    clip_box,
    detail_score,
    edge_map,
    find_template,
    pad_box,
)

pytestmark = pytest.mark.timeout(60)


def scene(size: tuple[int, int] = (640, 480), seed: int = 1) -> np.ndarray:
    """Light background with random text-like clutter."""
    rng = np.random.default_rng(seed)
    img = np.full((size[1], size[0], 3), 235, np.uint8)
    for i in range(40):
        x, y = int(rng.integers(0, size[0] - 60)), int(rng.integers(15, size[1]))
        cv2.putText(img, f"w{i}x", (x, y), cv2.FONT_HERSHEY_SIMPLEX, 0.45, (40, 40, 40), 1, cv2.LINE_AA)
    return img


def widget(label: str, fill: tuple[int, int, int] = (50, 110, 190)) -> np.ndarray:
    w = np.full((40, 110, 3), 235, np.uint8)
    cv2.rectangle(w, (4, 4), (105, 35), fill, -1)
    cv2.putText(w, label, (16, 27), cv2.FONT_HERSHEY_SIMPLEX, 0.6, (255, 255, 255), 1, cv2.LINE_AA)
    return w


def place(img: np.ndarray, patch: np.ndarray, x: int, y: int) -> np.ndarray:
    out = img.copy()
    out[y : y + patch.shape[0], x : x + patch.shape[1]] = patch
    return out


def test_finds_the_template_and_reports_a_lower_runner_up() -> None:
    t = widget("Save")
    img = place(place(scene(), t, 300, 200), widget("Quit"), 100, 400)
    r = find_template(img, t)
    assert r.best is not None and r.best.box == (300, 200, 110, 40)
    assert r.best.score > 0.99 and r.best.detail is not None and r.best.detail > 0.95
    assert r.runner_up is not None and r.runner_up.score < r.best.score
    assert not r.best.overlaps(r.runner_up)


def test_two_copies_give_equal_best_and_runner_up() -> None:
    t = widget("Save")
    img = place(place(scene(), t, 300, 200), t, 100, 400)
    r = find_template(img, t)
    assert r.best is not None and r.runner_up is not None
    assert {r.best.box[:2], r.runner_up.box[:2]} == {(300, 200), (100, 400)}
    assert r.runner_up.score == pytest.approx(r.best.score, abs=1e-3)
    assert r.plausible(r.runner_up)


def test_search_box_limits_the_search() -> None:
    t = widget("Save")
    img = place(place(scene(), t, 300, 200), t, 100, 400)
    r = find_template(img, t, box=(250, 150, 250, 150))
    assert r.best is not None and r.best.box[:2] == (300, 200)
    assert r.runner_up is None or r.runner_up.score < 0.9
    assert r.search == (250, 150, 250, 150)


@pytest.mark.parametrize("box", [(300, 200, 50, 20), (-500, -500, 100, 100), (700, 500, 10, 10)])
def test_window_smaller_than_the_template_or_off_frame_gives_nothing(box: tuple[int, int, int, int]) -> None:
    r = find_template(scene(), widget("Save"), box=box)
    assert r.best is None and r.runner_up is None and r.score == 0.0


def test_template_at_the_image_edges() -> None:
    t = widget("Save")
    img = place(scene(), t, 640 - 110, 480 - 40)
    r = find_template(img, t, box=(500, 400, 200, 200))  # box sticks out of the image
    assert r.best is not None and r.best.box == (530, 440, 110, 40)
    assert r.search == (500, 400, 140, 80)


def test_template_bigger_than_the_image() -> None:
    r = find_template(scene((100, 30)), widget("Save"))
    assert r.best is None


def test_flat_template_is_not_matched() -> None:
    flat = np.full((30, 60, 3), 235, np.uint8)
    r = find_template(scene(), flat)
    assert r.best is None


@pytest.mark.parametrize("scale", [0.8, 0.9, 1.1, 1.25])
def test_scale_set_recovers_a_resized_target(scale: float) -> None:
    t = widget("Save")
    img = place(scene(), t, 300, 200)
    resized = cv2.resize(img, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR)
    r = find_template(resized, t)
    assert r.best is not None and r.best.scale == pytest.approx(scale)
    assert r.best.score > 0.9
    assert abs(r.best.box[0] - 300 * scale) <= 2 and abs(r.best.box[1] - 200 * scale) <= 2


def test_other_scales_are_skipped_when_the_first_is_confident() -> None:
    t = TemplateImage(widget("Save"))
    img = place(scene(), t.rgb, 300, 200)
    find_template(img, t)
    assert t.variant("gray", 1.0) is not None
    assert ("gray", 0.8) not in t._cache  # never built: no work spent on other scales


def test_edges_survive_inverted_luminance_where_gray_fails() -> None:
    t = widget("Save")
    img = 255 - place(scene(), t, 300, 200)
    gray = find_template(img, t)
    edges = find_template(img, t, mode="edges")
    assert gray.score < 0.7
    assert edges.best is not None and edges.best.box[:2] == (300, 200) and edges.score > 0.95
    assert edges.best.detail is not None and edges.best.detail > 0.9  # content checked polarity-free


def test_edge_map_is_the_same_for_an_image_and_its_negative() -> None:
    g = cv2.cvtColor(scene(), cv2.COLOR_RGB2GRAY)
    diff = cv2.absdiff(edge_map(g), edge_map(255 - g))
    assert int(diff.max()) <= 2  # equal up to the blur's rounding (±1 per Sobel tap sum)
    assert int(edge_map(g).max()) > 100


def test_edges_of_a_crop_equal_the_crop_of_the_edges() -> None:
    f = FrameFeatures(scene())
    local = f.feature("edges", (100, 100, 80, 60)).copy()
    whole = FrameFeatures(scene()).feature("edges")[100:160, 100:180]
    assert np.array_equal(local, whole)


def test_detail_tells_a_different_label_on_the_same_shape() -> None:
    save = widget("Save")
    img = place(scene(), widget("Send"), 300, 200)  # same size and colour
    r = find_template(img, save)
    assert r.best is not None and r.best.score > 0.85  # shape alone would pass
    assert not r.plausible(r.best)
    f, t = FrameFeatures(place(scene(), save, 300, 200)), TemplateImage(save)
    assert detail_score(f, t, (300, 200, 110, 40), 1.0) > 0.99


def test_plausible_candidate_beats_a_higher_scoring_impostor() -> None:
    save = widget("Save")
    dimmed = widget("Save", fill=(60, 120, 175))  # the real one, slightly restyled
    img = place(place(scene(), widget("Send"), 100, 100), dimmed, 400, 300)
    r = find_template(img, save)
    assert r.best is not None and r.best.box[:2] == (400, 300)


def test_full_hd_search_goes_coarse_to_fine_with_exact_boxes() -> None:
    t = widget("Save")
    big = place(place(scene((1920, 1080), seed=3), t, 1234, 777), t, 90, 60)
    r = find_template(big, t)
    assert r.best is not None and r.runner_up is not None
    assert {r.best.box[:2], r.runner_up.box[:2]} == {(1234, 777), (90, 60)}
    assert r.best.score > 0.99 and r.runner_up.score > 0.99


def test_box_helpers() -> None:
    assert clip_box((-10, -10, 30, 30), 100, 100) == (0, 0, 20, 20)
    assert clip_box((200, 0, 5, 5), 100, 100) is None
    assert pad_box((10, 10, 10, 10), 5, 100, 100) == (5, 5, 20, 20)
    assert pad_box((0, 0, 10, 10), 80, 50, 50) == (0, 0, 50, 50)


def test_rejects_non_uint8_templates() -> None:
    with pytest.raises(ValueError):
        TemplateImage(np.zeros((10, 10, 3), np.float32))


@pytest.mark.parametrize(
    "label,at,box",
    [
        ("Save", (300, 200), (300, 200, 110, 40)),  # in place
        ("Save", (301, 199), (300, 200, 110, 40)),  # one pixel off: only the shifted search sees it whole
        ("Send", (300, 200), (300, 200, 110, 40)),  # same shape, other content
        ("Sav", (300, 200), (300, 200, 110, 40)),
    ],
)
def test_detail_with_a_need_decides_exactly_as_the_full_score(label: str, at: tuple[int, int], box) -> None:
    save = widget("Save")
    f, t = FrameFeatures(place(scene(seed=3), widget(label), *at)), TemplateImage(save)
    full = detail_score(f, t, box, 1.0)
    for need in (0.4, 0.6, 0.8, 0.95):
        quick = detail_score(f, t, box, 1.0, need=need)
        assert (quick >= need) == (full >= need)
        assert (
            quick <= full + 1e-6 if quick >= need else quick >= full - 1e-6
        )  # a lower bound when it passes, else an upper one


def test_in_place_block_correlation_equals_opencv() -> None:
    save = widget("Save")
    img = place(scene(seed=5), widget("Send"), 300, 200)
    t = TemplateImage(save)
    window = cv2.cvtColor(img, cv2.COLOR_RGB2GRAY)[200:240, 300:410]
    tgray = cv2.cvtColor(save, cv2.COLOR_RGB2GRAY)
    want = min(
        abs(
            float(
                cv2.matchTemplate(window[y : y + h, x : x + w], tgray[y : y + h, x : x + w], cv2.TM_CCOEFF_NORMED)[0, 0]
            )
        )
        for x, y, w, h in t.blocks(1.0)
    )
    assert t.block_sums(1.0).correlation(window) == pytest.approx(want, abs=1e-4)


@pytest.mark.parametrize(
    "text, w, h, px, dx, dy",
    [("Save", 40, 22, 11, -33, 25), ("Edit", 36, 20, 10, 41, -27), ("Edit", 36, 20, 10, -45, 33)],
)
def test_near_first_sees_a_twin_off_the_half_resolution_grid(
    text: str, w: int, h: int, px: int, dx: int, dy: int
) -> None:
    # Small text loses much of its match at half resolution when the twin sits an odd number of pixels off the
    # 2x grid; the near-first search must still re-score it at full resolution, as the plain search sees it.
    from PIL import Image, ImageDraw, ImageFont

    im = Image.new("RGB", (640, 400), (240, 240, 240))
    d = ImageDraw.Draw(im)
    for x, y in [(300, 200), (300 + dx, 200 + dy)]:
        d.rectangle([x, y, x + w - 1, y + h - 1], outline=(150, 150, 150), fill=(255, 255, 255))
        d.text(
            (x + 4, y + (h - px) // 2 - 1),
            text,
            font=ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", px),
            fill=(20, 20, 20),
        )
    frame = np.array(im)
    region = (297, 197, w + 6, h + 6)
    tmpl = TemplateImage(np.ascontiguousarray(frame[197 : 197 + h + 6, 297 : 297 + w + 6]))
    window = pad_box(region, 80, 640, 400)
    quick, full = find_template(frame, tmpl, box=window, near=region), find_template(frame, tmpl, box=window)
    assert full.runner_up is not None and full.plausible(full.runner_up) and full.runner_up.score > 0.99  # a real twin
    assert quick.runner_up is not None and quick.plausible(quick.runner_up) and quick.runner_up.score > 0.99
