"""A workflow run starts atomically, as a bundle run does (lifecycle.begin_run, SPEC §7): lease, `run_started`, sealed
state RUNNING, and only then manifest.json. A start-up cut before the manifest (a kill, a full disk) is no run: nothing
ran, `flow reconcile` names it, and starting again works; never a run directory that resume refuses forever."""

from __future__ import annotations

import pytest

from openadapt_flow.runtime.operate.reconciler import reconcile_root
from openadapt_flow.runtime.runs import start_workflow
from openadapt_flow.runtime.start import lifecycle
from openadapt_flow.runtime.start.launch import WorkflowRequest
from openadapt_flow.runtime.workflow import run as workflow_run
from openadapt_flow.store import journal as journal_mod
from openadapt_flow.store.atomic import StorageFault
from tests.unit.runtime.workflow_support import config, log, state, write_module

pytestmark = pytest.mark.timeout(60)


class Killed(BaseException):
    """The process died here (a SIGKILL, without the kill)."""


@pytest.fixture
def ws(tmp_path, monkeypatch):
    monkeypatch.setenv("FLOW_KEY_FILE", str(tmp_path / "k"))
    monkeypatch.setenv("FLOW_DECISION_KEY_FILE", str(tmp_path / "dk"))
    monkeypatch.setenv("WF_LOG", str(tmp_path / "wf.log"))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    write_module(tmp_path)
    yield tmp_path
    write_module(tmp_path)


def start(ws, name: str):
    return start_workflow(WorkflowRequest("wf_mod:nap", {"seconds": 0}, None, config(ws), run_dir=ws / "runs" / name))


def assert_no_run_and_a_fresh_start_works(ws, cut):
    assert not (cut / "manifest.json").exists()  # no run: nothing to resume, nothing refused forever
    assert log(ws) == []  # and nothing ran
    rows = [r["action"] for r in reconcile_root(ws / "runs") if r["run_dir"] == str(cut)]
    assert rows in ([], ["unstarted"]), rows  # named as a cut start-up once it has a journal; never a run to finalise
    out = start(ws, "again")
    assert out.state == "COMPLETED", out.message
    assert log(ws) == ["fetch N"] and state(out.run_dir)["state"] == "COMPLETED"


@pytest.mark.parametrize(
    "point", ["start:dir_created", "start:lease_acquired", "after:run_started", "start:state_written"]
)
def test_a_workflow_start_up_killed_before_its_manifest_is_no_run(ws, monkeypatch, point):
    def crash(name, step=None):
        if name == point:
            raise Killed(name)

    for module in (journal_mod, lifecycle, workflow_run):
        monkeypatch.setattr(module, "crash_point", crash, raising=False)
    with pytest.raises(Killed):
        start(ws, "cut")
    monkeypatch.undo()
    monkeypatch.setenv("FLOW_KEY_FILE", str(ws / "k"))
    monkeypatch.setenv("FLOW_DECISION_KEY_FILE", str(ws / "dk"))
    monkeypatch.setenv("WF_LOG", str(ws / "wf.log"))
    monkeypatch.syspath_prepend(str(ws))
    monkeypatch.chdir(ws)
    assert_no_run_and_a_fresh_start_works(ws, ws / "runs" / "cut")


def test_a_full_disk_at_the_first_journal_record_leaves_no_run(ws, monkeypatch):
    monkeypatch.setenv("FLOW_IO_FAULT", "journal")
    with pytest.raises(StorageFault, match="could not start"):
        start(ws, "cut")
    monkeypatch.delenv("FLOW_IO_FAULT")
    assert_no_run_and_a_fresh_start_works(ws, ws / "runs" / "cut")
