"""The demo invoice app on a real Xvnc: its system of record, its variants, and the committed bundle's crops."""

from __future__ import annotations

import subprocess
import sys

import cv2
import numpy as np
import pytesseract
import pytest
import yaml

from openadapt_flow.bundle.models import Bundle
from tests.e2e.demo_harness import (
    BUNDLE_DIR,
    REPO,
    load_template,
    match_scores,
    peaks,
    settled_frame,
    tour,
)
from tests.support.xserver import wait_until

pytestmark = pytest.mark.timeout(60)

FLOW = yaml.safe_load((BUNDLE_DIR / "flow.yaml").read_text())
TARGETS = {s["target"]["template"].removeprefix("templates/"): s["target"] for s in FLOW["steps"]}
SCREEN_OF = {
    "new-invoice.png": "list",
    "vendor-field.png": "form",
    "amount-field.png": "form",
    "save.png": "form",
    "back.png": "saved",
}
APP_WINDOW = (0, 0, 800, 600)


def ocr(
    frame: np.ndarray, box: tuple[int, int, int, int] | None = None, local_contrast: bool = False
) -> dict[str, float]:
    """Words Tesseract reads (psm 11, as the OCR rung does) with their best confidence."""
    if box is not None:
        x, y, w, h = box
        frame = frame[y : y + h, x : x + w]
    image = cv2.cvtColor(frame, cv2.COLOR_BGR2RGB)
    if local_contrast:
        # Distance from the local background, inverted: dark ink on white whatever the theme's polarity.
        gray = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)
        contrast = cv2.absdiff(gray, cv2.medianBlur(gray, 31)).astype(np.float32)
        image = (255 - contrast * (255 / max(1.0, float(contrast.max())))).astype(np.uint8)
    data = pytesseract.image_to_data(image, config="--psm 11", output_type=pytesseract.Output.DICT)
    words: dict[str, float] = {}
    for text, conf in zip(data["text"], data["conf"]):
        if text.strip():
            words[text.strip()] = max(words.get(text.strip(), -1.0), float(conf))
    return words


def best(scores: np.ndarray) -> tuple[float, tuple[int, int]]:
    _, score, _, loc = cv2.minMaxLoc(scores)
    return float(score), (int(loc[0]), int(loc[1]))


def edge_scores(frame: np.ndarray, template: np.ndarray) -> np.ndarray:
    """Correlation of Sobel gradient magnitudes: what an edge rung could use when luminance is inverted."""

    def grad(img: np.ndarray) -> np.ndarray:
        g = cv2.cvtColor(img, cv2.COLOR_BGR2GRAY).astype(np.float32)
        return cv2.magnitude(cv2.Sobel(g, cv2.CV_32F, 1, 0), cv2.Sobel(g, cv2.CV_32F, 0, 1))

    f, t = grad(frame), grad(template)
    # CCORR, not CCOEFF (which divides by ~0 on flat patches); and even CCORR_NORMED reports
    # values above 1 over nearly edgeless windows, so windows with little edge energy are ruled out.
    scores = cv2.matchTemplate(f, t, cv2.TM_CCORR_NORMED)
    energy = cv2.matchTemplate(f * f, np.ones_like(t), cv2.TM_CCORR)
    scores[energy < 0.25 * float((t * t).sum())] = 0.0
    return scores


def test_save_writes_the_row_and_shows_it(demo_app):
    app = demo_app()
    frames = tour(app, "ACME", "12.50")
    assert [(v, a) for _, v, a, _ in app.rows()] == [("ACME", 12.5)]
    saved = ocr(frames["saved"])
    assert {"Saved", "invoice", "#1", "ACME"} <= saved.keys()
    assert "ACME" in ocr(frames["list_after"])


def test_a_second_invoice_gets_the_next_number(demo_app):
    app = demo_app()
    tour(app, "ACME", "12.50")
    frames = tour(app, "Globex", "7")
    assert [(i, v, a) for i, v, a, _ in app.rows()] == [(1, "ACME", 12.5), (2, "Globex", 7.0)]
    assert "#2" in ocr(frames["saved"])
    assert frames["form"].tobytes() == tour(app)["form"].tobytes(), "the form must open empty every time"


def test_a_non_number_amount_shows_an_error_and_saves_nothing(demo_app):
    app = demo_app()
    before = settled_frame(app.xvnc)
    app.click(*app.center("list", "new"))
    app.wait_screen("form")
    form = settled_frame(app.xvnc, before)
    app.click(*app.center("form", "vendor"))
    app.type("ACME")
    app.click(*app.center("form", "amount"))
    app.type("twelve")
    filled = settled_frame(app.xvnc, form)
    app.click(*app.center("form", "save"))
    errored = settled_frame(app.xvnc, filled)
    assert {"Amount", "must", "number"} <= ocr(errored, app.box("form", "error")).keys()
    assert app.current_screen() == "form"
    assert app.rows() == []


def test_refute_save_claims_success_but_writes_nothing(demo_app):
    app = demo_app(refute_save=True)
    frames = tour(app)
    assert {"Saved", "ACME"} <= ocr(frames["saved"]).keys()
    assert app.rows() == []


def test_templates_match_the_normal_variant_where_they_were_cut(demo_app):
    frames = tour(demo_app())
    for name, screen in SCREEN_OF.items():
        template = load_template(name)
        found = peaks(match_scores(frames[screen], template), 0.8, (template.shape[1] // 2, template.shape[0] // 2))
        assert [(x, y) for _, x, y in found] == [tuple(TARGETS[name]["region"][:2])], name
        assert found[0][0] >= 0.999, name


def test_twin_variant_shows_two_equally_good_save_buttons(demo_app):
    frames = tour(demo_app(variant="twin"))
    save = load_template("save.png")
    found = peaks(match_scores(frames["form"], save), 0.9, (save.shape[1] // 2, save.shape[0] // 2))
    assert len(found) == 2, found
    rx, ry = TARGETS["save.png"]["region"][:2]
    (s1, x1, y1), (s2, x2, y2) = found
    assert abs(s1 - s2) < 0.01
    assert x1 == x2 == rx and abs(y1 - ry) == abs(y2 - ry) > 0, "equally far from the recorded spot"


def test_dark_variant_defeats_grayscale_correlation_but_not_edge_maps(demo_app):
    """Why the ladder needs an edge rung: inverted luminance sinks NCC, gradient magnitudes survive it."""
    frames = tour(demo_app(variant="dark"))
    for name, screen in SCREEN_OF.items():
        template = load_template(name)
        gray, _ = best(match_scores(frames[screen], template))
        assert gray < 0.6, f"{name}: grayscale correlation {gray:.2f} on the dark theme"
        edges = edge_scores(frames[screen], template)
        score, at = best(edges)
        assert at == tuple(TARGETS[name]["region"][:2]) and score >= 0.8, f"{name}: edge {score:.2f} at {at}"
        runner_up = peaks(edges, 0.0, (template.shape[1] // 2, template.shape[0] // 2))[1][0]
        assert score - runner_up >= 0.1, f"{name}: edge margin {score:.2f} vs {runner_up:.2f}"


def test_shifted_variant_moves_every_template_off_its_recorded_spot(demo_app):
    app = demo_app(variant="shifted")
    frames = tour(app)
    found = {}
    for name, screen in SCREEN_OF.items():
        template = load_template(name)
        scores = match_scores(frames[screen], template)
        score, (x, y) = best(scores)
        rx, ry = TARGETS[name]["region"][:2]
        assert score >= 0.99 and abs(x - rx) + abs(y - ry) >= 40, f"{name}: {score:.3f} at {(x, y)}"
        assert scores[ry, rx] < 0.5, f"{name} still matches at its recorded spot"
        found[name] = (x, y)
    # The bundle's identity box, placed at the Save point found on the shifted form, still covers the vendor.
    save = TARGETS["save.png"]
    click = (found["save.png"][0] + save["point"][0], found["save.png"][1] + save["point"][1])
    dx, dy, w, h = FLOW["steps"][3]["identity"]["near"]
    assert "ACME" in ocr(frames["filled"], (click[0] + dx, click[1] + dy, w, h))
    # A field found by its label (text_offset) lands inside the field, even though the field moved.
    label = ocr_box(frames["form"], "Vendor")
    ox, oy = TARGETS["vendor-field.png"]["text_offset"]
    ex, ey, ew, eh = app.box("form", "vendor")
    assert ex <= label[0] + ox < ex + ew and ey <= label[1] + oy < ey + eh


def ocr_box(frame: np.ndarray, word: str) -> tuple[int, int]:
    """Centre of the first OCR box reading exactly `word`."""
    data = pytesseract.image_to_data(
        cv2.cvtColor(frame, cv2.COLOR_BGR2RGB), config="--psm 11", output_type=pytesseract.Output.DICT
    )
    for i, text in enumerate(data["text"]):
        if text.strip() == word:
            return (data["left"][i] + data["width"][i] // 2, data["top"][i] + data["height"][i] // 2)
    raise AssertionError(f"OCR did not read {word!r}")


EXPECTED_WORDS = {
    "list": {"Invoices", "New", "invoice"},
    "form": {"New", "invoice", "Vendor", "Amount", "Save"},
    "filled": {"ACME"},
    "saved": {"Saved", "invoice", "ACME", "Back"},
    "list_after": {"Invoices", "ACME"},
}


@pytest.mark.parametrize("variant", ["normal", "shifted", "twin", "dark"])
def test_ocr_reads_every_label(demo_app, variant):
    frames = tour(demo_app(variant=variant))
    # On the dark theme Tesseract reads nothing on the raw full frame: the black desktop around the
    # window drags its global (Otsu) threshold below the window's dark grey. The app window alone,
    # or the full frame as distance from the local background, reads everything.
    dark = variant == "dark"
    for screen, words in EXPECTED_WORDS.items():
        read = ocr(frames[screen], local_contrast=dark)
        if dark:
            assert words <= ocr(frames[screen], APP_WINDOW).keys(), f"dark/{screen} in the window"
        low = {w: read.get(w) for w in words if read.get(w, -1.0) < 60}
        assert not low, f"{variant}/{screen}: missing or unsure {low}; read {read}"


def test_committed_bundle_is_valid_and_what_the_recorder_produces():
    bundle = Bundle.model_validate(FLOW)
    for step in bundle.steps:
        if step.target is not None and step.target.template is not None:
            crop = cv2.imread(str(BUNDLE_DIR / step.target.template))
            assert crop.shape[1::-1] == tuple(step.target.region[2:]), step.id
    out = subprocess.run(
        [sys.executable, "scripts/make_demo_bundle.py", "--check"], cwd=REPO, capture_output=True, text=True, timeout=50
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_stop_ends_the_app_process(demo_app):
    app = demo_app()
    app.stop()
    wait_until(lambda: app.proc.poll() is not None, 5, "the app to exit")
