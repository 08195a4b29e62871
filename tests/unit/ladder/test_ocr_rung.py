"""OCR rung through the Ladder: real Tesseract on synthetic frames, plus a scripted engine for pure logic."""

from __future__ import annotations

import numpy as np
import pytest

from openadapt_flow.bundle.models import Landmark, Target
from openadapt_flow.ladder.ladder import Ladder
from openadapt_flow.vision.ocr import OcrEngine, Word

from .synthetic import Button, Label, around, button_box, button_text_box, centre, crop, draw, text_box

pytestmark = pytest.mark.timeout(60)

SIZE = (1920, 1080)


@pytest.fixture(scope="module")
def engine() -> OcrEngine:
    return OcrEngine()


def near(p: tuple[int, int] | None, q: tuple[float, float], tol: float = 3) -> bool:
    return p is not None and abs(p[0] - q[0]) <= tol and abs(p[1] - q[1]) <= tol


def form(dx: int = 0, dy: int = 0) -> tuple[np.ndarray, tuple[int, int, int, int]]:
    """A 'Vendor' label with its field to the right; returns the frame and the field box."""
    field = (380 + dx, 180 + dy, 240, 28)
    frame = draw([Button("Save", 600 + dx, 520 + dy)], [Label("Vendor", 300 + dx, 185 + dy)], (field,))
    return frame, field


def test_field_found_by_its_label_clicks_the_field(engine: OcrEngine) -> None:
    _, field = form()
    label = text_box("Vendor", 300, 185)
    lx, ly = centre(label)
    fx, fy = centre(field)
    t = Target(text="Vendor", region=label, text_offset=(round(fx - lx), round(fy - ly)))
    live, live_field = form(50, 30)
    res = Ladder({}, SIZE, ocr=engine).resolve(live, t)
    assert res.ok and res.rung == "ocr", res.message
    assert near(res.point, centre(live_field))
    ev = res.evidence[-1]
    assert ev.ocr_conf is not None and ev.score == pytest.approx(1.0)
    assert ev.box is not None and near((ev.box[0], ev.box[1]), (label[0] + 50, label[1] + 30))


def test_label_inside_the_crop_keeps_the_recorded_click_offset(engine: OcrEngine) -> None:
    save = Button("Save", 600, 520)
    recorded = draw([save, Button("Cancel", 720, 520)])
    region = around(button_box(save))
    t = Target(template="t/save.png", region=region, point=(14, 21), text="Save")
    # Restyled: a much wider button elsewhere; the crop no longer matches, the label still reads.
    wide = Button("Save", 900, 700, width=260)
    live = draw([wide, Button("Cancel", 720, 520)])
    res = Ladder({"t/save.png": crop(recorded, region)}, SIZE, ocr=engine).resolve(live, t)
    assert res.ok and res.rung == "ocr", res.message
    # the window, the whole frame at the first scale, then at every scale; gray and edges each
    assert [e.verdict for e in res.evidence if e.rung.startswith("template")] == ["miss"] * 6
    rec_text = centre(button_text_box(save))
    rec_click = (region[0] + 14, region[1] + 21)
    live_text = centre(button_text_box(wide))
    expected = (live_text[0] + rec_click[0] - rec_text[0], live_text[1] + rec_click[1] - rec_text[1])
    assert near(res.point, expected)


AMOUNTS = [Label("Net", 330, 300), Label("Amount", 400, 300), Label("Gross", 330, 340), Label("Amount", 400, 340)]


def amount_target(landmark: str | None, region: tuple[int, int, int, int]) -> Target:
    lms = []
    if landmark is not None:
        row = {"Net": 300, "Gross": 340}[landmark]
        ax, ay = centre(text_box("Amount", 400, row))
        lx, ly = centre(text_box(landmark, 330, row))
        lms = [Landmark(text=landmark, dx=round(lx - ax), dy=round(ly - ay))]
    return Target(text="Amount", region=region, landmarks=lms)


@pytest.mark.parametrize("landmark,row", [("Gross", 340), ("Net", 300)])
def test_two_same_labels_in_the_window_are_told_apart_by_a_landmark(engine: OcrEngine, landmark: str, row: int) -> None:
    live = draw([], AMOUNTS)
    t = amount_target(landmark, text_box("Amount", 400, 300))
    res = Ladder({}, SIZE, ocr=engine).resolve(live, t)
    assert res.ok, res.message
    assert near(res.point, centre(text_box("Amount", 400, row)))
    assert landmark in res.evidence[-1].detail


def test_two_same_labels_far_from_the_region_without_landmark_are_ambiguous(engine: OcrEngine) -> None:
    live = draw([], [Label("Amount", 300, 300), Label("Amount", 300, 700)])
    t = Target(text="Amount", region=(1500, 900, 60, 14))
    res = Ladder({}, SIZE, ocr=engine).resolve(live, t)
    assert res.point is None and res.category == "ambiguous"
    assert [e.search for e in res.evidence] == [(1420, 820, 220, 174), (0, 0, 1920, 1080)]
    assert '"Amount"' in res.message


def test_two_same_labels_far_from_the_region_with_a_landmark_resolve(engine: OcrEngine) -> None:
    labels = [Label("Amount", 300, 300), Label("Amount", 300, 700), Label("Gross", 220, 700)]
    ax, ay = centre(text_box("Amount", 300, 700))
    gx, gy = centre(text_box("Gross", 220, 700))
    t = Target(text="Amount", region=(1500, 900, 60, 14), landmarks=[Landmark(text="Gross", dx=round(gx - ax), dy=0)])
    res = Ladder({}, SIZE, ocr=engine).resolve(draw([], labels), t)
    assert near(res.point, (ax, ay))


def test_one_label_inside_the_window_is_no_answer_while_another_is_elsewhere(engine: OcrEngine) -> None:
    labels = [Label("Amount", 400, 300), Label("Amount", 1400, 800)]
    t = Target(text="Amount", region=text_box("Amount", 410, 310))
    res = Ladder({}, SIZE, ocr=engine).resolve(draw([], labels), t)
    assert res.point is None and res.category == "ambiguous"  # which one the window held decides nothing (issue 33)


def test_missing_text_is_a_resolution_halt(engine: OcrEngine) -> None:
    t = Target(text="Approve", region=(400, 300, 60, 14))
    res = Ladder({}, SIZE, ocr=engine).resolve(draw([], [Label("Reject", 400, 300)]), t)
    assert res.point is None and res.category == "resolution"
    assert [e.verdict for e in res.evidence] == ["miss", "miss"]


def test_landmarks_alone_place_the_click(engine: OcrEngine) -> None:
    frame, field = form(40, 60)
    fx, fy = centre(field)
    lx, ly = centre(text_box("Vendor", 340, 245))
    t = Target(landmarks=[Landmark(text="Vendor", dx=round(lx - fx), dy=round(ly - fy))], region=(380, 180, 240, 28))
    res = Ladder({}, SIZE, ocr=engine).resolve(frame, t)
    assert res.ok and res.rung == "ocr"
    assert near(res.point, (fx, fy))


class ScriptedOcr(OcrEngine):
    """Reads a fixed list of words (those whose centre lies in the box) on frames of one size."""

    def __init__(self, words: list[Word], size: tuple[int, int] = SIZE) -> None:
        self.words, self.size, self.calls = words, size, 0

    def read(self, image: np.ndarray, box: tuple[int, int, int, int] | None = None) -> list[Word]:
        self.calls += 1
        if (image.shape[1], image.shape[0]) != self.size:
            return []
        x, y, w, h = box or (0, 0, image.shape[1], image.shape[0])
        return [wd for wd in self.words if x <= wd.centre[0] < x + w and y <= wd.centre[1] < y + h]


def test_ocr_cannot_break_a_template_tie_with_the_crops_own_label() -> None:
    save, twin = Button("Save", 600, 520), Button("Save", 600, 470)
    region = around(button_box(save))
    recorded = draw([save])
    live = draw([save, twin])
    # OCR "misses" the twin: a unique read must still not pick between look-alikes.
    only_one = ScriptedOcr([Word("Save", 95, button_text_box(save))])
    t = Target(template="t/save.png", region=region, text="Save")
    res = Ladder({"t/save.png": crop(recorded, region)}, SIZE, ocr=only_one).resolve(live, t)
    assert res.point is None and res.category == "ambiguous"
    assert res.evidence[0].verdict == "ambiguous"


def test_a_landmark_breaks_a_template_tie() -> None:
    save, twin = Button("Save", 600, 520), Button("Save", 600, 470)
    region = around(button_box(save))
    live = draw([save, twin])
    sx, sy = centre(button_text_box(save))
    tx, ty = centre(button_text_box(twin))
    words = [
        Word("Save", 95, button_text_box(save)),
        Word("Save", 95, button_text_box(twin)),
        Word("Totals", 90, (round(sx) - 150, round(sy) - 6, 40, 12)),
    ]
    click = (region[0] + region[2] // 2, region[1] + region[3] // 2)
    t = Target(
        template="t/save.png",
        region=region,
        text="Save",
        landmarks=[Landmark(text="Totals", dx=round(sx) - 130 - click[0], dy=round(sy) - click[1])],
    )
    res = Ladder({"t/save.png": crop(draw([save]), region)}, SIZE, ocr=ScriptedOcr(words)).resolve(live, t)
    assert res.ok, res.message
    assert near(res.point, (sx, sy), tol=4) and not near(res.point, (tx, ty), tol=4)


def test_a_fields_label_is_the_phrase_of_its_own_not_the_word_inside_a_heading() -> None:
    """A web form's heading 'Patient intake' above the 'Patient' field (issue 23 corpus, dirty start: the field's
    template missed on a prefilled value): the label matched as a phrase of its own decides; the same word inside a
    longer line does not make it ambiguous. Two labels of their own would still be ambiguous."""
    heading = [Word("Patient", 92, (300, 100, 70, 16)), Word("intake", 92, (376, 100, 56, 16))]
    label = Word("Patient", 93, (300, 185, 60, 14))
    t = Target(text="Patient", region=label.box, text_offset=(150, 0))
    res = Ladder({}, SIZE, ocr=ScriptedOcr([*heading, label])).resolve(draw([]), t)
    assert res.ok and res.rung == "ocr" and res.point == (round(label.centre[0]) + 150, round(label.centre[1]))
    twin = Word("Patient", 93, (300, 215, 60, 14))  # near enough that place cannot decide either
    res = Ladder({}, SIZE, ocr=ScriptedOcr([*heading, label, twin])).resolve(draw([]), t)
    assert res.point is None and res.category == "ambiguous"
