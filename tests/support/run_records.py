"""Every run directory a test leaves under its tmp_path is validated against the run-record models
(openadapt_flow/records/models.py, runfiles.py) when the test passes; a record or file the models reject fails
that test, naming the file, the record's seq and pydantic's error.

What is validated is what provably the tool wrote, so that tests which damage run files on purpose (tampering,
torn writes, foreign keys) are not failed for their damage:
- journal records up to the first break of the hash chain, under a key the test used (a torn last line is skipped,
  as load_journal does), except records of a type the runtime never writes (a test appending its own: which types
  the runtime writes is known from its source, and tests/unit/store/test_records.py holds every one to a model);
- manifest.json when its digest is the one the verified `run_started` pins; state.json when its seal verifies
  (or it has none); checkpoint.json when it names a verified record; pending_escalation.json when it is the body
  a verified `escalation_opened`/`escalated` record carries; approval.json and decisions/*.json when their
  signature verifies under a decision key the test used;
- unsigned files (lease, incident, report, patch) when they parse as a JSON object: the tool writes every file
  atomically, so one that does not parse was damaged from outside.
Any other JSON file in a run directory is an unknown run file and fails the test. A test that writes run
records the models must reject (to test this check) says so: `@pytest.mark.invalid_run_records("why")`.

Loaded from tests/conftest.py. The totals (validated vs not provable) are printed at the end of the session.
"""

from __future__ import annotations

import hmac
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from openadapt_flow.records.models import RECORD_TYPES, validate_record
from openadapt_flow.records.runfiles import file_model
from openadapt_flow.store import digest_manifest
from openadapt_flow.store.escalation import sign
from openadapt_flow.store.journal import record_hash
from openadapt_flow.store.keys import DECISION_KEY_FILE_ENV, KEY_FILE_ENV, decision_key_path, key_path
from openadapt_flow.store.seal import state_seal

NOT_RUN_FILES = ("bundle", "upgrades", "frames")  # snapshots of bundles, PNGs: no run records
SKIP_SUBTREES = ("bundle", "upgrades", "frames", ".git", "__pycache__", "screens", "templates")


@dataclass
class Tally:
    dirs: int = 0
    records: int = 0
    files: int = 0
    unproven: int = 0  # files and records the tool provably did not write (damage a test made on purpose)
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)


TOTAL = Tally()


def _keys(root: Path, env: str, default: Path) -> list[bytes]:
    """Candidate keys: the env's file, the default, and every *.key a test put under its tmp_path."""
    paths = [Path(os.environ[env])] if os.environ.get(env) else []
    paths += [default, *sorted(root.glob("*.key")), *sorted(root.glob("*/*.key"))]
    out: list[bytes] = []
    for p in paths:
        try:
            k = p.read_bytes().strip()
        except OSError:
            continue
        if len(k) >= 32 and k not in out:
            out.append(k)
    return out


def run_dirs(root: Path) -> list[Path]:
    """Directories under `root` that hold a run (manifest.json or journal.jsonl), children/ included."""
    found = []
    for here, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIP_SUBTREES]
        if "manifest.json" in files or "journal.jsonl" in files:
            found.append(Path(here))
    return found


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _verified_records(path: Path, keys: list[bytes]) -> tuple[list[dict[str, Any]], bytes | None]:
    """The journal's records up to the first break of its chain under the key that verifies its first record."""
    try:
        lines = path.read_bytes().split(b"\n")
    except OSError:
        return [], None
    lines.pop()  # after the last newline: empty, or a torn write
    parsed: list[dict[str, Any]] = []
    for line in lines:
        try:
            rec = json.loads(line)
        except ValueError:
            break
        if not isinstance(rec, dict):
            break
        parsed.append(rec)
    key = next((k for k in keys if parsed and parsed[0].get("hash") == record_hash(k, parsed[0])), None)
    if key is None:
        return [], None
    out, prev = [], "0" * 64
    for i, rec in enumerate(parsed):
        if rec.get("seq") != i + 1 or rec.get("prev_hash") != prev or rec.get("hash") != record_hash(key, rec):
            break
        out.append(rec)
        prev = rec["hash"]
    return out, key


def _provable(
    rel: str, doc: dict[str, Any], records: list[dict[str, Any]], key: bytes | None, dkeys: list[bytes]
) -> bool:
    """Did the tool provably write this file (see the module docstring)?"""
    name = rel.split("/")[-1]
    if name == "manifest.json":
        started = next((r for r in records if r["type"] == "run_started"), None)
        return started is not None and started["data"].get("manifest_digest") == digest_manifest(doc)
    if name == "state.json":
        return "seal" not in doc or (key is not None and hmac.compare_digest(state_seal(key, doc), str(doc["seal"])))
    if name == "checkpoint.json":
        return any(r["seq"] == doc.get("seq") and r["hash"] == doc.get("journal_hash") for r in records)
    if name == "pending_escalation.json":
        body = {k: v for k, v in doc.items() if k != "schema"}
        return any(
            r["type"] in ("escalation_opened", "escalated") and r["data"].get("pending") == body for r in records
        )
    if name == "approval.json" or rel.startswith("decisions/"):
        body = {k: v for k, v in doc.items() if k not in ("schema", "signature")}
        return any(hmac.compare_digest(sign(k, body), str(doc.get("signature"))) for k in dkeys)
    return True


def _error(e: ValidationError) -> str:
    first = e.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    return f"{where}: {first['msg']} (got {json.dumps(first.get('input'), default=str)[:160]})" + (
        f" (+{e.error_count() - 1} more)" if e.error_count() > 1 else ""
    )


def check_run_dir(run: Path, keys: list[bytes], dkeys: list[bytes], tally: Tally) -> list[str]:
    """Problems with one run directory's records and files (empty: everything the tool provably wrote validates)."""
    problems: list[str] = []
    records, key = _verified_records(run / "journal.jsonl", keys)
    for rec in records:
        if rec.get("type") not in RECORD_TYPES:
            tally.unproven += 1
            continue
        try:
            validate_record(rec)
            tally.records += 1
        except ValidationError as e:
            problems.append(f"{run / 'journal.jsonl'} seq {rec.get('seq')} ({rec.get('type')}): {_error(e)}")
    for path in sorted(run.rglob("*.json")):
        rel = path.relative_to(run).as_posix()
        top = rel.split("/")[0]
        if top in NOT_RUN_FILES or top == "children" or (top == "patches" and "/bundle/" in rel):
            continue  # bundle snapshots, and child runs (validated as run directories of their own)
        model: type[BaseModel] | None = file_model(rel)
        if model is None:
            problems.append(f"{path}: unknown run file (no model in openadapt_flow/records/runfiles.py)")
            continue
        doc = _load_json(path)
        if not isinstance(doc, dict) or not _provable(rel, doc, records, key, dkeys):
            tally.unproven += 1
            continue
        try:
            model.model_validate(doc)
            tally.files += 1
        except ValidationError as e:
            problems.append(f"{path}: {_error(e)}")
    return problems


def check_tree(root: Path, tally: Tally) -> list[str]:
    keys = _keys(root, KEY_FILE_ENV, key_path())
    dkeys = _keys(root, DECISION_KEY_FILE_ENV, decision_key_path())
    problems: list[str] = []
    for run in run_dirs(root):
        tally.dirs += 1
        problems += check_run_dir(run, keys, dkeys, tally)
    return problems


class RunRecordsInvalid(AssertionError):
    pass


MARKER = "invalid_run_records"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}(reason): the test leaves run records the models must reject; not checked"
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    result = yield  # a test that failed is not also failed on its run files
    tmp = getattr(item, "funcargs", {}).get("tmp_path")
    opted_out = item.get_closest_marker(MARKER)
    if opted_out is not None and not (opted_out.args and str(opted_out.args[0]).strip()):
        raise RunRecordsInvalid(f"@pytest.mark.{MARKER} needs a reason")
    if opted_out is None and isinstance(tmp, Path) and tmp.is_dir():
        t0 = time.perf_counter()
        problems = check_tree(tmp, TOTAL)
        TOTAL.seconds += time.perf_counter() - t0
        if problems:
            TOTAL.problems += problems
            raise RunRecordsInvalid("run files the models reject:\n" + "\n".join(problems[:20]))
    return result


WORKER_KEY = "run_records_tally"


def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: the controller prints the totals
        workeroutput[WORKER_KEY] = json.dumps([TOTAL.dirs, TOTAL.records, TOTAL.files, TOTAL.unproven, TOTAL.seconds])


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):  # noqa: ARG001 - xdist's hook signature
    raw = getattr(node, "workeroutput", {}).get(WORKER_KEY)
    if raw:
        dirs, recs, files, unproven, seconds = json.loads(raw)
        TOTAL.dirs, TOTAL.records, TOTAL.files = TOTAL.dirs + dirs, TOTAL.records + recs, TOTAL.files + files
        TOTAL.unproven, TOTAL.seconds = TOTAL.unproven + unproven, TOTAL.seconds + seconds


def pytest_terminal_summary(terminalreporter, exitstatus, config):  # noqa: ARG001 - pytest's hook signature
    if TOTAL.dirs:
        terminalreporter.write_line(
            f"run records: {TOTAL.dirs} run dirs, {TOTAL.records} journal records and {TOTAL.files} files validated, "
            f"{TOTAL.unproven} files or records not provably the tool's (skipped), {TOTAL.seconds:.2f}s"
        )
