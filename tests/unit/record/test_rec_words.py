"""The recorder's words agree with the bundle it writes (issue 37, item 3): a `--param` value typed after Tab is a
param, not "kept as literal text"; steps are named after the field's param or what a key does (`amount`, `save`),
not `type`, `tab`, `ctrl-s`; an example written as a number is a number param."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from PIL import Image, ImageDraw, ImageFont

from openadapt_flow.bundle.loader import load_bundle
from openadapt_flow.fixture.gestures import Gesture
from openadapt_flow.fixture.recorder import Batch, Recording
from openadapt_flow.record.compile import compile_bundle
from openadapt_flow.vision.ocr import OcrEngine

pytestmark = pytest.mark.timeout(120)
DEJAVU = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


def form(vendor: str = "", amount: str = "", focus: str = "vendor", note: str = "") -> np.ndarray:
    im = Image.new("RGB", (640, 400), (244, 244, 244))
    d = ImageDraw.Draw(im)
    f = ImageFont.truetype(DEJAVU, 18)
    for label, y, value in (("Vendor", 60, vendor), ("Amount", 130, amount)):
        d.text((40, y), label, font=f, fill=(16, 16, 16))
        ring = (40, 90, 220) if focus == label.lower() else (112, 112, 112)
        d.rectangle([140, y - 8, 440, y + 28], fill=(255, 255, 255), outline=ring, width=2)
        if value:
            d.text((150, y), value, font=f, fill=(16, 16, 16))
    if note:
        d.text((40, 300), note, font=f, fill=(16, 16, 16))
    return np.array(im)


def keys(text: str) -> list[Gesture]:
    return [Gesture("key", key=c, char=c) for c in text]


def recording() -> Recording:
    """Click Vendor, type ACME Corp; Tab, type 1250.50; Ctrl+S."""
    f0 = form()
    f1 = form("ACME Corp")
    moved = form("ACME Corp", focus="amount")
    f2 = form("ACME Corp", "1250.50", focus="amount")
    f3 = form("ACME Corp", "1250.50", focus="amount", note="Saved invoice")
    click = [Gesture("press", 300, 70, key="click"), Gesture("click", 300, 70)]
    return Recording(
        url="vnc://h:1",
        settle_s=0.3,
        initial=f0,
        batches=[
            Batch(before=f0, lead=click, edits=keys("ACME Corp"), after=f1),
            Batch(before=f1, lead=[Gesture("key", key="tab")], edits=keys("1250.50"), mid=moved, after=f2),
            Batch(before=f2, lead=[Gesture("key", key="ctrl+s")], after=f3),
        ],
    )


def test_a_param_typed_after_tab_is_named_and_described_as_the_param_it_became(tmp_path) -> None:
    out = compile_bundle(
        recording(), tmp_path / "b", "invoice", OcrEngine(), examples={"vendor": "ACME Corp", "amount": "1250.50"}
    )
    doc = yaml.safe_load((out.path / "flow.yaml").read_text())
    assert [s["id"] for s in doc["steps"]] == ["vendor", "tab-to-amount", "amount", "save"], out.warnings
    assert [s["text"] for s in doc["steps"] if s["action"] == "type"] == ["{vendor}", "{amount}"]
    assert not any("literal" in w for w in out.warnings), out.warnings
    assert any(w.startswith("step 'amount'") and "{amount} where the focus is" in w for w in out.warnings), out.warnings
    ids = {s["id"] for s in doc["steps"]}
    named = {w.split("'")[1] for w in out.warnings if w.startswith("step '")}
    assert named <= ids, (named, ids)  # every step a warning names is in the bundle as written
    assert not any(w.startswith("input 1 ") for w in out.warnings), out.warnings  # the click's notes name its step
    assert doc["params"]["amount"] == {"type": "number", "required": True, "example": 1250.5}
    assert doc["params"]["vendor"] == {"type": "string", "required": True, "example": "ACME Corp"}
    load_bundle(out.path)


@pytest.mark.parametrize(
    "text,number",
    [
        ("1250.50", 1250.5),
        ("42", 42),
        ("-3", -3),
        ("0.5", 0.5),
        ("02139", None),
        ("+44", None),
        ("1e3", None),
        ("12 345", None),
        ("ACME", None),
    ],
)
def test_only_a_plainly_written_number_is_a_number(text: str, number) -> None:
    from openadapt_flow.record.values import example_number

    assert example_number(text) == number


def test_the_recorders_closing_line_says_what_to_do_about_its_warnings(tmp_path, monkeypatch) -> None:
    from typer.testing import CliRunner

    from openadapt_flow.cli.app import build_app
    from openadapt_flow.fixture.recording_io import save_recording

    save_recording(recording(), tmp_path / "rec")
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(
        build_app(), ["compile", "rec", "--out", "b", "--param", "vendor=ACME Corp", "--param", "amount=1250.50"]
    )
    assert r.exit_code == 0, r.output
    assert "record: warning: step 'amount'" in r.stderr
    last = r.stdout.strip().splitlines()[-1]
    # Ctrl+S saved nothing a watched store saw, and only its literal "Saved" note checks it: an outcome no param checks
    assert "record: warning: step 'save' is the bundle's outcome" in r.stderr, r.stderr
    assert last.startswith("3 warning(s) above, each naming a step: fix those steps in b/flow.yaml"), r.stdout
    assert "flow validate --strict b" in last


def test_a_fragment_of_typed_text_is_no_fact() -> None:
    from openadapt_flow.record.facts import readable
    from openadapt_flow.vision.ocr import Word

    words = [Word("com", 95, (0, 0, 30, 12)), Word("Invoices", 95, (0, 20, 80, 12)), Word("acme", 95, (0, 40, 40, 12))]
    assert [w.text for w in readable(words, typed=["x@acme.com"])] == ["Invoices"]  # not `text_absent: com`
