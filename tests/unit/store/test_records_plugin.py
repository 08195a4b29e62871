"""The run-records check the test suite applies to every run directory (tests/support/run_records.py): it names the
file, the record's seq and the error, and leaves a test's deliberate damage (what the tool provably did not write)
alone."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from openadapt_flow.store import Journal, load_journal
from tests.support.run_records import Tally, check_run_dir, check_tree, run_dirs

pytestmark = pytest.mark.timeout(60)
RUNS_V1 = Path(__file__).resolve().parents[2] / "data" / "runs-v1"


@pytest.fixture
def run(tmp_path: Path) -> Path:
    shutil.copytree(RUNS_V1 / "paused", tmp_path / "run")
    return tmp_path / "run"


def _keys() -> tuple[list[bytes], list[bytes]]:
    return [(RUNS_V1 / "install.key").read_bytes().strip()], [(RUNS_V1 / "decision.key").read_bytes().strip()]


def test_a_stored_run_is_clean(run: Path):
    tally = Tally()
    assert check_run_dir(run, *_keys(), tally) == []
    assert (tally.records, tally.files, tally.unproven) == (21, 6, 0)


@pytest.mark.invalid_run_records("appends a record the models reject, to see it named")
def test_a_record_the_models_reject_is_named_by_file_and_seq(run: Path):
    key = _keys()[0][0]
    journal = Journal(run / "journal.jsonl", key, load_journal(run / "journal.jsonl", key).records)
    journal.append(
        "action_dispatched", "save", {"action": "click", "point": [1, 2]}
    )  # chained, but no lease generation
    journal.close()
    problems = check_run_dir(run, *_keys(), Tally())
    assert len(problems) == 1
    assert "journal.jsonl seq 22 (action_dispatched)" in problems[0] and "lease_generation" in problems[0]


def test_deliberate_damage_is_skipped_not_failed(run: Path):
    key = _keys()[0][0]
    journal = Journal(run / "journal.jsonl", key, load_journal(run / "journal.jsonl", key).records)
    journal.append("note", None, {"why": "a test's own record type"})  # chained, but no runtime writes a `note`
    journal.close()
    state = json.loads((run / "state.json").read_text())
    (run / "state.json").write_text(json.dumps({**state, "state": "COMPLETED?"}))  # its seal no longer verifies
    (run / "lease.json").write_text("{not json")  # torn from outside: the tool writes atomically
    with (run / "journal.jsonl").open("a") as f:
        f.write('{"seq": 22, "type": "forged"}\n')  # breaks the chain: not the tool's
    tally = Tally()
    assert check_run_dir(run, *_keys(), tally) == []
    assert tally.records == 21 and tally.unproven == 3


@pytest.mark.invalid_run_records("puts an unknown JSON file in a run dir, to see it named")
def test_an_unknown_json_file_in_a_run_dir_fails(run: Path):
    (run / "notes.json").write_text("{}")
    problems = check_run_dir(run, *_keys(), Tally())
    assert problems == [f"{run / 'notes.json'}: unknown run file (no model in openadapt_flow/records/runfiles.py)"]


def test_child_runs_are_found_and_keys_are_picked_up_from_the_tests_folder(tmp_path: Path, run: Path):
    shutil.copytree(RUNS_V1 / "interrupted", run / "children" / "sub")
    for k in ("install.key", "decision.key"):
        shutil.copyfile(RUNS_V1 / k, tmp_path / k)
    assert sorted(p.name for p in run_dirs(tmp_path)) == ["run", "sub"]
    tally = Tally()
    assert check_tree(tmp_path, tally) == []
    assert tally.dirs == 2 and tally.records == 21 + 15 and tally.unproven == 0
