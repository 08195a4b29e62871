"""The bundle compiled from a real galculator demonstration (12 × 34 =, tests/data/galculator) replayed unedited on
a real galculator: from a clean start it completes; started dirty ("5 +", which ends at 413) it halts on the
result the compiler chose to check, never exits 0 with a wrong result."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from openadapt_flow.backends.factory import open_backend
from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.demo.xvnc import start_xvnc, wait_until
from openadapt_flow.fixture.gestures import Gesture
from openadapt_flow.fixture.recorder import Batch, Recording
from openadapt_flow.record.compile import compile_bundle
from openadapt_flow.runtime.act.settle import settle
from tests.support.cli import flow_env, run_flow

pytestmark = pytest.mark.timeout(240)  # galculator comes from the Makefile's APT_PKGS
DATA = Path(__file__).resolve().parents[1] / "data" / "galculator"
FIVE, PLUS, AC = (100, 239), (230, 319), (242, 113)


def frame(name: str) -> np.ndarray:
    return np.array(Image.open(DATA / f"{name}.png").convert("RGB"))


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    clicks = json.loads((DATA / "clicks.json").read_text())
    batches = [
        Batch(
            before=frame(f"clean-{i}"),
            lead=[Gesture("press", x, y, key="click"), Gesture("click", x, y)],
            after=frame(f"clean-{i + 1}"),
        )
        for i, (_, x, y) in enumerate(clicks)
    ]
    rec = Recording(url="vnc://h:1", settle_s=0.5, initial=frame("clean-0"), batches=batches)
    return compile_bundle(rec, tmp_path_factory.mktemp("galc") / "bundle", "galc").path


@pytest.fixture()
def galculator(tmp_path):
    server = start_xvnc(800, 600)
    env = server.env | {"HOME": str(tmp_path / "home")}
    os.makedirs(env["HOME"])
    app = subprocess.Popen(["galculator"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(
            lambda: subprocess.run(
                ["xdotool", "search", "--onlyvisible", "--class", "galculator"], env=env, capture_output=True
            ).stdout.strip(),
            30,
            "galculator's window",
        )
        yield server
    finally:
        app.kill()
        app.wait(timeout=10)
        server.stop()


def click_and_settle(url_port: int, *points: tuple[int, int]) -> None:
    b = open_backend(BackendSpec(kind="vnc", host="127.0.0.1", port=url_port))
    try:
        for x, y in points:
            b.click(x, y)
            settle(b, 0.5, 10, expect_change_s=1.0)
    finally:
        b.close()


def replay(tmp_path: Path, bundle: Path, url: str) -> tuple[subprocess.CompletedProcess, dict]:
    r = run_flow(
        ["replay", str(bundle), "--url", url, "--run-dir", str(tmp_path / "run"), "--json"],
        tmp_path,
        env=flow_env(tmp_path),
        timeout=180,
    )
    return r, json.loads(r.stdout)


def test_the_recorded_calculation_replays_from_a_clean_start(tmp_path, bundle, galculator) -> None:
    r, out = replay(tmp_path, bundle, galculator.url)
    assert (r.returncode, out["state"]) == (0, "COMPLETED"), r.stdout + r.stderr


def test_a_dirty_start_halts_on_the_result_instead_of_completing(tmp_path, bundle, galculator) -> None:
    click_and_settle(galculator.port, FIVE, PLUS)  # the calculator shows "5 +": the same clicks end at 413
    r, out = replay(tmp_path, bundle, galculator.url)
    assert r.returncode != 0 and out["state"] != "COMPLETED", r.stdout
    assert out["category"] == "postcondition" and "408" in out["message"], out
