"""Preflight: what a run needs to verify its writes is checked before the first input (issue 12, finding 8)."""

from __future__ import annotations

import pytest
import yaml

from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.runtime.runs import replay
from openadapt_flow.runtime.start.launch import ReplayRequest
from tests.unit.runtime.test_durable import cfg, env  # noqa: F401 - env is a fixture
from tests.unit.runtime.test_mask_secret_frames import SECRET, App, bundle

pytestmark = pytest.mark.timeout(60)


def test_an_effect_that_cannot_be_read_is_found_before_the_first_input(tmp_path, monkeypatch):
    """A verifier whose DSN variable is not set is bad input at the start (exit 2, no run dir), not a halt at the
    writing step after the earlier steps already typed into the application."""
    from openadapt_flow.errors import ConfigError

    monkeypatch.setenv("FLOW_SECRET_PW", SECRET)
    monkeypatch.delenv("LEDGER_DSN", raising=False)
    app = App()
    root = bundle(tmp_path / "b")
    flow = yaml.safe_load((root / "flow.yaml").read_text())
    flow["steps"][1]["effect"] = {
        "kind": "sql",
        "dsn_env": "LEDGER_DSN",
        "query": "SELECT count(*) FROM posts",
        "expect": {"increase_by": 1},
    }
    (root / "flow.yaml").write_text(yaml.safe_dump(flow, sort_keys=False))
    req = ReplayRequest(
        bundle=root, params={}, backend=BackendSpec(kind="fake"), config=cfg(tmp_path), run_dir=tmp_path / "run"
    )
    with pytest.raises(ConfigError, match="LEDGER_DSN"):
        replay(req, backend_factory=lambda spec: app.backend)
    assert app.backend.events == [] and not (tmp_path / "run").exists()
