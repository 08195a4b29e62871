"""The bundle compiler on drawn screens with real Tesseract: which facts it picks, which it refuses, what steps it makes."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from PIL import Image, ImageDraw, ImageFont

from openadapt_flow.bundle.loader import load_bundle
from openadapt_flow.errors import UsageError
from openadapt_flow.fixture.gestures import Gesture
from openadapt_flow.fixture.recorder import Batch, Recording
from openadapt_flow.record.compile import compile_bundle
from openadapt_flow.record.facts import readable, screen_facts
from openadapt_flow.vision.ocr import OcrEngine, Word

pytestmark = pytest.mark.timeout(60)
DEJAVU = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


def screen(words: list[tuple[str, int, int]], buttons: list[tuple[str, int, int]] = ()) -> np.ndarray:
    im = Image.new("RGB", (640, 400), (244, 244, 244))
    d = ImageDraw.Draw(im)
    font = ImageFont.truetype(DEJAVU, 18)
    for text, x, y in buttons:
        d.rectangle(
            [x - 14, y - 10, x + d.textlength(text, font=font) + 14, y + 30],
            fill=(220, 220, 220),
            outline=(112, 112, 112),
        )
        d.text((x, y), text, font=font, fill=(16, 16, 16))
    for text, x, y in words:
        d.text((x, y), text, font=font, fill=(16, 16, 16))
    return np.array(im)


@pytest.fixture(scope="module")
def ocr() -> OcrEngine:
    return OcrEngine()


def test_facts_skip_words_the_matcher_finds_on_the_other_screen_typed_values_and_numbers(ocr: OcrEngine) -> None:
    before = screen([("Vendor", 40, 60), ("Invoice", 300, 100)], buttons=[("Save", 60, 200)])
    after = screen([("Invoices", 300, 300), ("ACME", 40, 60), ("#17", 200, 60), ("Recorded", 40, 20)])
    facts = screen_facts(before, after, ocr, typed=["ACME"])
    present = [f.text for f in facts if f.kind == "text_present"]
    absent = [f.text for f in facts if f.kind == "text_absent"]
    assert present == [
        "Recorded"
    ]  # not "Invoices" (the matcher reads it as the "Invoice" that was there), not ACME or #17
    assert absent == ["Vendor"]  # the longest word gone; "Invoice" is not gone to the matcher ("Invoices" is there)


def test_no_change_means_no_fact_and_unreadable_change_is_a_region(ocr: OcrEngine) -> None:
    a = screen([("Vendor", 40, 60)])
    assert screen_facts(a, a.copy(), ocr, []) == []
    b = a.copy()
    b[300:340, 400:480] = (30, 90, 200)  # a coloured block: a change with no words
    (fact,) = screen_facts(a, b, ocr, [])
    assert fact.kind == "region_changed" and fact.region == (400, 300, 80, 40)


def test_readable_keeps_confident_words_only() -> None:
    words = [
        Word("Invoices", 95, (0, 0, 1, 1)),
        Word("hevoices", 49, (0, 0, 1, 1)),
        Word("1250.50", 95, (0, 0, 1, 1)),
        Word("Globex", 96, (0, 0, 1, 1)),
        Word("ok", 96, (0, 0, 1, 1)),
    ]
    assert [w.text for w in readable(words, typed=["Globex Ltd"])] == ["Invoices"]


def test_a_hotkey_that_changes_the_screen_compiles_to_a_hotkey_step_with_facts(tmp_path, ocr: OcrEngine) -> None:
    form = screen([("Vendor", 40, 60)], buttons=[("Save", 60, 200)])
    done = screen([("Invoices", 40, 20)])
    rec = Recording(
        url="vnc://h:1",
        settle_s=0.3,
        initial=form,
        batches=[Batch(before=form, lead=[Gesture("key", key="ctrl+s", char=None)], after=done)],
    )
    out = compile_bundle(rec, tmp_path / "b", "save-it", ocr)
    (step,) = yaml.safe_load((tmp_path / "b" / "flow.yaml").read_text())["steps"]
    assert (step["action"], step["keys"]) == ("hotkey", ["ctrl", "s"])
    assert {"text_present": "Invoices", "region": step["expect"][0]["region"]} in step["expect"]
    assert load_bundle(out.path).model.steps[0].id == "save"  # named by what ctrl+s does


def test_a_click_on_a_button_is_cut_to_its_face_and_named_by_its_label(tmp_path, ocr: OcrEngine) -> None:
    first = screen([("Invoices", 40, 20)], buttons=[("New invoice", 60, 100), ("Export", 300, 100)])
    form = screen([("Vendor", 40, 60)])
    first.flags.writeable = False  # as captured frames are (one shared copy per screen change)
    rec = Recording(
        url="vnc://h:1",
        settle_s=0.3,
        initial=first,
        batches=[
            Batch(before=first, lead=[Gesture("press", 80, 110, key="click"), Gesture("click", 80, 110)], after=form)
        ],
    )
    compile_bundle(rec, tmp_path / "b", "open", ocr)
    (step,) = yaml.safe_load((tmp_path / "b" / "flow.yaml").read_text())["steps"]
    assert step["id"] == "new-invoice" and step["target"]["text"] == "New invoice"
    x, y, w, h = step["target"]["region"]
    assert x <= 80 < x + w and y <= 110 < y + h and w < 200  # the button's face, not the whole row
    assert step["target"]["point"] == [80 - x, 110 - y]


def test_a_recording_with_no_usable_input_is_refused(tmp_path, ocr: OcrEngine) -> None:
    a = screen([("Vendor", 40, 60)])
    with pytest.raises(UsageError, match="no input a bundle can replay"):
        compile_bundle(
            Recording(url="vnc://h:1", settle_s=0.3, initial=a, batches=[Batch(before=a, after=a)]),
            tmp_path / "b",
            "x",
            ocr,
        )
    assert not (tmp_path / "b").exists()


def test_the_recording_format_has_a_json_schema() -> None:
    from openadapt_flow.cli.schema import schema_json

    doc = schema_json("recording")
    assert doc["$id"] == "openadapt-flow/recording" and {"batches", "screen", "initial"} <= set(doc["properties"])


def test_a_lone_text_absent_holds_on_the_whole_frame(tmp_path, ocr: OcrEngine) -> None:
    dialog = screen([("Warning", 200, 100), ("Continue", 200, 200)])
    closed = screen([])
    rec = Recording(
        url="vnc://h:1",
        settle_s=0.3,
        initial=dialog,
        batches=[Batch(before=dialog, lead=[Gesture("key", key="escape")], after=closed)],
    )
    compile_bundle(rec, tmp_path / "b", "close", ocr)
    (step,) = yaml.safe_load((tmp_path / "b" / "flow.yaml").read_text())["steps"]
    assert step["expect"] == [{"text_absent": "Continue"}]  # nothing appeared: no region, the whole frame must lack it


def test_two_entries_into_one_field_make_two_params_each_bound_to_its_own_save(tmp_path, ocr: OcrEngine) -> None:
    def form(value: str = "", note: str = "") -> np.ndarray:
        im = Image.new("RGB", (640, 400), (244, 244, 244))
        d = ImageDraw.Draw(im)
        f = ImageFont.truetype(DEJAVU, 18)
        d.text((40, 60), "Vendor", font=f, fill=(16, 16, 16))
        d.rectangle([140, 52, 440, 88], fill=(255, 255, 255), outline=(112, 112, 112))
        if value:
            d.text((150, 60), value, font=f, fill=(16, 16, 16))
        d.rectangle([46, 190, 120, 230], fill=(220, 220, 220), outline=(112, 112, 112))
        d.text((60, 200), "Save", font=f, fill=(16, 16, 16))
        if note:
            d.text((300, 300), note, font=f, fill=(16, 16, 16))
        return np.array(im)

    def typed(s: str) -> list[Gesture]:
        return [Gesture("key", key=c, char=c) for c in s]

    field_click = [Gesture("press", 200, 70, key="click"), Gesture("click", 200, 70)]
    save_click = [Gesture("press", 80, 210, key="click"), Gesture("click", 80, 210)]
    f0, f1, f2, f3 = form(), form("ACME"), form("", "Recorded"), form("Globex", "Recorded")
    rec = Recording(
        url="vnc://h:1",
        settle_s=0.3,
        initial=f0,
        sor_kind="sqlite",
        batches=[
            Batch(before=f0, lead=field_click, edits=typed("ACME"), after=f1),
            Batch(before=f1, lead=save_click, after=f2, writes=[("invoices", {"vendor": "ACME"})]),
            Batch(before=f2, lead=field_click, edits=typed("Globex"), after=f3),
            Batch(
                before=f3,
                lead=save_click,
                after=form("", "Recorded twice"),
                writes=[("invoices", {"vendor": "Globex"})],
            ),
        ],
    )
    out = compile_bundle(rec, tmp_path / "b", "twice", ocr)
    assert out.params == {
        "vendor": {"type": "string", "required": True, "example": "ACME"},
        "vendor_2": {"type": "string", "required": True, "example": "Globex"},
    }
    saves = [s for s in out.steps if s.get("consequential")]
    assert [s["effect"]["changes"] for s in saves] == [
        [{"table": "invoices", "added": {"vendor": "{vendor}"}}],
        [{"table": "invoices", "added": {"vendor": "{vendor_2}"}}],
    ]
    assert [s["identity"]["text"] for s in saves] == ["{vendor}", "{vendor_2}"]


def test_a_placeholder_that_vanishes_on_typing_is_not_part_of_the_value(tmp_path, ocr: OcrEngine) -> None:
    def form(text: str, colour: tuple[int, int, int]) -> np.ndarray:
        im = Image.new("RGB", (640, 400), (244, 244, 244))
        d = ImageDraw.Draw(im)
        f = ImageFont.truetype(DEJAVU, 18)
        d.text((40, 60), "Vendor", font=f, fill=(16, 16, 16))
        d.rectangle([140, 52, 440, 88], fill=(255, 255, 255), outline=(112, 112, 112))
        d.text((150, 60), text, font=f, fill=colour)
        return np.array(im)

    empty, typed = form("Search", (150, 150, 150)), form("ACME", (16, 16, 16))
    click = [Gesture("press", 300, 70, key="click"), Gesture("click", 300, 70)]
    rec = Recording(
        url="vnc://h:1",
        settle_s=0.3,
        initial=empty,
        batches=[Batch(before=empty, lead=click, edits=[Gesture("key", key=c, char=c) for c in "ACME"], after=typed)],
    )
    out = compile_bundle(rec, tmp_path / "b", "search", ocr)
    assert [p["example"] for p in out.params.values()] == ["ACME"]  # not "SearchACME"
