"""A fast durable run with no desktop for the attack suites: a tool that writes (`post`) halts while its system is
down, so the run pauses awaiting an operator's decision; any `post` that runs is one line in the write log.

The harm every attack looks for: `post` running without a valid, unused decision, or running twice.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from openadapt_flow.runtime.decide.config import DeployConfig
from openadapt_flow.runtime.act.launch import ReplayRequest, RunOutcome
from openadapt_flow.runtime.runs import replay

TOOLS = '''
import os
from pathlib import Path

def fetch():
    return {"total": 1250}

def post(total):
    if Path(os.environ["POST_DOWN"]).exists():
        raise RuntimeError("ledger API down")
    log = Path(os.environ["POST_LOG"])
    log.write_text((log.read_text() if log.exists() else "") + f"post {total}\\n")
    if Path(os.environ["POST_DOWN"] + ".die").exists():
        raise SystemExit("killed after the write, before it was verified")
    return "posted"

def done():
    return "ok"
'''

STEPS = [
    {"id": "fetch", "action": "tool", "call": "attack_tools:fetch"},
    {"id": "post", "action": "tool", "call": "attack_tools:post", "args": {"total": "{steps.fetch.result.total}"}},
    {"id": "done", "action": "tool", "call": "attack_tools:done"},
]


class Workspace:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.log = root / "post.log"
        self.down = root / "down"

    def posts(self) -> int:
        return len(self.log.read_text().splitlines()) if self.log.exists() else 0

    def bundle(self, steps: list[dict]) -> Path:
        b = self.root / "b"
        b.mkdir(exist_ok=True)
        flow = {"schema": "openadapt-flow/bundle@1", "name": "attack", "screen": {"width": 100, "height": 100}, "steps": steps}
        (b / "flow.yaml").write_text(yaml.safe_dump(flow, sort_keys=False))
        return b

    def config(self, **approvals: object) -> DeployConfig:
        body: dict = {"schema": "openadapt-flow/config@1", "runtime": {"runs_root": str(self.root / "runs"), "durable": True}}
        if approvals:
            body["approvals"] = approvals
        return DeployConfig.model_validate(body)

    def start(self, steps: list[dict] = STEPS, run_dir: str = "run", **approvals: object) -> RunOutcome:
        """Start with the ledger API down: the run pauses at `post` awaiting an operator; then the API comes back."""
        self.down.write_text("down")
        out = replay(ReplayRequest(bundle=self.bundle(steps), params={}, backend=None, config=self.config(**approvals),
                                   run_dir=self.root / run_dir))
        self.down.unlink()
        return out


def env_for(root: Path) -> dict[str, str]:
    return {"FLOW_KEY_FILE": str(root / "install.key"), "FLOW_DECISION_KEY_FILE": str(root / "decision.key"),
            "FLOW_STATE_DIR": str(root / "state"), "POST_LOG": str(root / "post.log"), "POST_DOWN": str(root / "down")}


@pytest.fixture
def ws(tmp_path, monkeypatch) -> Workspace:
    for k, v in env_for(tmp_path).items():
        monkeypatch.setenv(k, v)
    (tmp_path / "attack_tools.py").write_text(TOOLS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return Workspace(tmp_path)


def records(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "journal.jsonl").read_text().splitlines() if line.strip()]


def edit_json(path: Path, **changes: object) -> None:
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))


def cut_journal(run: Path, n: int) -> None:
    """Drop the journal's last `n` whole records (a cut tail, not a torn line)."""
    lines = (run / "journal.jsonl").read_text().splitlines(keepends=True)
    (run / "journal.jsonl").write_text("".join(lines[:-n]))
