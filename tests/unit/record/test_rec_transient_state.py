"""Issue 23 finding 1: a transient look (a focus ring and a caret) cut into a template must never decide whether the
target is found. A GTK-like form recorded with its window focused: the first field shows its ring and caret when the
person clicks it; the replay's window has no focus (moved away from the pointer, no window manager), so no field
shows either. The template is compiled at rest (the pixels another recorded screen showed otherwise are painted
out), and its uniqueness judged on that look, so the Patient field is found by the template rung alone, in place and
moved, and told from the Clinic field that looks the same at rest."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml
from PIL import Image, ImageDraw, ImageFont

from openadapt_flow.bundle.loader import load_bundle
from openadapt_flow.bundle.models import Target
from openadapt_flow.fixture.gestures import Gesture
from openadapt_flow.fixture.recorder import Batch, Recording
from openadapt_flow.ladder.ladder import Ladder
from openadapt_flow.record.compile import compile_bundle
from openadapt_flow.vision.ocr import OcrEngine

pytestmark = pytest.mark.timeout(120)
DEJAVU = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
SCREEN = (800, 600)
FIELDS = {"patient": (110, 40, 180, 30), "clinic": (110, 84, 180, 30)}  # in the window
RING, BORDER, CARET = (53, 132, 228), (190, 190, 190), (30, 30, 30)


def form(
    focus: str | None, values: dict[str, str] | None = None, at: tuple[int, int] = (0, 0), shown: bool = True
) -> np.ndarray:
    """The screen: a dialog at `at` (Patient, Clinic, OK), the `focus` field with its 2 px ring and a caret after
    its text, the others with a 1 px grey border; `shown=False`: the dialog closed."""
    im = Image.new("RGB", SCREEN, (90, 110, 130))
    if shown:
        d = ImageDraw.Draw(im)
        f = ImageFont.truetype(DEJAVU, 13)
        ox, oy = at
        d.rectangle([ox, oy, ox + 310, oy + 170], fill=(246, 245, 244))
        for label, name in (("Patient", "patient"), ("Clinic", "clinic")):
            x, y, w, h = FIELDS[name]
            d.text((ox + 16, oy + y + 8), label, font=f, fill=(46, 52, 54))
            ring = name == focus
            d.rectangle(
                [ox + x, oy + y, ox + x + w, oy + y + h],
                fill=(255, 255, 255),
                outline=RING if ring else BORDER,
                width=2 if ring else 1,
            )
            text = (values or {}).get(name, "")
            d.text((ox + x + 8, oy + y + 8), text, font=f, fill=(46, 52, 54))
            if ring:
                cx = ox + x + 8 + (round(d.textlength(text, font=f)) + 1 if text else 0)
                d.line([cx, oy + y + 7, cx, oy + y + h - 7], fill=CARET, width=1)
        d.rectangle([ox + 220, oy + 130, ox + 290, oy + 158], fill=(232, 232, 231), outline=BORDER)
        d.text((ox + 246, oy + 137), "OK", font=f, fill=(46, 52, 54))
    return np.array(im)


def keys(text: str) -> list[Gesture]:
    return [Gesture("key", key=c, char=c) for c in text]


def click(x: int, y: int) -> list[Gesture]:
    return [Gesture("press", x, y, key="click"), Gesture("click", x, y)]


def recording() -> Recording:
    """Recorded with the pointer in the window: the Patient field has the focus from the start."""
    f0 = form("patient")
    f1 = form("patient", {"patient": "Maria Lopez"})
    f2 = form("clinic", {"patient": "Maria Lopez", "clinic": "Harbor"})
    return Recording(
        url="vnc://h:1",
        settle_s=0.3,
        initial=f0,
        batches=[
            Batch(before=f0, lead=click(200, 55), edits=keys("Maria Lopez"), after=f1),
            Batch(before=f1, lead=click(200, 99), edits=keys("Harbor"), after=f2),
            Batch(before=f2, lead=click(255, 144), after=form(None, shown=False)),
        ],
    )


@pytest.fixture(scope="module")
def compiled(tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("transient") / "b"
    compile_bundle(recording(), out, "referral", OcrEngine(), examples={"patient": "Maria Lopez", "clinic": "Harbor"})
    return out, yaml.safe_load((out / "flow.yaml").read_text())


def resolve(bundle: Path, step_id: str, frame: np.ndarray):
    loaded = load_bundle(bundle)
    step = next(s for s in loaded.model.steps if s.id == step_id)
    assert step.target is not None
    templates = {p: np.asarray(Image.open(bundle / p).convert("RGB")) for p in loaded.templates}
    ladder = Ladder(templates, SCREEN, ocr=OcrEngine())
    return step.target, ladder.resolve(frame, step.target)


def inside(point, box, at=(0, 0)) -> bool:
    x, y, w, h = box
    return point is not None and x + at[0] <= point[0] < x + at[0] + w and y + at[1] <= point[1] < y + at[1] + h


@pytest.mark.parametrize("at", [(0, 0), (140, 90)], ids=["in place", "window moved"])
def test_the_first_field_is_found_without_its_focus_look(compiled, at) -> None:
    bundle, doc = compiled
    first = doc["steps"][0]
    assert first["action"] == "type" and first["text"] == "{patient}"
    replay = form(None, at=at)  # no window focus: no ring, no caret anywhere
    target, res = resolve(bundle, first["id"], replay)
    assert res.ok and res.rung == "template", (
        res.message,
        [(e.rung, e.verdict, e.score, e.detail) for e in res.evidence],
    )
    assert inside(res.point, FIELDS["patient"], at), (res.point, at)


def test_the_second_field_is_still_told_from_the_first(compiled) -> None:
    bundle, doc = compiled
    second = doc["steps"][1]
    assert second["text"] == "{clinic}"
    target, res = resolve(bundle, second["id"], form(None, at=(140, 90)))
    assert res.ok and inside(res.point, FIELDS["clinic"], (140, 90)), res.message


def test_the_template_shows_no_ring_and_no_caret(compiled) -> None:
    bundle, doc = compiled
    tmpl = np.asarray(Image.open(bundle / doc["steps"][0]["target"]["template"]).convert("RGB"))
    ring = np.all(np.abs(tmpl.astype(int) - RING) <= 30, axis=2)
    assert not ring.any(), f"{int(ring.sum())} ring-coloured pixels left in the template"


def test_a_widget_that_never_changed_keeps_every_pixel() -> None:
    """The rule takes out only what another comparable screen showed otherwise: a button the demonstration never
    changed is cut exactly as it was; a screen where most of the crop changed (the dialog closed) says nothing."""
    from openadapt_flow.record.transient import RestLook, Screen

    f0 = form("patient")
    rest = RestLook(f0, [Screen(f0), Screen(form("clinic")), Screen(form(None, shown=False))])  # both after it
    ok = (220, 130, 71, 29)
    assert np.array_equal(rest.crop(ok), f0[130:159, 220:291]) and ok not in rest.changed
    field = (110, 40, 181, 31)
    assert rest.mask(field).any()  # the ring went when the focus moved on


def test_a_page_navigated_on_is_no_state_of_the_form() -> None:
    """The screen after Save shows another page in the same place, its background a shade off the field's white (by
    less than the state tolerance): few pixels differ, but the label's glyphs are gone, so the widget is not there
    and nothing of the form's crop is painted out (the label stays in the template)."""
    from openadapt_flow.record.transient import RestLook, Screen

    f0 = form(None)
    page = np.full_like(f0, (244, 244, 242))
    crop = (10, 40, 200, 31)  # the Patient label and the start of its field
    rest = RestLook(f0, [Screen(page)])
    assert not rest.mask(crop).any()
    assert np.array_equal(rest.crop(crop), f0[40:71, 10:210])


def buttons(lit: str | None) -> np.ndarray:
    """An Xaw-like button row (Quit, Save, Load); `lit`: the one highlighted (a thick inner frame), as the pointer's
    path leaves it."""
    im = Image.new("RGB", (400, 120), (255, 255, 255))
    d = ImageDraw.Draw(im)
    f = ImageFont.truetype(DEJAVU, 13)
    for i, name in enumerate(("Quit", "Save", "Load")):
        x0 = 10 + 70 * i
        d.rectangle([x0, 10, x0 + 60, 34], fill=(255, 255, 255), outline=(0, 0, 0))
        if name == lit:
            d.rectangle([x0 + 1, 11, x0 + 59, 33], outline=(0, 0, 0), width=3)
        d.text((x0 + 12, 15), name, font=f, fill=(0, 0, 0))
    return np.array(im)


def test_a_neighbour_left_lit_by_the_pointers_path_is_cut_as_it_usually_looks() -> None:
    """The screen Save is cut from shows Quit inverted (the pointer just crossed it); before and after (the pointer on
    Save itself) Quit is plain: the template shows Quit plain. A look the step itself caused stays (it is after)."""
    from openadapt_flow.record.transient import RestLook, Screen

    plain, passing = buttons(None), buttons("Quit")
    crop = (40, 5, 110, 35)  # Save with a part of Quit and of Load beside it
    rest = RestLook(passing, [Screen(plain), Screen(passing), Screen(plain, (115, 22))])
    assert np.array_equal(rest.crop(crop), plain[5:40, 40:150])
    stays = RestLook(passing, [Screen(plain), Screen(passing), Screen(buttons("Quit"), (115, 22))])
    assert np.array_equal(stays.crop(crop), passing[5:40, 40:150])


def test_a_passing_look_that_ends_is_no_effect_of_the_step() -> None:
    """After Save, Quit shows plain again (the pointer's path had left it lit): that change is taken back before the
    step's facts are chosen; a change elsewhere (a message line) stays."""
    from openadapt_flow.record.transient import without_passing

    before, after = buttons("Quit"), buttons(None)
    after[80:100, 10:200] = 0  # the message line the step wrote
    passing = np.zeros(before.shape[:2], bool)
    passing[11:34, 40:70] = True  # the part of Quit's look the Save template's crop put back
    fixed = without_passing(before, after, passing)
    assert np.array_equal(fixed[5:40], after[5:40])  # Quit's ending is no change any more
    assert not np.array_equal(fixed[80:100], after[80:100])  # the message line still is


def test_a_stipple_is_neither_a_label_nor_an_anchor() -> None:
    """An Xaw scrollbar's stipple repeats itself a row or two down: OCR reads it as a word ("aI"), and a blank page
    anchored on it matches at every height once the window moved. Text does not repeat so."""
    from openadapt_flow.record.anchor import _textured_blocks
    from openadapt_flow.record.facts import repeats

    page = np.full((240, 240, 3), 255, np.uint8)
    page[:, :12] = 0
    page[:, :12][(np.add.outer(np.arange(240), np.arange(12)) % 2) == 0] = 255  # a checkerboard stipple
    assert repeats(page[40:54, 0:12])
    assert not len(_textured_blocks(page))
    assert not repeats(form(None)[47:61, 16:64])  # the form's "Patient" label
