"""The report's pieces on hand-made records: candidates from a halt's evidence, the next commands for each kind of
stop, running time without the pauses, the chart and the marks."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from openadapt_flow.report.figures import Marks, overlay, png_size, step_chart, thumbnail
from openadapt_flow.report.halt import candidates, next_commands
from openadapt_flow.report.page import render_html
from openadapt_flow.report.summary import running_seconds, summarize

pytestmark = pytest.mark.timeout(30)


def test_one_widget_seen_by_several_rungs_is_one_candidate_and_letters_follow_reading_order():
    evidence = [
        {
            "rung": "template",
            "verdict": "ambiguous",
            "box": [40, 150, 180, 44],
            "score": 0.99,
            "candidates": [
                {"box": [40, 150, 180, 44], "score": 0.99, "point": [130, 172]},
                {"box": [40, 90, 180, 44], "score": 0.98, "point": [130, 112]},
            ],
        },
        {
            "rung": "ocr",
            "verdict": "ambiguous",
            "box": [71, 104, 119, 15],
            "score": 1.0,
            "candidates": [
                {"box": [71, 104, 119, 15], "score": 1.0, "point": [130, 111]},
                {"box": [71, 164, 119, 15], "score": 0.97, "point": [130, 171]},
            ],
        },
        {"rung": "template-edges", "verdict": "miss", "box": [600, 20, 50, 20], "score": 0.4},
        {"rung": "model", "verdict": "skipped"},
    ]
    out = candidates(evidence)
    assert [(c["label"], c["box"], c["point"], c["scores"]) for c in out] == [
        ("A", [600, 20, 50, 20], [625, 30], {"template-edges": 0.4}),  # a miss's best box: centre, no click recorded
        ("B", [40, 90, 180, 44], [130, 112], {"template": 0.98, "ocr": 1.0}),
        ("C", [40, 150, 180, 44], [130, 172], {"template": 0.99, "ocr": 0.97}),
    ]
    assert candidates([]) == [] and candidates([{"rung": "ocr", "verdict": "miss"}]) == []


def _rep(state: str, **kw):
    return {"state": state, "halt": None, "escalation": None, "decisions": [], **kw}


MANIFEST = {
    "bundle": {"path": "/b/flow one"},
    "params": {"vendor": "O'Neil", "pw": {"secret_env": "PW"}},
    "backend": {"kind": "vnc", "host": "10.0.0.5", "port": 5901},
}


@pytest.mark.parametrize(
    ("rep", "expected"),
    [
        (_rep("COMPLETED"), []),
        (_rep("BLOCKED"), []),
        (
            _rep("INTERRUPTED"),
            ["flow replay '/b/flow one' --durable --param 'vendor=O'\"'\"'Neil' --url vnc://10.0.0.5:5901"],
        ),
        (
            _rep("FAILED", halt={"step": "s"}),
            ["flow replay '/b/flow one' --durable --param 'vendor=O'\"'\"'Neil' --url vnc://10.0.0.5:5901"],
        ),
        (_rep("PAUSED", escalation={"paused_reason": "awaiting_user"}), ["flow answer runs/r1 VALUE"]),
        (_rep("PAUSED", escalation={"paused_reason": "awaiting_signal"}), ["flow signal runs/r1 NAME"]),
        (
            _rep(
                "PAUSED",
                escalation={
                    "paused_reason": "awaiting_approval",
                    "allowed_decisions": ["continue", "reject", "reconcile"],
                },
            ),
            [
                'flow approve runs/r1 --decision continue --operator "$USER"',
                'flow approve runs/r1 --decision reject --operator "$USER"',
                'flow approve runs/r1 --decision reconcile --effect landed --operator "$USER"',
                'flow approve runs/r1 --decision reconcile --effect absent --operator "$USER"',
                "flow resume runs/r1 --require-approval",
            ],
        ),
        (
            _rep(
                "PAUSED",
                escalation={"paused_reason": "awaiting_approval", "allowed_decisions": ["continue"]},
                decisions=[{"decision": "continue", "unused": True}],
            ),
            ["flow resume runs/r1 --require-approval"],
        ),
    ],
)
def test_the_next_commands_follow_from_how_the_run_stopped(rep, expected):
    assert next_commands("runs/r1", rep, MANIFEST) == expected


def test_a_durable_run_that_was_interrupted_resumes():
    assert next_commands("runs/r1", _rep("INTERRUPTED"), {**MANIFEST, "durable": True}) == ["flow resume runs/r1"]


def test_a_secret_param_never_reaches_the_replay_command():
    cmd = next_commands("r", _rep("FAILED", halt={"step": "s"}), MANIFEST)[0]
    assert "pw" not in cmd and "PW" not in cmd


def test_running_time_leaves_out_the_pauses():
    recs = [
        {"type": "run_started", "ts": "2026-12-01T10:00:00.000Z"},
        {"type": "paused", "ts": "2026-12-01T10:00:02.500Z"},
        {"type": "run_resumed", "ts": "2026-12-01T11:00:00.000Z"},
        {"type": "step_verified", "ts": "2026-12-01T11:00:01.000Z"},
        {"type": "run_finished", "ts": "2026-12-01T11:00:01.250Z"},
    ]
    assert running_seconds(recs) == 3.75
    assert running_seconds(recs[:2] + recs[2:4]) == 3.5  # a segment with no stop yet ends at the last record
    assert running_seconds([]) is None


def test_the_summary_counts_steps_by_result():
    rows = [
        {"id": "a", "status": "verified", "verification": "strong", "elapsed_ms": 10.0},
        {"id": "b", "status": "verified", "verification": "weak", "elapsed_ms": 20.0},
        {
            "id": "c",
            "status": "halted",
            "started_at": "2026-12-01T10:00:00.000Z",
            "halted_at": "2026-12-01T10:00:00.300Z",
        },
        {"id": "d", "status": "not_run"},
    ]
    s = summarize("FAILED", rows, [])
    assert {k: s[k] for k in ("exit_code", "verified", "weak", "halted", "not_run", "steps_total")} == {
        "exit_code": 1,
        "verified": 1,
        "weak": 1,
        "halted": 1,
        "not_run": 1,
        "steps_total": 4,
    }
    assert [(t["id"], t["ms"]) for t in s["step_ms"]] == [("a", 10.0), ("b", 20.0), ("c", 300.0)]
    chart = step_chart(s["step_ms"])
    assert chart.count('<rect class="bar"') == 3 and "c: 300 ms (halted)" in chart


def test_thumbnails_are_smaller_copies_and_marks_keep_their_screen_size():
    ok, png = cv2.imencode(".png", np.full((300, 400, 3), 200, np.uint8))
    small = thumbnail(png.tobytes(), 100)
    assert small is not None and png_size(small) == (100, 75) and png_size(png.tobytes()) == (400, 300)
    assert thumbnail(b"not a png", 100) is None
    wide = overlay(Marks(points=[[10, 10]]), 4.0, "t")
    narrow = overlay(Marks(points=[[10, 10]]), 1.0, "t")
    assert 'r="14"' in wide and 'r="3.5"' in narrow  # 3.5 screen px either way


class NoFrames:
    ref = "runs/r1"

    def get_artifact(self, rel: str) -> bytes | None:
        return None


def page_of(state: str, **kw) -> str:
    rows = [
        {"id": "a", "status": "verified", "verification": "strong", "elapsed_ms": 5.0},
        {"id": "b", "status": "skipped"},
        {"id": "c", "status": "verified", "elapsed_ms": 7.0},
    ]
    rep = {
        "run_id": "run-1",
        "state": state,
        "bundle": {"name": "b"},
        "backend": None,
        "steps": rows,
        "summary": summarize(state, rows, []),
        "next_commands": [],
        **kw,
    }
    return render_html(NoFrames(), rep)  # type: ignore[arg-type]


def test_a_halt_the_run_went_on_from_is_an_earlier_halt_and_skips_are_counted():
    halt = {
        "step": "b",
        "category": "ambiguous",
        "message": "m",
        "candidates": [{"label": "A", "box": [1, 2, 3, 4], "point": [2, 4], "scores": {"template": 0.9}}],
    }
    done = page_of("COMPLETED", halt=halt)
    assert "Earlier halt at step b" in done and "<section id='halt' class='earlier'>" in done
    assert "Halted at step b" in page_of("PAUSED", halt=halt)
    assert 'data-summary="skipped">1<' in done and 'data-summary="verified">2<' in done


def _png(img: np.ndarray) -> bytes:
    return cv2.imencode(".png", img)[1].tobytes()


def _desktop_with_app(noise_edge: bool = False) -> np.ndarray:
    """A 1024x768 black desktop with a grey 'app' at (300, 200, 400, 300) holding a dark label; optionally a
    wallpaper (random pixels) instead of the flat desktop."""
    rng = np.random.default_rng(7)
    img = rng.integers(0, 255, (768, 1024, 3), dtype=np.uint8) if noise_edge else np.zeros((768, 1024, 3), np.uint8)
    img[200:500, 300:700] = 200
    img[240:260, 320:420] = 30
    return img


def _view_box(svg: str) -> list[int]:
    import re

    return [int(v) for v in re.search(r'viewBox="([-\d ]+)"', svg).group(1).split()]


def test_a_frame_on_a_flat_desktop_is_shown_cut_to_the_app_and_marks_stay_in_frame_pixels():
    from openadapt_flow.report.figures import APP_PAD, app_region, framed

    png = _png(_desktop_with_app())
    assert app_region(png) == (300 - APP_PAD, 200 - APP_PAD, 400 + 2 * APP_PAD, 300 + 2 * APP_PAD)
    svg = framed(
        png, "frames/001-a-before.png", Marks(boxes=[([320, 240, 100, 20], "#00f")]), width=640, cls="t", alt="a"
    )
    assert _view_box(svg) == [292, 192, 416, 316]
    assert '<rect x="320" y="240" width="100" height="20"' in svg  # the mark in the frame's own pixels
    embedded = cv2.imdecode(
        np.frombuffer(__import__("base64").b64decode(svg.split("base64,")[1].split('"')[0]), np.uint8), cv2.IMREAD_COLOR
    )
    assert embedded.shape[:2] == (316, 416)  # the embedded copy is the cut, at full resolution (416 < 640)
    # a candidate the ladder weighed outside the app widens the cut so it is never hidden
    wide = framed(png, "f.png", Marks(dashed=[([40, 600, 60, 20], "#f70")]), width=640, cls="t", alt="a")
    assert _view_box(wide) == [32, 192, 676, 436]


def test_an_app_at_the_screens_corner_is_cut_out_of_the_bare_desktop_beside_it():
    """The demo app on Xvnc sits at (0, 0) with 39 % of the frame black beside and below it: its own pixels are part
    of the frame's edge, and the desktop still holds most of that edge."""
    from openadapt_flow.report.figures import APP_PAD, app_region

    img = np.zeros((768, 1024, 3), np.uint8)
    img[0:560, 0:640] = 200
    img[100:120, 40:200] = 30
    assert app_region(_png(img)) == (0, 0, 640 + APP_PAD, 560 + APP_PAD)


def test_a_frame_without_a_flat_desktop_around_the_app_is_shown_whole():
    from openadapt_flow.report.figures import app_region, framed

    png = _png(_desktop_with_app(noise_edge=True))
    assert app_region(png) is None
    assert _view_box(framed(png, "f.png", Marks(), width=640, cls="t", alt="a")) == [0, 0, 1024, 768]
    # an app filling the screen with a flat margin: cut to what it holds, and all that is cut away is that margin
    full = np.full((768, 1024, 3), 200, np.uint8)
    full[300:320, 400:500] = 30
    x, y, w, h = app_region(_png(full))
    outside = full.copy()
    outside[y : y + h, x : x + w] = 200
    assert (x, y, w, h) == (392, 292, 116, 36) and (outside == 200).all()
