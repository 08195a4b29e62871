"""The console page cache the bench measures: a run at rest is folded once per stamp; a decision (a new stamp) shows
at once; the row (state, age) is always read fresh."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.console import views
from openadapt_flow.console.views import PageCache
from openadapt_flow.runtime.operate.approval import approve
from openadapt_flow.runtime.runs import replay
from openadapt_flow.runtime.start.launch import ReplayRequest
from openadapt_flow.store import FilesystemStore

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def paused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("FLOW_KEY_FILE", str(tmp_path / "k"))
    monkeypatch.setenv("FLOW_DECISION_KEY_FILE", str(tmp_path / "dk"))
    (tmp_path / "flowtools_page.py").write_text("def boom():\n    raise RuntimeError('ledger API down')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    bundle = tmp_path / "b"
    bundle.mkdir()
    flow = {
        "schema": "openadapt-flow/bundle@1",
        "name": "page",
        "screen": {"width": 10, "height": 10},
        "steps": [{"id": "x", "action": "tool", "call": "flowtools_page:boom"}],
    }
    (bundle / "flow.yaml").write_text(yaml.safe_dump(flow))
    cfg = DeployConfig.model_validate(
        {"schema": "openadapt-flow/config@1", "runtime": {"runs_root": str(tmp_path / "runs")}}
    )
    out = replay(ReplayRequest(bundle=bundle, params={}, backend=None, config=cfg, run_dir=tmp_path / "runs" / "run"))
    assert out.state == "PAUSED"
    return FilesystemStore(tmp_path / "runs").open_run(str(out.run_dir))


def test_a_paused_run_is_folded_once_per_stamp_and_a_decision_shows_at_once(paused, monkeypatch):
    folds = []
    real = views.halt_view
    monkeypatch.setattr(views, "halt_view", lambda run: folds.append(run.ref) or real(run))
    cache = PageCache()
    first = cache.page(paused)
    assert first["run"]["state"] == "PAUSED" and first["approval"] is None
    assert cache.page(paused)["pending"] == first["pending"] and len(folds) == 1  # the same stamp: not folded again
    approve(paused, "continue", "alice")
    after = cache.page(paused)
    assert after["approval"]["decision"] == "continue" and len(folds) == 2
    cache.page(paused)
    assert len(folds) == 2


def test_a_run_in_motion_is_folded_every_time(paused, monkeypatch):
    folds = []
    real = views.halt_view
    monkeypatch.setattr(views, "halt_view", lambda run: folds.append(run.ref) or real(run))
    monkeypatch.setattr(views, "run_row", lambda run: {"run_id": "r", "state": "RUNNING", "age": "1s"})
    cache = PageCache()
    cache.page(paused)
    cache.page(paused)
    assert len(folds) == 2
