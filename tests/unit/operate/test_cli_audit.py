"""CLI decisions are audited like the console's (SPEC §20): `flow approve` / `flow answer` / `flow signal` append a
`decision` entry to the operator audit log of the runs root holding the run (channel `cli`, the OS user, marked
unauthenticated), and the log's hash chain still verifies."""

from __future__ import annotations

import getpass
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.cli.app import app
from openadapt_flow.runtime.runs import replay
from openadapt_flow.runtime.start.launch import ReplayRequest
from openadapt_flow.runtime.start.runref import open_ref
from openadapt_flow.store import FilesystemStore, runs_root

pytestmark = pytest.mark.timeout(60)

TOOLS = "def boom():\n    raise RuntimeError('ledger API down')\n"


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("FLOW_KEY_FILE", str(tmp_path / "k"))
    monkeypatch.setenv("FLOW_DECISION_KEY_FILE", str(tmp_path / "dk"))
    (tmp_path / "flowtools_audit.py").write_text(TOOLS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    return tmp_path / "runs"


def _paused(root: Path, step: dict) -> Path:
    """A run under `root` paused at its one step."""
    bundle = root.parent / "b"
    bundle.mkdir()
    flow = {
        "schema": "openadapt-flow/bundle@1",
        "name": "audit",
        "screen": {"width": 10, "height": 10},
        "steps": [step],
    }
    (bundle / "flow.yaml").write_text(yaml.safe_dump(flow, sort_keys=False))
    cfg = DeployConfig.model_validate({"schema": "openadapt-flow/config@1", "runtime": {"runs_root": str(root)}})
    out = replay(ReplayRequest(bundle=bundle, params={}, backend=None, config=cfg, run_dir=root / "run"))
    assert out.state == "PAUSED", out.message
    return Path(out.run_dir)


def _flow(*args: str) -> None:
    res = CliRunner().invoke(app, list(args))
    assert res.exit_code == 0, res.output


def _decisions(root: Path) -> list[dict]:
    log = FilesystemStore(root).operators().audit_log()  # verifies the hash chain (RefusedError if broken)
    return [e for e in log if e["event"] == "decision"]


def _expect_one(root: Path, run: Path, decision: str, operator: str) -> None:
    [entry] = _decisions(root)
    assert {k: entry[k] for k in ("operator", "os_user", "channel", "authenticated", "decision")} == {
        "operator": operator,
        "os_user": getpass.getuser(),
        "channel": "cli",
        "authenticated": False,
        "decision": decision,
    }
    assert entry["run"] == open_ref(str(run)).ref and entry["pause_id"].startswith("pause-")


def test_flow_approve_is_audited_unauthenticated_on_channel_cli(root):
    run = _paused(root, {"id": "x", "action": "tool", "call": "flowtools_audit:boom"})
    assert _decisions(root) == []
    _flow("approve", str(run), "--decision", "continue", "--operator", "alice")
    _expect_one(root, run, "continue", "alice")
    _flow(
        "approve", str(run), "--decision", "continue", "--operator", "alice"
    )  # a repeat records nothing: no entry either
    assert len(_decisions(root)) == 1


def test_flow_answer_is_audited_unauthenticated_on_channel_cli(root):
    run = _paused(root, {"id": "q", "action": "ask_user", "question": "Post?", "choices": ["post", "hold"]})
    _flow("answer", str(run), "post", "--operator", "bob")
    _expect_one(root, run, "answer", "bob")


def test_flow_signal_is_audited_unauthenticated_on_channel_cli(root):
    run = _paused(root, {"id": "g", "action": "wait_signal", "signal": "go"})
    _flow("signal", str(run), "go", "--data", '{"x": 1}')
    _expect_one(root, run, "signal", getpass.getuser())


def test_a_child_runs_decision_is_audited_at_the_runs_root_not_inside_its_parent(tmp_path: Path) -> None:
    """A workflow's child run lives at RUN/children/NAME: its runs root is the outermost run's parent, so the audit
    log (and its lock) never lands in `children/`, where it would read as another child run."""
    parent = tmp_path / "runs" / "wf"
    child = parent / "children" / "replay-a"
    grandchild = child / "children" / "b"
    for p in (parent, child, grandchild):
        p.mkdir(parents=True)
        (p / "manifest.json").write_text("{}")
    assert runs_root(grandchild) == runs_root(child) == runs_root(parent) == (tmp_path / "runs").resolve()
    lone = tmp_path / "elsewhere" / "children" / "x"  # a folder named children that is no run's
    lone.mkdir(parents=True)
    assert runs_root(lone) == lone.parent.resolve()
