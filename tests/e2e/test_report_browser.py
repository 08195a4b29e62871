"""report.html in a real browser: headless Chromium opens it from a file:// URL (offline, no script) and screenshots
it; the screenshots show the summary first, the matched box and click on each step's frame, and on an ambiguous halt
both look-alikes marked alike, each with its score, at the places the engine weighed them.

The runs are real: the demo bundle replayed in process on its recorded fixture, healthy and with a twin button.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import cv2
import numpy as np
import pytest

from openadapt_flow.report.figures import BOX, CANDIDATE, CLICK, HALT_W, STATUS_COLOURS, STEP_W, Marks, shown_region
from openadapt_flow.report.model import build_report
from openadapt_flow.report.page import render_html
from openadapt_flow.store import RunDir
from tests.unit.report.report_runs import BUTTON, TWIN_AT, ambiguous_run, healthy_run, run_env

pytestmark = pytest.mark.timeout(240)

WIDTH = 1280


def chromium() -> str:
    exe = shutil.which("chromium")
    assert exe, "headless Chromium is needed: apt-get install chromium (make test installs it: APT_PKGS)"
    return exe


def browse(page: Path, tmp_path: Path, height: int = 2000, dump: bool = False) -> tuple[np.ndarray, str]:
    """Screenshot `page` at WIDTH x height (and its DOM as the browser parsed it, when asked)."""
    shot = tmp_path / f"{page.parent.name}-{page.stem}.png"
    args = [
        chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--force-device-scale-factor=1",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
        f"--window-size={WIDTH},{height}",
    ]
    r = subprocess.run([*args, f"--screenshot={shot}", page.as_uri()], capture_output=True, text=True, timeout=90)
    assert r.returncode == 0 and shot.is_file(), r.stderr[-2000:]
    img = cv2.imread(str(shot))[..., ::-1]  # RGB
    dom = (
        subprocess.run([*args, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=90).stdout
        if dump
        else ""
    )
    return img, dom


def rgb(hex_colour: str) -> np.ndarray:
    return np.array([int(hex_colour[i : i + 2], 16) for i in (1, 3, 5)])


def near(img: np.ndarray, colour: str, tol: int = 40) -> np.ndarray:
    return np.abs(img.astype(int) - rgb(colour)).sum(axis=2) <= tol


def as_drawn(path: Path, marks: Marks) -> tuple[np.ndarray, int, int]:
    """A frame as the report draws it: cut to the region it shows (the app's, grown to hold the marks), and that
    region's place in the frame; marks are frame pixels, so minus the place on the drawn picture."""
    frame = cv2.imread(str(path))[..., ::-1]
    x, y, w, h = shown_region(path.read_bytes(), (frame.shape[1], frame.shape[0]), marks)
    return frame[y : y + h, x : x + w], x, y


def assert_not_blank(img: np.ndarray) -> None:
    assert img.shape[1] == WIDTH and len(np.unique(img.reshape(-1, 3), axis=0)) > 50, "a blank screenshot"


def test_a_healthy_run_shows_its_summary_and_where_each_step_clicked(tmp_path, monkeypatch):
    run_env(tmp_path, monkeypatch)
    out = healthy_run(tmp_path)
    img, dom = browse(Path(out.run_dir) / "report.html", tmp_path, dump=True)
    assert_not_blank(img)
    top = img[:400]  # the summary comes first: its verified card and the chart's green bars are on the first screen
    assert near(top, STATUS_COLOURS["verified"]).sum() > 2000
    assert 'data-summary="verified">5<' in dom and 'data-summary="outcome">COMPLETED<' in dom
    rep = json.loads((Path(out.run_dir) / "report.json").read_text())
    below = 300
    for step in rep[
        "steps"
    ]:  # each before-frame carries the matched box (blue) and the click (magenta) where they were
        marks = Marks(boxes=[(step["box"], BOX)], points=[step["point"]])
        frame, rx, ry = as_drawn(Path(out.run_dir) / step["frames"]["before"], marks)
        ox, oy, s = find_thumbnail(img, frame, STEP_W, below)
        below = oy + 20
        thumb = img[oy : oy + round(frame.shape[0] * s), ox : ox + STEP_W]
        bx, by, bw, bh = step["box"]
        x, y, w, h = (round(v * s) for v in (bx - rx, by - ry, bw, bh))
        outline = np.zeros(thumb.shape[:2], np.uint8)
        cv2.rectangle(outline, (x, y), (x + w, y + h), 1, 5)  # the box's edges, give or take 2 px
        blue = near(thumb, BOX, 60)
        assert (blue & (outline > 0)).sum() >= 8 and (blue & (outline == 0)).sum() <= 3, (
            f"{step['id']}: box not at {step['box']}"
        )
        ys, xs = np.where(near(thumb, CLICK, 60))
        cx, cy = round((step["point"][0] - rx) * s), round((step["point"][1] - ry) * s)
        assert len(xs) > 10 and abs(xs.mean() - cx) <= 2 and abs(ys.mean() - cy) <= 2, (
            f"{step['id']}: click not at {step['point']}"
        )


def find_thumbnail(img: np.ndarray, frame: np.ndarray, width: int, below: int = 0) -> tuple[int, int, float]:
    """Where a frame's thumbnail sits on the screenshot, below y=`below`, and its scale. Screens of one run look alike
    at thumbnail size (a step's before-frame is the previous step's after-frame): the topmost good match in the
    leftmost column of them (a row's before-frame comes first) is the one."""
    scale = width / frame.shape[1]
    small = cv2.resize(frame, (width, round(frame.shape[0] * scale)), interpolation=cv2.INTER_AREA)
    res = cv2.matchTemplate(
        cv2.cvtColor(img[below:], cv2.COLOR_RGB2GRAY), cv2.cvtColor(small, cv2.COLOR_RGB2GRAY), cv2.TM_CCOEFF_NORMED
    )
    assert res.max() > 0.8, f"the frame is not on the page (best match {res.max():.2f})"
    good = res >= max(0.8, res.max() - 0.1)
    left = int(np.where(good)[1].min())
    top = int(np.where(good[:, left : left + width // 2])[0].min())
    window = res[top : top + 8, left : left + width // 2]
    y, x = np.unravel_index(int(np.argmax(window)), window.shape)
    return left + int(x), below + top + int(y), scale


def test_an_ambiguous_halt_marks_both_look_alikes_with_scores_and_prints_the_next_commands(tmp_path, monkeypatch):
    run_env(tmp_path, monkeypatch)
    out = ambiguous_run(tmp_path)
    run_dir = Path(out.run_dir)
    img, dom = browse(run_dir / "report.html", tmp_path, dump=True)
    assert_not_blank(img)
    assert 'data-summary="halted">1<' in dom and 'data-summary="outcome">PAUSED<' in dom
    assert f"--decision teach --point {BUTTON[0] + 90},{BUTTON[1] + 22}" in dom
    assert f"--decision teach --point {TWIN_AT[0] + 90},{TWIN_AT[1] + 22}" in dom
    halt = json.loads((run_dir / "report.json").read_text())["halt"]
    raw, rx, ry = as_drawn(
        run_dir / "frames/halt-open-form-raw.png", Marks(dashed=[(c["box"], CANDIDATE) for c in halt["candidates"]])
    )
    s = HALT_W / raw.shape[1]
    small = cv2.resize(raw, (HALT_W, round(raw.shape[0] * s)), interpolation=cv2.INTER_AREA)
    res = cv2.matchTemplate(
        cv2.cvtColor(img, cv2.COLOR_RGB2GRAY), cv2.cvtColor(small, cv2.COLOR_RGB2GRAY), cv2.TM_CCOEFF_NORMED
    )
    _, best, _, (ox, oy) = cv2.minMaxLoc(res)
    assert best > 0.8, f"the halt frame is not on the page (best match {best:.2f})"
    orange = near(img, CANDIDATE)
    for bx, by in (BUTTON[:2], TWIN_AT):  # both candidates, drawn alike: a dashed orange box on the bottom edge
        bx, by = bx - rx, by - ry  # frame pixels to the drawn region's
        y = oy + round((by + BUTTON[3]) * s)
        xs = slice(ox + round(bx * s) + 2, ox + round((bx + BUTTON[2]) * s) - 2)
        edge = orange[y - 2 : y + 3, xs].any(axis=0)
        assert edge.mean() > 0.4, f"candidate at {bx},{by}: {edge.mean():.2f} of its bottom edge is marked"
        right, middle = ox + round((bx + BUTTON[2]) * s), oy + round((by + BUTTON[3] / 2) * s)
        label = orange[middle - 5 : middle + 5, right + 6 : right + 40]
        assert label.mean() > 0.4, f"candidate at {bx},{by}: no score label beside it"
    picture = img[oy : oy + round(raw.shape[0] * s), ox : ox + HALT_W]
    assert near(picture, "#e61e1e", 60).sum() == 0  # no candidate is marked as the answer (no red "best" box)


def test_fifty_steps_stay_a_short_page(tmp_path, monkeypatch):
    run_env(tmp_path, monkeypatch)
    run = RunDir(Path(healthy_run(tmp_path).run_dir))
    rep = build_report(run)
    rep["steps"] = [dict(r, id=f"{r['id']}-{i}") for i in range(10) for r in rep["steps"]]
    page = Path(run.ref) / "report-50.html"
    page.write_text(render_html(run, rep))
    img, dom = browse(page, tmp_path, height=9000, dump=True)
    assert dom.count('id="step-') == 50
    ink = np.where((img < 240).any(axis=2).any(axis=1))[0]
    assert ink.max() < 6500, f"a 50-step report is {ink.max()} px long"
    assert ink.max() > 2000  # and its rows are all there
