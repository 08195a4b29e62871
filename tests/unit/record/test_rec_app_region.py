"""Issue 35, finding 3: a template crop stays inside the app's region of the frame. A recorded input line, grown
until unique, took in the desktop around its window; with the window moved flush against the screen's edge the
template could not fit there. The recorder knows no window bounds: the region is the largest non-desktop rectangle
of the frame (`record.region`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from openadapt_flow.fixture.gestures import Gesture
from openadapt_flow.fixture.recorder import Batch, Recording
from openadapt_flow.record.compile import compile_bundle
from openadapt_flow.record.region import app_region
from openadapt_flow.vision.ocr import OcrEngine
from openadapt_flow.vision.template import contains, find_template

pytestmark = pytest.mark.timeout(120)
DEJAVU = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
DESKTOP = (58, 110, 165)
SIZE = (420, 200)  # the app's window


def screen(at: tuple[int, int] = (150, 100), typed: str = "") -> np.ndarray:
    """A scratch-pad window on a plain desktop: a title bar and two identical input lines, `typed` in the lower."""
    im = Image.new("RGB", (800, 600), DESKTOP)
    d = ImageDraw.Draw(im)
    (x, y), (w, h) = at, SIZE
    f = ImageFont.truetype(DEJAVU, 14)
    d.rectangle([x, y, x + w - 1, y + h - 1], fill=(236, 236, 236), outline=(90, 90, 90))
    d.rectangle([x, y, x + w - 1, y + 22], fill=(64, 64, 64))
    d.text((x + 8, y + 4), "Scratch pad", font=f, fill=(255, 255, 255))
    for fy in (y + 40, y + h - 34):
        d.rectangle([x + 3, fy, x + w - 4, fy + 26], fill=(255, 255, 255), outline=(120, 120, 120))
    if typed:
        d.text((x + 10, y + h - 29), typed, font=f, fill=(20, 20, 20))
    return np.array(im)


def test_the_app_region_is_the_window_on_a_plain_desktop_else_the_whole_frame() -> None:
    assert app_region(screen(), (300, 280)) == (150, 100, *SIZE)
    assert app_region(screen(), (20, 20)) == (0, 0, 800, 600)  # a click on the desktop: nothing to keep it to
    full = np.full((300, 400, 3), 236, np.uint8)  # an app filling the screen, its background at most edges ...
    full[:20] = 60  # ... a title bar
    full[100:200, 50:300] = 120  # a group box's border on the app's own background
    full[102:198, 52:298] = 236
    full[140:160, 80:200] = 255  # a field in it
    assert app_region(full, (100, 150)) == (0, 0, 400, 300)
    wallpaper = np.random.default_rng(7).integers(0, 256, (300, 400, 3), dtype=np.uint8)
    assert app_region(wallpaper, (100, 150)) == (0, 0, 400, 300)  # no one desktop colour: nothing to leave out


def test_no_template_crop_reaches_outside_the_window_and_it_fits_once_the_window_is_moved_to_the_edge(
    tmp_path: Path,
) -> None:
    f0, f1 = screen(), screen(typed="hello world")
    y = 100 + SIZE[1] - 21
    click = [Gesture("press", 300, y, key="click"), Gesture("click", 300, y)]
    rec = Recording(
        url="vnc://h:1",
        settle_s=0.3,
        initial=f0,
        batches=[Batch(before=f0, lead=click, edits=[Gesture("key", key=c, char=c) for c in "hello world"], after=f1)],
    )
    out = compile_bundle(rec, tmp_path / "b", "pad", OcrEngine())
    window = (150, 100, *SIZE)
    regions = [tuple(s["target"]["region"]) for s in out.steps if "target" in s]
    regions += [tuple(f["region"]) for s in out.steps for f in s.get("expect", []) if "template_present" in f]
    assert regions
    for r in regions:
        assert contains(window, r), f"crop {r} reaches outside the app's window {window}"
    target = out.steps[0]["target"]
    template = np.asarray(Image.open(tmp_path / "b" / target["template"]).convert("RGB"))
    moved = screen(at=(800 - SIZE[0], 600 - SIZE[1]))  # flush against the screen's bottom-right corner
    found = find_template(moved, template)
    dx, dy = 800 - SIZE[0] - 150, 600 - SIZE[1] - 100
    want = (target["region"][0] + dx, target["region"][1] + dy)
    assert found.best is not None and found.score >= 0.85 and found.best.box[:2] == want, found
