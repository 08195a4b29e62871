"""The recorder end to end: the demo app on a real Xvnc, `flow fixture record` as the proxy, our VncBackend
as a scripted viewer (scripts/record_demo_fixture.py); then the recorded fixture is replayed with the same
inputs and its frames compared with what the viewer saw on the live app."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from openadapt_flow.backends.fixture import FixtureBackend
from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.fixture.model import load_fixture
from tests.support.cli import REPO, flow_env, load_script

pytestmark = pytest.mark.timeout(150)
SCRIPT = REPO / "scripts" / "record_demo_fixture.py"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rec")
    r = subprocess.run(
        [sys.executable, str(SCRIPT), "--variant", "normal", "--out", str(tmp / "fx"), "--frames", str(tmp / "frames")],
        cwd=tmp,
        env=flow_env(tmp),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    return tmp / "fx", tmp / "frames", r


def test_recording_makes_states_transitions_fields_and_the_effect(recorded):
    fx, _, run = recorded
    m = load_fixture(fx).model
    assert "4 states, 4 transitions, 2 live fields from 6 inputs" in run.stdout
    assert [(t.from_, t.to) for t in m.transitions] == [("s1", "s2"), ("s2", "s3"), ("s3", "s4"), ("s4", "s2")]
    form = m.states["s2"]
    assert [f.name for f in form.fields] == ["vendor", "amount"]  # named after the columns they filled
    effect = m.transitions[1].effect
    assert effect is not None and effect.insert is not None
    assert effect.insert.values == {"vendor": "{vendor}", "amount": "{amount}", "created_at": "{now}"}
    assert "warning" not in run.stderr


def test_replaying_the_recording_reproduces_the_live_frames(recorded):
    fx, frames, _ = recorded
    script = load_script("record_demo_fixture")
    fixture = load_fixture(fx)
    field_boxes = [f.box for f in fixture.fields("s2")]
    backend = FixtureBackend(BackendSpec(kind="fixture", path=str(fx)))
    live = np.asarray(Image.open(frames / "00-initial.png").convert("RGB"))
    assert np.array_equal(backend.capture().pixels, live)
    for i, (name, action, x, y, text) in enumerate(script.STEPS, 1):
        script.perform(backend, action, x, y, text)
        live = np.asarray(Image.open(frames / f"{i:02d}-{name}.png").convert("RGB"))
        got = backend.capture().pixels
        diff = np.any(got != live, axis=2)
        if action != "type":
            assert not diff.any(), f"{name}: {int(diff.sum())} pixels differ from the live app"
            continue
        # typed text is drawn by us, not recorded: it may differ a little, and only inside the fields
        for bx, by, bw, bh in field_boxes:
            diff[by : by + bh, bx : bx + bw] = False
        assert not diff.any(), f"{name}: pixels outside the fields differ"
        fx0, fy0, fw, fh = next(b for b in field_boxes if b[0] <= x < b[0] + b[2] and b[1] <= y < b[1] + b[3])
        a = got[fy0 : fy0 + fh, fx0 : fx0 + fw].astype(int)
        b = live[fy0 : fy0 + fh, fx0 : fx0 + fw].astype(int)
        # glyph hinting differs between Tk's Xft and Pillow, so pixels differ at glyph edges (measured: mean
        # 4 of 255); where the text sits and how far it runs must agree
        assert np.abs(a - b).mean() < 8, f"{name}: the drawn text strays from the app's"
        assert np.allclose(ink_extent(a), ink_extent(b), atol=2), (name, ink_extent(a), ink_extent(b))


def ink_extent(field: np.ndarray) -> tuple[int, int, int, int]:
    """Left, top, right, bottom of everything not the field's background colour."""
    bg = field[0, 0]
    ys, xs = np.nonzero(np.abs(field - bg).max(axis=2) > 64)
    return int(xs.min()), int(ys.min()), int(xs.max()), int(ys.max())
