"""A Java Swing referral form (one source file run by `java Form.java`, tests/realapps/apps/swingform): a patient
typed (a typo fixed with BackSpace) and a clinic, saved with the Save button, demonstrated once through
`flow record --watch-jsonl`, replayed unedited with other values and under drift. The system of record is the
JSON-lines file the form appends to, read after the app is stopped.

`--watch-jsonl` makes the Save step consequential without an effect (the compiler asks for it to be declared by
hand); the replays run the bundle unedited all the same and are judged by the file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openadapt_flow.demo.thirdparty import AppSpec, Drift, RunningApp, register
from openadapt_flow.demo.xvnc import wait_until
from tests.realapps.realapp_harness import Person, Recorded, check, judge, launch, record, replay

pytestmark = pytest.mark.timeout(300)

FORM = Path(__file__).parent / "apps" / "swingform" / "Form.java"


def _drift_args(home: Path, drift: Drift) -> list[str]:
    # Metal with dark UIManager colours; the scale as fonts (and the window) 25% bigger, since Linux's AWT takes
    # -Dsun.java2d.uiScale as a whole number (1.25 is 1: the window stays 380x170)
    return (["--dark"] if drift.dark else []) + (["--font-scale", f"{drift.scale:g}"] if drift.scale != 1.0 else [])


# the single-file source launcher's main class names the window's WM_CLASS
register(
    AppSpec(
        "swingform",
        ("java", str(FORM)),
        "com-sun-tools-javac-launcher-Main",
        "swing",
        lambda home, config, drift: None,
        drift_args=_drift_args,
    )
)

EXAMPLE = {"patient": "Maria Lopez", "clinic": "Harbor Pediatrics"}
LAST_CLINIC = "Northside"  # the dirty start: the form remembers the last clinic used
# places in the recorded layout (window 380x170 at 0,0 of a 1024x768 screen, scale 1)
HEADING, PATIENT, CLINIC, SAVE = (52, 11), (150, 36), (150, 63), (337, 147)


def read_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def start(out: Path, drift: Drift, dirty: bool = False) -> RunningApp:
    """The form, returned once Swing has painted it (it writes a file then) and the screen has settled: the JVM
    maps the window before the first paint, and start_app's settle alone could see the empty frame."""
    app = launch("swingform", [str(out), *(["--clinic", LAST_CLINIC] if dirty else [])], drift)
    try:
        wait_until(lambda: (app.home / "swingform-ready").exists() or not app.alive(), 60, "the form's first paint")
        assert app.alive(), app.log_path.read_text()[-2000:]
        app.settle()
    except BaseException:
        app.stop()
        raise
    return app


def demonstrate(p: Person) -> None:
    p.travel(200, 110, via=(HEADING,))  # into the window first
    p.click(*PATIENT, via=(SAVE, (300, 63)))  # over Save and the Clinic field on the way up
    p.type("Maria Lpoez\b\b\b\bopez")  # a typo fixed with BackSpace: Maria Lopez
    p.click(*CLINIC, via=((250, 110),))
    p.type("Harbor Pediatrics")
    p.click(*SAVE, via=((200, 120),))
    p.travel(600, 400)  # and away


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Recorded:
    out = tmp_path_factory.mktemp("swingform-recording")  # kept: pytest keeps the last sessions' folders
    sor = out / "referrals.jsonl"
    sor.write_text("")
    app = start(sor, Drift())
    try:
        rec = record(
            app,
            out,
            "referral-swing",
            demonstrate,
            ["--watch-jsonl", str(sor)],
            extra=[a for k, v in EXAMPLE.items() for a in ("--param", f"{k}={v}")],
        )
    finally:
        app.stop()
    assert read_lines(sor) == [EXAMPLE], f"the demonstration itself went wrong: {sor.read_text()!r}"
    return rec


def run_case(
    recorded: Recorded,
    tmp_path: Path,
    drift_name: str,
    drift: Drift,
    expectation: str,
    reason: str = "",
    dirty: bool = False,
) -> None:
    assert set(recorded.doc["params"]) == set(EXAMPLE), recorded.doc["params"]
    sor = tmp_path / "referrals.jsonl"
    sor.write_text("")
    want = {"patient": "Katherine Johnson", "clinic": "Westside Clinic"}
    app = start(sor, drift, dirty)
    try:
        code, report, out = replay(recorded.bundle, app, want, tmp_path / "run", tmp_path)
    finally:
        app.stop()
    lines = read_lines(sor)
    right = lines == [want]
    result = judge(
        "swingform",
        drift_name,
        code,
        report,
        right,
        lines == [],
        f"lines {lines}",
        wrong_click=not right and lines != [],
        expectation=expectation,
        reason=reason,
    )
    check(result)


def test_swingform_recording_saves_with_both_params(recorded):
    """The Save click is the one consequential step (its effect is left to be declared: --watch-jsonl says so)."""
    steps = recorded.doc["steps"]
    save = [s for s in steps if s.get("consequential")]
    assert len(save) == 1 and save[0]["action"] == "click", [s["id"] for s in steps]
    assert "declare its effect by hand" in recorded.log, recorded.log[-2000:]
    assert [s["text"] for s in steps if s["action"] == "type"] == ["{patient}", "{clinic}"]
    for s in steps:  # no template or fact built on a value the demonstration typed
        assert "Maria" not in str(s.get("expect", "")) and "Maria" not in str(s.get("target", "")), s


def test_swingform_replays_unedited_with_other_values(recorded, tmp_path):
    run_case(recorded, tmp_path, "other values", Drift(), "complete")


@pytest.mark.corpus_full
@pytest.mark.parametrize(
    "drift_name,drift",
    [
        ("window moved", Drift(position=(180, 140))),
        ("dark theme", Drift(dark=True)),  # Metal with dark UIManager colours
        ("scale 1.25", Drift(scale=1.25)),  # every UIManager font 25% bigger, the window with them
    ],
)
def test_swingform_replay_under_drift(recorded, tmp_path, drift_name, drift):
    run_case(recorded, tmp_path, drift_name, drift, "complete")


@pytest.mark.corpus_full
def test_swingform_dirty_start_replaces_the_remembered_clinic(recorded, tmp_path):
    """Clinic comes up holding the last clinic used: the replay's End, Shift+Home selects it and the new clinic
    replaces it, so the line is exactly the new one."""
    run_case(recorded, tmp_path, "dirty start (Clinic prefilled)", Drift(), "complete", dirty=True)
