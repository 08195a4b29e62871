"""Issue 23 finding 4: the OCR rung on a small dialog in a small default font. A label Tesseract misses at the
dialog's own size is read again enlarged (only after a miss, only in a small area), at record time (a field's
label) and at replay (the rung), with real Tesseract on a 222x117 dialog drawn in DejaVu Sans."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from openadapt_flow.bundle.models import Target
from openadapt_flow.ladder.ocr_rung import OcrRung, WordReader
from openadapt_flow.record.facts import field_label
from openadapt_flow.vision.ocr import OcrEngine

pytestmark = pytest.mark.timeout(60)

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"  # fonts-dejavu-core
PATIENT_FIELD, CLINIC_FIELD = (70, 14, 141, 27), (70, 50, 141, 27)


def dialog(px: int) -> np.ndarray:
    """A referral dialog (Patient, Clinic, OK) as a toolkit draws it at its default size, fonts at `px` pixels."""
    font = ImageFont.truetype(FONT, px)
    img = Image.new("RGB", (222, 117), (237, 237, 237))
    d = ImageDraw.Draw(img)
    d.text((10, 20), "Patient", fill=(40, 40, 40), font=font)
    d.rectangle((70, 14, 210, 40), fill=(255, 255, 255), outline=(53, 132, 228), width=2)
    d.text((10, 55), "Clinic", fill=(40, 40, 40), font=font)
    d.rectangle((70, 50, 210, 76), fill=(255, 255, 255), outline=(180, 180, 180), width=1)
    d.rectangle((150, 85, 210, 110), fill=(230, 230, 230), outline=(160, 160, 160), width=1)
    d.text((172, 91), "OK", fill=(40, 40, 40), font=font)
    return np.asarray(img).copy()


@pytest.fixture(scope="module")
def engine() -> OcrEngine:
    return OcrEngine()


@pytest.mark.parametrize("px,labels", [(8, ("Patient", "Clinic")), (9, ("Patient", "Clinic", "OK"))])
def test_the_rung_reads_a_small_dialogs_labels(engine: OcrEngine, px: int, labels: tuple[str, ...]) -> None:
    frame = dialog(px)
    rung = OcrRung(WordReader(engine), {})
    for text in labels:
        engine.clear_cache()
        evidence = rung.run(frame, Target(text=text), window=None, base_scale=1.0)
        assert evidence[-1].verdict == "hit", (text, px, [(e.verdict, e.detail) for e in evidence])


def test_the_recorder_finds_a_small_fields_label(engine: OcrEngine) -> None:
    frame = dialog(8)
    engine.clear_cache()
    for field, want in ((PATIENT_FIELD, "Patient"), (CLINIC_FIELD, "Clinic")):
        label = field_label(frame, field, engine)
        assert label is not None and label.text == want, (want, label)


def test_a_big_area_is_never_read_twice(engine: OcrEngine) -> None:
    """The enlarged read is for small areas: on a whole 1024x768 screen it reads nothing (a miss there stays one
    Tesseract call)."""
    screen = np.full((768, 1024, 3), 237, np.uint8)
    screen[100:217, 100:322] = dialog(8)
    engine.clear_cache()
    calls = engine.calls
    assert engine.read_enlarged(screen) == [] and engine.calls == calls
