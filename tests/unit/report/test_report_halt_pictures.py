"""Issue 35, finding 7: a halt names its target by its text and the step's intent, never by a template's file name
(`templates/01.png not found` told an operator nothing), and REPORT.md, report.html and the console's run page show
the template sought beside the best candidate's crop."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import cv2
import numpy as np
import pytest
import yaml
from PIL import Image
from starlette.testclient import TestClient

import openadapt_flow.console.app as console_app
from openadapt_flow.backends.spec import parse_url
from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.bundle.models import Step, Target
from openadapt_flow.console.views import halt_figure
from openadapt_flow.ladder.ladder import failure_message
from openadapt_flow.ladder.types import Evidence
from openadapt_flow.records.models import Check
from openadapt_flow.report.model import halt_view
from openadapt_flow.report.render import write_reports
from openadapt_flow.runtime.act.halt_pictures import save_halt_pictures
from openadapt_flow.runtime.act.step import _failed
from openadapt_flow.runtime.judge.halt import Halt
from openadapt_flow.runtime.operate.operators import add_operator
from openadapt_flow.runtime.runs import replay
from openadapt_flow.runtime.start.launch import ReplayRequest
from openadapt_flow.store import FilesystemStore, RunDir
from openadapt_flow.store.frames import FrameWriter
from openadapt_flow.vision.template import TemplateImage
from tests.support.demo_invoices import BUNDLE, FIXTURES
from tests.unit.report.report_runs import BUTTON, PARAMS, run_env

pytestmark = pytest.mark.timeout(120)
INTENT = "Open the new-invoice form"


def test_a_not_found_message_names_the_target_by_its_text_and_intent_never_its_file() -> None:
    seen = [Evidence("template", "miss", 1.0, score=0.62, detail="best 0.62 below 0.85; content 0.40")]
    bare = failure_message(
        Target(template="templates/01.png", region=(0, 0, 9, 9)), seen, "resolution", "Type the patient"
    )
    assert "templates/01.png" not in bare and "'Type the patient'" in bare and "not found" in bare, bare
    named = failure_message(
        Target(template="templates/01.png", region=(0, 0, 9, 9), text="Save"), seen, "resolution", "Save the note"
    )
    assert named.startswith('target "Save" for \'Save the note\' not found') and "01.png" not in named, named


def test_a_picture_fact_that_failed_says_what_it_is_not_its_file() -> None:
    step = Step.model_validate({"id": "enter", "intent": "Press Enter", "action": "key", "keys": ["enter"]})
    got = _failed(Check("template_present", "templates/03.png", False, "best score 0.412", {"at": [1, 2, 3, 4]}), step)
    assert "templates/" not in got and "'Press Enter'" in got and "0.412" in got, got


def _bundle_without_text(root: Path) -> Path:
    shutil.copytree(BUNDLE, root)
    doc = yaml.safe_load((root / "flow.yaml").read_text())
    del doc["steps"][0]["target"]["text"]  # a target found by its picture only, as a recorded icon is
    (root / "flow.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return root


def _changed_button(root: Path) -> Path:
    shutil.copytree(FIXTURES / "normal", root)
    img = cv2.imread(str(root / "screens/s1.png"))
    x, y, w, h = BUTTON
    img[y : y + h, x : x + w] = img[y : y + h, x : x + w][:, ::-1]  # the button drawn mirrored: not the one recorded
    cv2.imwrite(str(root / "screens/s1.png"), img)
    return root


@pytest.fixture(scope="module")
def halted(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("pictures")
    mp = pytest.MonkeyPatch()
    run_env(tmp, mp)
    try:
        cfg = DeployConfig.model_validate(
            {"schema": "openadapt-flow/config@1", "runtime": {"runs_root": str(tmp / "runs")}}
        )
        req = ReplayRequest(
            bundle=_bundle_without_text(tmp / "bundle"),
            params=PARAMS,
            backend=parse_url(f"fixture:{_changed_button(tmp / 'fixture')}"),
            config=cfg,
            run_dir=tmp / "runs" / "halted",
            durable=True,
        )
        out = replay(req, reporter=write_reports)
    finally:
        mp.undo()
    assert (out.state, out.category) == ("PAUSED", "resolution"), out.message
    return out, tmp


def test_the_halt_message_names_the_step_intent_not_the_template_file(halted) -> None:
    out, _ = halted
    assert "templates/" not in out.message and ".png" not in out.message and INTENT in out.message, out.message


def test_the_report_shows_the_template_sought_beside_the_best_candidate(halted) -> None:
    out, tmp = halted
    run_dir = Path(out.run_dir)
    sought = np.asarray(Image.open(run_dir / "frames/halt-open-form-template.png").convert("RGB"))
    recorded = np.asarray(Image.open(tmp / "bundle/templates/new-invoice.png").convert("RGB"))
    assert np.array_equal(sought, recorded)
    best = np.asarray(Image.open(run_dir / "frames/halt-open-form-best.png").convert("RGB"))
    (bh, bw), (rh, rw) = best.shape[:2], recorded.shape[:2]  # the crop it was weighed best at (at some scale)
    assert bh > 0 and abs(bw / bh - rw / rh) < 0.1 * rw / rh
    page = (run_dir / "report.html").read_text()
    pair = page[page.index("<div class='pair'>") :]
    assert (
        pair.count("data:image/png;base64,") >= 2
        and "sought: the picture recorded" in pair
        and "best candidate" in pair
    )
    md = (run_dir / "REPORT.md").read_text()
    assert "(frames/halt-open-form-template.png)" in md and "(frames/halt-open-form-best.png)" in md
    assert "templates/new-invoice.png" not in md and INTENT in md


def test_the_console_run_page_shows_the_same_pair(halted) -> None:
    out, _ = halted
    run = RunDir(Path(out.run_dir))
    halt = halt_view(run)
    assert halt is not None
    fig = halt_figure("r1", halt, run.get_artifact(str(halt["show_frame"])))
    assert fig is not None
    assert fig["pair"] == {
        "template": "/frame/r1?rel=frames/halt-open-form-template.png",
        "best": "/frame/r1?rel=frames/halt-open-form-best.png",
    }


def test_the_console_page_shows_the_pair_and_serves_both_pictures(halted) -> None:
    out, tmp = halted
    store = FilesystemStore(tmp / "runs")
    cred = add_operator(store, "alice")
    client = TestClient(console_app.create_app(store, report_grace_s=0.0), base_url="http://127.0.0.1")
    csrf = re.search(r'name="csrf" value="([^"]*)"', client.get("/login").text)
    assert csrf is not None
    client.post("/login", data={"csrf": csrf.group(1), "name": "alice", "credential": cred}, follow_redirects=False)
    run_id = RunDir(Path(out.run_dir)).manifest()["run_id"]
    page = client.get(f"/runs/{run_id}").text
    assert 'id="halt-pair"' in page and "sought: the picture recorded" in page and INTENT in page
    for rel in ("frames/halt-open-form-template.png", "frames/halt-open-form-best.png"):
        assert f"/frame/{run_id}?rel={rel}" in page
        got = client.get(f"/frame/{run_id}", params={"rel": rel})
        assert got.status_code == 200 and got.content.startswith(b"\x89PNG")


def test_the_best_candidate_is_cut_from_the_masked_frame(tmp_path: Path) -> None:
    """A candidate over a field a secret was typed into shows the mask, never the secret's pixels; the template is
    the bundle's own picture, written as it is."""

    def mask(pixels: np.ndarray) -> np.ndarray:
        out = pixels.copy()
        out[40:60, 40:120] = (255, 0, 255)  # where the secret was typed
        return out

    frames = FrameWriter(tmp_path / "frames")
    frames.mask = mask
    template = np.full((30, 100, 3), 200, np.uint8)
    ctx = SimpleNamespace(
        ladder=SimpleNamespace(templates={"templates/pw.png": TemplateImage(template)}), frames=frames
    )
    screen = np.full((200, 300, 3), 10, np.uint8)
    try:
        got = save_halt_pictures(
            ctx, Halt("resolution", "x", step="pw", frame=screen, best=(30, 35, 100, 30), template="templates/pw.png")
        )
    finally:
        frames.close()
    assert got == {"template": "frames/halt-pw-template.png", "best": "frames/halt-pw-best.png"}
    best = np.asarray(Image.open(tmp_path / "frames/halt-pw-best.png").convert("RGB"))
    assert best.shape == (30, 100, 3) and (best[10, 20] == (255, 0, 255)).all() and (best[0, 0] == 10).all()
    assert np.array_equal(np.asarray(Image.open(tmp_path / "frames/halt-pw-template.png").convert("RGB")), template)
