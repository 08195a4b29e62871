"""Real runs for the report's tests, made in process on the demo bundle's recorded fixture (no X): a healthy replay,
and a durable run that halts on two identical "New invoice" buttons (the fixture's first screen with a twin pasted
into the step's search window), so the halt pauses with both look-alikes recorded as candidates."""

from __future__ import annotations

import shutil
from pathlib import Path

import cv2
import pytest

from openadapt_flow.backends.spec import parse_url
from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.report.render import write_reports
from openadapt_flow.runtime.runs import replay
from openadapt_flow.runtime.start.launch import ReplayRequest, RunOutcome
from tests.support.demo_invoices import BUNDLE, FIXTURES

PARAMS = {"vendor": "ACME Corp", "amount": 1250.5}
BUTTON = (40, 90, 180, 44)  # "New invoice" on the fixture's first screen (x, y, w, h)
TWIN_AT = (40, 150)  # inside the step's padded search window, clear of the original


def run_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "sor.db"
    for var, value in {
        "FLOW_KEY_FILE": tmp_path / "install.key",
        "FLOW_DECISION_KEY_FILE": tmp_path / "decision.key",
        "FLOW_FIXTURE_DB": db,
        "DEMO_DB_DSN": f"sqlite:///{db}",
    }.items():
        monkeypatch.setenv(var, str(value))
    monkeypatch.chdir(tmp_path)


def _replay(tmp_path: Path, fixture: Path, run_dir: Path, durable: bool) -> RunOutcome:
    cfg = DeployConfig.model_validate(
        {"schema": "openadapt-flow/config@1", "runtime": {"runs_root": str(tmp_path / "runs")}}
    )
    req = ReplayRequest(
        bundle=BUNDLE,
        params=PARAMS,
        backend=parse_url(f"fixture:{fixture}"),
        config=cfg,
        run_dir=run_dir,
        durable=durable,
    )
    return replay(req, reporter=write_reports)


def healthy_run(tmp_path: Path) -> RunOutcome:
    """The demo bundle replayed on its recorded fixture: five verified steps."""
    out = _replay(tmp_path, FIXTURES / "normal", tmp_path / "healthy", durable=False)
    assert out.state == "COMPLETED", out.message
    return out


def twin_fixture(root: Path) -> Path:
    """The normal fixture with a second, identical "New invoice" button under the first."""
    if root.exists():
        return root
    shutil.copytree(FIXTURES / "normal", root)
    img = cv2.imread(str(root / "screens/s1.png"))
    x, y, w, h = BUTTON
    tx, ty = TWIN_AT
    img[ty - 10 : ty + h + 10, 30:400] = img[300, 300]  # clear "No invoices yet" under it to the page's background
    img[ty : ty + h, tx : tx + w] = img[y : y + h, x : x + w]
    cv2.imwrite(str(root / "screens/s1.png"), img)
    return root


def ambiguous_run(tmp_path: Path, durable: bool = True) -> RunOutcome:
    """A run that halts ambiguous at its first step, before any input: PAUSED when durable, else FAILED."""
    out = _replay(
        tmp_path, twin_fixture(tmp_path / "twin-fixture"), tmp_path / ("twin" if durable else "twin-plain"), durable
    )
    assert (out.state, out.category) == (("PAUSED" if durable else "FAILED"), "ambiguous"), out.message
    return out
