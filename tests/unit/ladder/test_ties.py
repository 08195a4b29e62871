"""No tie is guessed at any rung (issue 33, item 1): two candidates within the margin are `ambiguous`, never decided by
reading order, by which one the window around the recorded place held, or by a landmark that tells them apart by
less than its margin. Synthetic frames; a scripted OCR where the geometry must be exact."""

from __future__ import annotations

import math

import cv2
import numpy as np
import pytest
from PIL import Image, ImageDraw

from openadapt_flow.bundle.models import Landmark, Target
from openadapt_flow.ladder.ladder import Ladder, LadderOptions
from openadapt_flow.ladder.landmarks import LANDMARK_SLACK
from openadapt_flow.vision.ocr import OcrEngine, Word

from .synthetic import Button, Label, around, button_box, button_text_box, centre, crop, draw, font, text_box

pytestmark = pytest.mark.timeout(120)

SIZE = (1920, 1080)


class ScriptedOcr(OcrEngine):
    """Reads a fixed list of words (those whose centre lies in the box) on frames of SIZE; any other image (a
    template crop) is read by Tesseract."""

    def __init__(self, words: list[Word]) -> None:
        super().__init__()
        self.words = words

    def read(self, image: np.ndarray, box: tuple[int, int, int, int] | None = None) -> list[Word]:
        if (image.shape[1], image.shape[0]) != SIZE:
            return super().read(image, box)
        x, y, w, h = box or (0, 0, SIZE[0], SIZE[1])
        return [wd for wd in self.words if x <= wd.centre[0] < x + w and y <= wd.centre[1] < y + h]

    def read_enlarged(self, image: np.ndarray, box: tuple[int, int, int, int] | None = None) -> list[Word]:
        return self.read(image, box)


def inside(p: tuple[int, int] | None, box: tuple[int, int, int, int]) -> bool:
    return p is not None and box[0] <= p[0] < box[0] + box[2] and box[1] <= p[1] < box[1] + box[3]


# -- OCR: the window is no tie-breaker --------------------------------------------------------------------------------


def test_one_reading_in_the_window_is_no_answer_while_the_frame_holds_another() -> None:
    labels = [Label("Amount", 400, 300), Label("Amount", 1400, 800)]
    t = Target(text="Amount", region=text_box("Amount", 410, 310))
    res = Ladder({}, SIZE, ocr=OcrEngine()).resolve(draw([], labels), t)
    assert res.point is None and res.category == "ambiguous", res.message
    ev = res.evidence[-1]
    assert ev.score == ev.runner_up == 1.0 and ev.candidates is not None and len(ev.candidates) == 2
    assert "1 in the window around the recorded place, 1 elsewhere" in ev.detail


def test_a_landmark_still_decides_between_a_reading_in_the_window_and_one_elsewhere() -> None:
    labels = [Label("Amount", 400, 300), Label("Net", 330, 300), Label("Amount", 1400, 800)]
    ax, ay = centre(text_box("Amount", 400, 300))
    nx, ny = centre(text_box("Net", 330, 300))
    t = Target(
        text="Amount", region=text_box("Amount", 410, 310), landmarks=[Landmark(text="Net", dx=round(nx - ax), dy=0)]
    )
    res = Ladder({}, SIZE, ocr=OcrEngine()).resolve(draw([], labels), t)
    assert res.ok and abs(res.point[0] - ax) <= 3 and abs(res.point[1] - ay) <= 3, res.message


# -- OCR: a table's new row one lower (the DB Browser batch of issue 33) -----------------------------------------------

COLS = {"id": (40, 50), "name": (90, 140), "clinic": (230, 140)}  # x, width
TOP, ROW_H = 130, 27


def _table(rows: list[tuple[str, str, str]]) -> tuple[np.ndarray, list[Word]]:
    """A data grid like DB Browser's: ids right-aligned, text left-aligned, a new record's cells reading NULL; the
    frame and the words a reader reports on it (id and first cell 12 px apart: one line to a phrase grouper)."""
    im = Image.new("RGB", SIZE, (245, 245, 245))
    d, f = ImageDraw.Draw(im), font(15)
    words: list[Word] = []

    def put(x: float, y: float, text: str, fill: tuple[int, int, int]) -> None:
        d.text((x, y), text, font=f, fill=fill)
        for part, dx in (
            ((text, 0.0),)
            if " " not in text
            else ((w, d.textlength(text[: text.index(w)], font=f)) for w in text.split())
        ):
            l, t, r, b = d.textbbox((x + dx, y), part, font=f)
            words.append(Word(part, 92, (int(l), int(t), int(r - l), int(b - t))))

    for col, (x, w) in COLS.items():
        d.rectangle([x, TOP - 30, x + w - 1, TOP - 1], fill=(225, 225, 225), outline=(180, 180, 180))
        put(x + (w - d.textlength(col, font=f)) / 2, TOP - 24, col, (20, 20, 20))
    for i, row in enumerate(rows):
        y = TOP + i * ROW_H
        for (col, (x, w)), value in zip(COLS.items(), row):
            d.rectangle([x, y, x + w - 1, y + ROW_H - 1], fill=(255, 255, 255), outline=(200, 200, 200))
            tx = x + w - 6 - d.textlength(value, font=f) if col == "id" else x + 6
            put(tx, y + 5, value, (140, 140, 140) if value == "NULL" else (20, 20, 20))
    return np.array(im), words


def _cell(col: str, row: int) -> tuple[int, int, int, int]:
    x, w = COLS[col]
    return (x, TOP + row * ROW_H, w, ROW_H)


def test_a_new_row_one_lower_never_puts_the_value_in_the_neighbour_column() -> None:
    # Recorded: two rows and the new record (row 3); the name cell's crop takes in its id ("3") to be unique. The
    # replay's table has item 1's row there and the new record one lower: the crop is nowhere (its id differs), and
    # two cells read NULL. The name cell's NULL joins its id on one line; the clinic's stands alone — that used to
    # pick the clinic cell ("a phrase of its own"). Only the recorded crop around each reading may decide.
    recorded, _ = _table([("1", "Ada", "North"), ("2", "Alan", "South"), ("3", "NULL", "NULL")])
    ix, _, _, _ = _cell("id", 2)
    nx, ny, nw, nh = _cell("name", 2)
    region = (ix, ny, nx + nw - ix, nh)
    t = Target(template="t/cell.png", region=region, point=(nx + nw // 2 - ix, nh // 2), text="NULL")
    live, words = _table(
        [("1", "Ada", "North"), ("2", "Alan", "South"), ("3", "Eli Stone", "Lake"), ("4", "NULL", "NULL")]
    )
    res = Ladder({"t/cell.png": crop(recorded, region)}, SIZE, ocr=ScriptedOcr(words)).resolve(live, t)
    assert not inside(res.point, _cell("clinic", 3)), f"typed into the clinic column: {res.evidence}"
    assert not any(e.rung == "ocr" and "phrase of its own" in e.detail for e in res.evidence)
    assert res.ok and inside(res.point, _cell("name", 3)), res.message  # the crop (id 3 vs 4 aside) decides
    assert "the recorded crop correlates" in res.evidence[-1].detail


# -- OCR: landmarks decide only by a clear margin ----------------------------------------------------------------------

HEADER = Word("name", 92, (120, 100, 40, 12))


def _nulls(rival_dx: int) -> tuple[list[Word], list[Word]]:
    """Two NULL readings on one row: the name cell's under the header, the rival `rival_dx` px to the right."""
    a = Word("NULL", 92, (120, 230, 36, 12))
    b = Word("NULL", 92, (120 + rival_dx, 230, 36, 12))
    return [a, b], [HEADER]


@pytest.mark.parametrize(
    "row_shift,rival_dx,decided",
    [
        (0, 140, True),  # the header right above one, a column away from the other: decides
        (0, 75, True),  # a narrower column, still more than a tolerance worse
        (27, 75, False),  # the new row one lower: the winner's header is 27 px off already; the rival only ~1 tolerance
        (27, 50, False),  # worse than that: a tie
    ],
)
def test_a_landmark_decides_only_by_a_clear_margin(row_shift: int, rival_dx: int, decided: bool) -> None:
    nulls, header = _nulls(rival_dx)
    hx, hy = HEADER.centre
    # recorded: the header 130 - row_shift px above the name cell's NULL (the table had one row less)
    lm = Landmark(text="name", dx=round(hx - nulls[0].centre[0]), dy=round(hy - nulls[0].centre[1]) + row_shift)
    t = Target(text="NULL", region=(100, 210, 80, 40), landmarks=[lm])
    res = Ladder({}, SIZE, ocr=ScriptedOcr(nulls + header)).resolve(draw([]), t)
    tol = LANDMARK_SLACK + 0.1 * math.hypot(lm.dx, lm.dy)
    if decided:
        assert res.ok and abs(res.point[0] - nulls[0].centre[0]) <= 1, res.message
    else:
        assert res.point is None and res.category == "ambiguous", (res.point, tol)
        assert "landmarks fit" in res.evidence[-1].detail


@pytest.mark.parametrize("rows_lower", [1, 3])
def test_a_column_header_tells_the_new_rows_cells_apart_however_many_rows_lower(rows_lower: int) -> None:
    # DB Browser's geometry (name and clinic cells 69 px apart); the table grew by `rows_lower` rows since the
    # recording. Held as a plain landmark the header is already off by the rows' height at the right cell: a tie.
    # As its column's header (what `flow record` writes) only its place along the row counts: the name cell.
    hx, hy = 97, 120
    header = Word("name", 92, (hx - 17, hy - 6, 34, 12))
    y = 250 + 27 * rows_lower
    name_null, clinic_null = Word("NULL", 92, (80, y - 6, 34, 12)), Word("NULL", 92, (149, y - 6, 34, 12))
    words = [header, Word("clinic", 92, (150, hy - 6, 40, 12)), name_null, clinic_null]
    dy = round(hy - 250)  # recorded: the header 130 px above the new row
    plain = Target(text="NULL", region=(60, 236, 80, 28), landmarks=[Landmark(text="name", dx=0, dy=dy)])
    column = Target(text="NULL", region=(60, 236, 80, 28), landmarks=[Landmark(text="name", dx=0, dy=dy, column=True)])
    res = Ladder({}, SIZE, ocr=ScriptedOcr(words)).resolve(draw([]), column)
    assert res.ok and abs(res.point[0] - name_null.centre[0]) <= 1 and abs(res.point[1] - y) <= 1, res.message
    res = Ladder({}, SIZE, ocr=ScriptedOcr(words)).resolve(draw([]), plain)
    assert res.point is None and res.category == "ambiguous"


def test_a_column_header_cannot_tell_two_rows_of_one_column_apart() -> None:
    # a leftover row's NULL under the same header: the header fits both cells — a tie, never the lower or the upper
    header = Word("name", 92, (80, 114, 34, 12))
    cells = [Word("NULL", 92, (80, 271, 34, 12)), Word("NULL", 92, (80, 298, 34, 12))]
    t = Target(text="NULL", region=(60, 263, 80, 28), landmarks=[Landmark(text="name", dx=0, dy=-157, column=True)])
    res = Ladder({}, SIZE, ocr=ScriptedOcr([header, *cells])).resolve(draw([]), t)
    assert (
        res.point is None
        and res.category == "ambiguous"
        and "landmarks fit 2 candidates alike" in res.evidence[-1].detail
    )


# -- template rung -----------------------------------------------------------------------------------------------------

SAVE = Button("Save", 600, 520)
OTHERS = [Button("Cancel", 720, 520), Button("Open", 100, 200)]
REGION = around(button_box(SAVE))


def _template_ladder(ocr: OcrEngine | None = None, **opts: object) -> Ladder:
    return Ladder(
        {"t/save.png": crop(draw([SAVE, *OTHERS]), REGION)},
        SIZE,
        ocr=ocr or ScriptedOcr([]),
        options=LadderOptions(**opts),
    )  # type: ignore[arg-type]


def test_a_template_hit_moved_in_the_window_with_a_twin_elsewhere_is_ambiguous() -> None:
    # the Save button moved 40 px down (still inside the window); an identical Save stands far away
    frame = draw([Button("Save", 600, 560), Button("Save", 1500, 900), *OTHERS])
    res = _template_ladder().resolve(frame, Target(template="t/save.png", region=REGION))
    assert res.point is None and res.category == "ambiguous", res.message
    amb = next(e for e in res.evidence if e.verdict == "ambiguous")
    assert amb.rung == "template" and "the window alone does not decide" in amb.detail
    assert amb.candidates is not None and len(amb.candidates) == 2


def test_a_template_hit_moved_in_the_window_and_unique_on_the_frame_stands() -> None:
    frame = draw([Button("Save", 600, 560), *OTHERS])
    res = _template_ladder().resolve(frame, Target(template="t/save.png", region=REGION))
    assert res.ok and res.rung == "template" and "unique on the whole frame" in res.evidence[-1].detail


def test_a_template_hit_at_its_recorded_place_stands_whatever_is_elsewhere() -> None:
    frame = draw([SAVE, Button("Save", 1500, 900), *OTHERS])
    res = _template_ladder().resolve(frame, Target(template="t/save.png", region=REGION))
    assert res.ok and len(res.evidence) == 1


@pytest.mark.parametrize("twin_dy,decided", [(-50, True), (-36, False)])
def test_a_landmark_breaks_a_template_tie_only_by_a_clear_margin(twin_dy: int, decided: bool) -> None:
    # two identical Saves (the template cannot tell them apart); a "Totals" label is read 10 px below where the
    # recording had it relative to the real one: the twin above is off by the rows' distance plus those 10 px
    twin = Button("Save", 600, 520 + twin_dy)
    live = draw([SAVE, twin, *OTHERS])
    sx, sy = centre(button_text_box(SAVE))
    click = (REGION[0] + REGION[2] // 2, REGION[1] + REGION[3] // 2)
    totals = Word("Totals", 90, (round(sx) - 150, round(sy) - 6 + 10, 40, 12))
    words = [Word("Save", 95, button_text_box(SAVE)), Word("Save", 95, button_text_box(twin)), totals]
    lm = Landmark(text="Totals", dx=round(sx) - 130 - click[0], dy=round(sy) - click[1])
    t = Target(template="t/save.png", region=REGION, text="Save", landmarks=[lm])
    res = _template_ladder(ScriptedOcr(words)).resolve(live, t)
    assert res.evidence[0].verdict == "ambiguous"  # the template rung saw the look-alikes
    if decided:
        assert res.ok and abs(res.point[1] - sy) <= 4, res.message
    else:
        assert res.point is None and res.category == "ambiguous", res.message


# -- landmarks only ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("other_dy,decided", [(120, True), (30, False)])
def test_landmarks_only_decide_by_a_clear_margin(other_dy: int, decided: bool) -> None:
    # a field known only by two landmarks: its label "Vendor" to the left, a heading "Invoices" above. A second
    # "Vendor" label `other_dy` px lower implies a second place; the heading is where the recording had it for the
    # first, and `other_dy` px off for the second.
    field = (380, 300, 240, 28)
    fx, fy = centre(field)
    vendor, heading = Word("Vendor", 92, (300, 307, 50, 12)), Word("Invoices", 92, (300, 200, 70, 14))
    second = Word("Vendor", 92, (300, 307 + other_dy, 50, 12))
    lms = [
        Landmark(text="Vendor", dx=round(vendor.centre[0] - fx), dy=round(vendor.centre[1] - fy)),
        Landmark(text="Invoices", dx=round(heading.centre[0] - fx), dy=round(heading.centre[1] - fy)),
    ]
    res = Ladder({}, SIZE, ocr=ScriptedOcr([vendor, heading, second])).resolve(
        draw([]), Target(landmarks=lms, region=field)
    )
    if decided:
        assert res.ok and abs(res.point[1] - fy) <= 2, res.message
    else:
        assert res.point is None and res.category == "ambiguous", res.message


# -- model rung's check ------------------------------------------------------------------------------------------------


class ProposingModel:
    """A grounding model that always proposes one point (no HTTP: the check is what is under test)."""

    def __init__(self, point: tuple[int, int]) -> None:
        self.point = point
        self.calls = 0

    def locate(self, image: np.ndarray, instruction: str) -> tuple[int, int]:
        self.calls += 1
        return self.point


def _jpeg(frame: np.ndarray) -> np.ndarray:
    out = cv2.imdecode(cv2.imencode(".jpg", frame, [cv2.IMWRITE_JPEG_QUALITY, 20])[1], cv2.IMREAD_UNCHANGED)
    assert out is not None
    return out


def test_the_model_checks_template_passing_at_a_look_alike_too_is_ambiguous() -> None:
    a, b = Button("Save", 900, 300), Button("Save", 300, 900)
    live = _jpeg(draw([a, b]))
    model = ProposingModel(tuple(round(v) for v in centre(button_box(a))))  # type: ignore[arg-type]
    options = LadderOptions(threshold=0.995, edge_threshold=0.995, allow_model=True)  # no template hit: the model runs
    ladder = Ladder({"t/save.png": crop(draw([SAVE]), REGION)}, SIZE, ocr=ScriptedOcr([]), model=model, options=options)  # type: ignore[arg-type]
    res = ladder.resolve(live, Target(template="t/save.png", region=REGION))
    assert model.calls == 1
    assert res.point is None and res.category == "ambiguous", res.evidence[-1]
    assert res.evidence[-1].rung == "model" and "the model's pick is a guess" in res.evidence[-1].detail
    # alone on the frame, the same proposal is confirmed
    res = ladder.resolve(_jpeg(draw([a])), Target(template="t/save.png", region=REGION))
    assert res.ok and res.rung == "model", res.evidence[-1]
