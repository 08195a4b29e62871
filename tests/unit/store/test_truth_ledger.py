"""The run ledger outside run directories: one directory per run, a journal that reaches the seal, decisions used once."""

from __future__ import annotations

import json
import shutil

import pytest

from openadapt_flow.errors import RefusedError
from openadapt_flow.store import ledger

pytestmark = pytest.mark.timeout(30)


@pytest.fixture(autouse=True)
def state(tmp_path, monkeypatch):
    monkeypatch.setenv("FLOW_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


def run_dir(path, run_id="run-abc"):
    path.mkdir(parents=True)
    (path / "manifest.json").write_text(json.dumps({"run_id": run_id}))
    return path


RECS = [{"seq": i, "hash": f"h{i}"} for i in range(1, 6)]


def test_the_first_directory_holds_the_run_and_a_copy_is_refused(tmp_path):
    a = run_dir(tmp_path / "a")
    ledger.seal("run-abc", a, 3, "h3")
    b = tmp_path / "b"
    shutil.copytree(a, b)
    assert ledger.claim("run-abc", a, RECS)["path"] == str(a)
    with pytest.raises(RefusedError, match=f"held by {a}"):
        ledger.claim("run-abc", b, RECS)


def test_a_moved_run_is_followed_with_its_seal(tmp_path):
    a = run_dir(tmp_path / "a")
    ledger.seal("run-abc", a, 4, "h4")
    b = tmp_path / "b"
    shutil.move(str(a), str(b))
    entry = ledger.claim("run-abc", b, RECS)
    assert (entry["path"], entry["relocated_from"], entry["seal"]["seq"]) == (str(b), str(a), 4)
    with pytest.raises(RefusedError, match="older copy of the run or a cut journal"):
        ledger.claim("run-abc", b, RECS[:3])  # behind the seal
    with pytest.raises(RefusedError, match="older copy"):
        ledger.claim("run-abc", b, RECS[:3] + [{"seq": 4, "hash": "other"}])  # another history


def test_the_seal_never_moves_back_and_a_copy_never_moves_it(tmp_path):
    a = run_dir(tmp_path / "a")
    ledger.seal("run-abc", a, 4, "h4")
    ledger.seal("run-abc", a, 2, "h2")
    b = run_dir(tmp_path / "b")
    ledger.seal("run-abc", b, 5, "h5")
    entry = json.loads((ledger.state_dir() / "ledger" / "run-abc.json").read_text())
    assert (entry["path"], entry["seal"]) == (str(a), {"seq": 4, "hash": "h4"})


def test_a_decision_is_consumed_once_and_the_same_record_is_the_same_use(tmp_path):
    a = run_dir(tmp_path / "a")
    ledger.consume("run-abc", a, "pause-1", "continue", 5, "h5")
    ledger.consume("run-abc", a, "pause-1", "continue", 5, "h5")  # a crash after the ledger write: the same use
    with pytest.raises(RefusedError, match="already used"):
        ledger.consume("run-abc", a, "pause-1", "continue", 7, "h7")
    assert ledger.consumed("run-abc", "pause-1")["seq"] == 5
    with pytest.raises(RefusedError, match="seal is at seq 5"):
        ledger.claim("run-abc", a, RECS[:4])


def test_an_unknown_run_is_adopted_and_a_foreign_entry_refused(tmp_path, state):
    a = run_dir(tmp_path / "a")
    assert ledger.claim("run-abc", a, RECS)["path"] == str(a)
    (state / "ledger" / "run-abc.json").write_text(json.dumps({"run_id": "run-other"}))
    with pytest.raises(RefusedError, match="not this run's entry"):
        ledger.claim("run-abc", a, RECS)
    with pytest.raises(RefusedError, match="not a valid run id"):
        ledger.Ledger("../x")


def test_one_directory_reached_through_a_symlink_is_not_a_copy(tmp_path):
    a = run_dir(tmp_path / "real" / "a")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    ledger.seal("run-abc", tmp_path / "link" / "a", 2, "h2")
    assert ledger.claim("run-abc", a, RECS)["path"] == str(a)
