"""A click on the blank part of an editor's page (below the text, to put the caret on the last line), then typing:
the target is cut so it has detail to be found by, the typing appends at the caret, and a page whose text now
reaches the place clicked is not taken for the recorded one."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from PIL import Image, ImageDraw, ImageFont

from openadapt_flow.bundle.models import Target
from openadapt_flow.fixture.gestures import Gesture
from openadapt_flow.fixture.recorder import Batch, Recording
from openadapt_flow.ladder.ladder import Ladder
from openadapt_flow.record.anchor import featureless
from openadapt_flow.record.compile import compile_bundle
from openadapt_flow.vision.ocr import OcrEngine

pytestmark = pytest.mark.timeout(90)
MONO = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"
SANS = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
SCREEN = (1024, 768)
PAGE = (1, 52, 598, 396)  # the page's corners inside the window (x0, y0, x1, y1)
CLICK = (300, 250)  # below the text: the caret goes to the last line
LINE = 18


def editor(lines: list[str], at: tuple[int, int] = (0, 0), dark: bool = False) -> np.ndarray:
    """A text editor's window (menu bar, page) on a black desktop, its text starting at the page's top left."""
    im = Image.new("RGB", SCREEN, (0, 0, 0))
    d = ImageDraw.Draw(im)
    ox, oy = at
    d.rectangle([ox, oy, ox + 599, oy + 399], fill=(246, 245, 244))
    menu = ImageFont.truetype(SANS, 13)
    for x, word in ((8, "File"), (47, "Edit"), (88, "Search"), (148, "View"), (196, "Document")):
        d.text((ox + x, oy + 5), word, font=menu, fill=(40, 40, 40))
    page, ink = ((45, 45, 45), (230, 230, 230)) if dark else ((255, 255, 255), (0, 0, 0))
    x0, y0, x1, y1 = PAGE
    d.rectangle([ox + x0 - 1, oy + y0 - 1, ox + x1 + 1, oy + y1 + 1], outline=(190, 190, 190), fill=page)
    font = ImageFont.truetype(MONO, 14)
    for i, text in enumerate(lines):
        d.text((ox + x0 + 2, oy + y0 + 3 + i * LINE), text, font=font, fill=ink)
    return np.array(im)


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    out = tmp_path_factory.mktemp("blank-click")
    before, after = editor(["Shopping list"]), editor(["Shopping list", "Buy milk"])
    click = [Gesture("press", *CLICK, key="click"), Gesture("click", *CLICK)]
    typed = (
        [Gesture("key", key=c, char=c) for c in "Buy mlik"]
        + [Gesture("key", key="backspace")] * 3
        + [Gesture("key", key=c, char=c) for c in "ilk"]
    )
    path = str(out / "list.txt")
    rec = Recording(
        url="vnc://h:1",
        settle_s=0.3,
        initial=before,
        sor_kind="file",
        batches=[
            Batch(before=before, lead=click, edits=typed, after=after),
            Batch(
                before=after,
                lead=[Gesture("key", key="ctrl+s")],
                after=after,
                writes=[("", {"path": path, "previous": "Shopping list\n", "content": "Shopping list\nBuy milk"})],
            ),
        ],
    )
    bundle = compile_bundle(rec, out / "bundle", "shopping-list", OcrEngine())
    doc = yaml.safe_load((bundle.path / "flow.yaml").read_text())
    step = doc["steps"][0]
    crop = np.array(Image.open(bundle.path / step["target"]["template"]).convert("RGB"))
    return doc, step, crop


def resolve(step: dict, crop: np.ndarray, frame: np.ndarray):
    t = step["target"]
    lad = Ladder({t["template"]: crop}, SCREEN, ocr=OcrEngine())
    return lad.resolve(frame, Target(template=t["template"], region=tuple(t["region"]), point=tuple(t["point"])))


def test_a_click_on_a_blank_page_is_cut_with_the_nearest_detail_inside_the_page(compiled) -> None:
    _, step, crop = compiled
    x, y, w, h = step["target"]["region"]
    assert not featureless(crop, (0, 0, crop.shape[1], crop.shape[0]))  # something to find it by
    assert step["target"]["point"] == [CLICK[0] - x, CLICK[1] - y]  # the click kept where it was
    x0, y0, x1, y1 = PAGE
    assert x0 < x and y0 < y and x + w < x1 and y + h < y1, (
        "the page's border (its look changes with a theme) is left out"
    )
    assert "text" not in step["target"]  # the anchor's words are not the target's label


@pytest.mark.parametrize(
    "drift, at, dark",
    [("as recorded", (0, 0), False), ("window moved", (150, 120), False), ("dark page", (0, 0), True)],
)
def test_the_blank_page_click_is_found_and_lands_where_it_was(
    compiled, drift: str, at: tuple[int, int], dark: bool
) -> None:
    _, step, crop = compiled
    res = resolve(step, crop, editor(["Shopping list"], at, dark))
    assert res.ok and res.point is not None, (drift, res.message)
    assert abs(res.point[0] - (CLICK[0] + at[0])) <= 2 and abs(res.point[1] - (CLICK[1] + at[1])) <= 2, (
        drift,
        res.point,
    )


def test_a_page_whose_text_now_reaches_the_place_clicked_is_not_taken_for_it(compiled) -> None:
    """A click there would put the caret in the middle of the document, not on its last line."""
    _, step, crop = compiled
    full = editor(["Shopping list"] + [f"Item number {i} on a long list of things to get" for i in range(16)])
    res = resolve(step, crop, full)
    assert not res.ok, res.point


def test_typing_at_the_caret_of_a_page_appends_only_what_was_typed(compiled) -> None:
    doc, step, _ = compiled
    assert step["action"] == "type" and step.get("append") is True  # End, Shift+Home would replace the caret's line
    assert doc["params"] == {"text": {"type": "string", "required": True, "example": "Buy milk"}}
    assert step["text"] == "{text}"
    save = doc["steps"][1]
    assert save["effect"]["changes"] == [{"added": ["{text}"]}]  # the line appended, and nothing else


def test_a_line_typed_earlier_on_the_page_is_not_what_a_later_click_is_found_by(tmp_path) -> None:
    """Two lines typed in turn, each after a click below the text: the second click's crop takes in the page's
    own text, not the first typed line (another value there would halt it). A longer value that reaches into the
    crop halts the step (its content no longer matches): safe, not a click elsewhere."""
    ocr = OcrEngine()
    one, two, three = (
        editor(["Shopping list"]),
        editor(["Shopping list", "Buy milk"]),
        editor(["Shopping list", "Buy milk", "Call mom"]),
    )
    click = [Gesture("press", *CLICK, key="click"), Gesture("click", *CLICK)]
    rec = Recording(
        url="vnc://h:1",
        settle_s=0.3,
        initial=one,
        batches=[
            Batch(before=one, lead=click, edits=[Gesture("key", key=c, char=c) for c in "Buy milk"], after=two),
            Batch(before=two, lead=click, edits=[Gesture("key", key=c, char=c) for c in "Call mom"], after=three),
        ],
    )
    bundle = compile_bundle(rec, tmp_path / "b", "two-lines", ocr)
    second = yaml.safe_load((bundle.path / "flow.yaml").read_text())["steps"][1]
    assert second.get("append") is True
    crop = np.array(Image.open(bundle.path / second["target"]["template"]).convert("RGB"))
    assert not featureless(crop, (0, 0, crop.shape[1], crop.shape[0]))
    assert not {"buy", "milk"} & {w.text.lower() for w in ocr.read(crop)}
    res = resolve(second, crop, editor(["Shopping list", "Eggs"]))  # another first line
    assert res.ok and res.point == CLICK, res.message
    assert not resolve(second, crop, editor(["Shopping list", "Bread and butter and jam"])).ok


def test_typing_into_a_single_line_field_still_replaces_its_content(tmp_path) -> None:
    """Only a multi-line text area appends: a field (a line tall) is cleared by End, Shift+Home as before."""

    def form(value: str) -> np.ndarray:
        im = Image.new("RGB", (640, 400), (244, 244, 244))
        d = ImageDraw.Draw(im)
        f = ImageFont.truetype(SANS, 18)
        d.text((40, 60), "Vendor", font=f, fill=(16, 16, 16))
        d.rectangle([140, 52, 440, 88], fill=(255, 255, 255), outline=(112, 112, 112))
        d.text((150, 60), value, font=f, fill=(16, 16, 16))
        return np.array(im)

    click = [Gesture("press", 300, 70, key="click"), Gesture("click", 300, 70)]
    rec = Recording(
        url="vnc://h:1",
        settle_s=0.3,
        initial=form("ACME"),
        batches=[
            Batch(
                before=form("ACME"),
                lead=click,
                edits=[Gesture("key", key=c, char=c) for c in " Ltd"],
                after=form("ACME Ltd"),
            )
        ],
    )
    out = compile_bundle(rec, tmp_path / "b", "vendor", OcrEngine())
    (step,) = out.steps
    assert "append" not in step
    assert [p["example"] for p in out.params.values()] == ["ACME Ltd"]
