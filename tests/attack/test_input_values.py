"""Odd values through the real path: non-finite numbers and duplicate flags are refused before anything runs;
non-ASCII and huge strings either arrive exactly or halt safely, never as a wrong row or a giant error line.

The refusals and the number answer run on every store (`store`: a `flow` process on a run directory or naming a
PostgreSQL schema, or commands of this process on its memory store). The typed-text cases stay on the real app on Xvnc: what they test is how a real
toolkit's text field shows non-ASCII and overlong text to OCR, which the recorded fixture renders by its own rules."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.attack.attack_support import STORES, RunFiles, forked_flow, pg_store
from tests.e2e.demo_harness import BUNDLE_DIR
from tests.support import memcrash
from tests.support.cli import flow_env, run_flow

pytestmark = pytest.mark.timeout(180)
NOWHERE = "vnc://127.0.0.1:1"  # params are bound before any connection: a refusal never gets this far


@dataclass
class Store:
    name: str
    spec: str = ""  # postgres: the store's URL (its own schema of the session's server)
    password: str = ""


@pytest.fixture(params=STORES)
def store(request, monkeypatch) -> Store:
    """The store a test's commands use (postgres: forked `flow` processes naming a schema of the session's server)."""
    if request.param != "postgres":
        return Store(request.param)
    return Store("postgres", *pg_store(request, monkeypatch))


def on(store: Store, tmp_path: Path) -> tuple[Path, list[str], Any]:
    """(the run's reference, the --store flags, the command runner) of a run named `run` in `store`."""
    if store.name == "memory":
        return Path(f"memory:{tmp_path.name}-run"), ["--store", "memory:"], memcrash.flow
    if store.name == "postgres":
        def pg_flow(args: list[str], cwd: Path, env: dict[str, str]) -> Any:
            return forked_flow([*args, "--store", store.spec], cwd, dict(env, PGPASSWORD=store.password))
        return Path("pg:run"), [], pg_flow
    return tmp_path / "run", [], run_flow


def refused(tmp_path: Path, store: Store, *args: str) -> str:
    run_dir, where, flow = on(store, tmp_path)
    r = flow(["replay", str(BUNDLE_DIR), "--url", NOWHERE, "--durable", "--run-dir", str(run_dir), *where, *args], tmp_path,
             env=flow_env(tmp_path))
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr
    assert not RunFiles(run_dir).exists("journal.jsonl") and not RunFiles(run_dir).exists("manifest.json")  # no run left
    if store.name == "filesystem":
        assert not run_dir.exists()  # an error before the run directory exists leaves none
    return r.stderr


@pytest.mark.parametrize("amount", ["nan", "inf", "-inf", "Infinity", "1e999"])
def test_a_non_finite_amount_flag_is_refused_with_exit_2(tmp_path, store, amount):
    err = refused(tmp_path, store, "--param", "vendor=ACME", "--param", f"amount={amount}")
    assert "param amount" in err and "not a valid number" in err


@pytest.mark.parametrize("amount", [".nan", "-.inf", "1.0e999"])
def test_a_non_finite_amount_in_a_params_file_is_refused_with_exit_2(tmp_path, store, amount):
    (tmp_path / "p.yaml").write_text(f"vendor: ACME\namount: {amount}\n")
    assert "not a valid number" in refused(tmp_path, store, "--params-file", str(tmp_path / "p.yaml"))


def test_a_duplicate_param_flag_is_refused_with_exit_2(tmp_path, store):
    err = refused(tmp_path, store, "--param", "vendor=ACME", "--param", "amount=1", "--param", "amount=1000")
    assert "--param amount is given more than once" in err


def test_a_non_finite_answer_to_a_number_question_is_refused(tmp_path, store):
    root = tmp_path / "ask"
    root.mkdir()
    flow = {"schema": "openadapt-flow/bundle@1", "name": "ask", "screen": {"width": 100, "height": 100},
            "steps": [{"id": "how-much", "action": "ask_user", "question": "Amount?", "type": "number"}]}
    (root / "flow.yaml").write_text(yaml.safe_dump(flow))
    env = flow_env(tmp_path, FLOW_DECISION_KEY_FILE=str(tmp_path / "decision.key"))
    run_dir, where, flow = on(store, tmp_path)
    assert flow(["replay", str(root), "--run-dir", str(run_dir), *where], tmp_path, env=env).returncode == 3
    for bad in ("nan", "inf", "1e999"):
        r = flow(["answer", str(run_dir), bad], tmp_path, env=env)
        assert r.returncode == 2 and "not a valid number" in r.stderr, (bad, r.returncode, r.stderr)
    assert flow(["answer", str(run_dir), "12.50"], tmp_path, env=env).returncode == 0
    assert flow(["resume", str(run_dir)], tmp_path, env=env).returncode == 0
    cp = RunFiles(run_dir).json("checkpoint.json")
    assert "12.5" in json.dumps(cp)


def demo_replay(tmp_path: Path, app, vendor: str):
    env = flow_env(tmp_path, DEMO_DB_DSN=f"sqlite:///{app.db_path}")
    params = tmp_path / "params.json"
    params.write_text(json.dumps({"vendor": vendor, "amount": 12.5}))
    run_dir = tmp_path / "run"
    r = run_flow(["replay", str(BUNDLE_DIR), "--url", app.xvnc.url, "--durable", "--run-dir", str(run_dir),
                  "--params-file", str(params)], tmp_path, env=env)
    return run_dir, r


@pytest.mark.parametrize("vendor", ["Zürich Müller", "Ωmega 東京 ✓"])
def test_non_ascii_text_arrives_exactly_or_halts_before_the_write(tmp_path, demo_app, vendor):
    app = demo_app("normal")
    run_dir, r = demo_replay(tmp_path, app, vendor)
    st = json.loads((run_dir / "state.json").read_text())
    if r.returncode == 0:
        assert [(v, a) for _, v, a, _ in app.rows()] == [(vendor, 12.5)]  # typed as characters, not key codes
    else:  # what OCR cannot read back is not verified: a pause before Save, never a wrong row
        assert (r.returncode, st["transaction_outcome"]) == (3, "HALTED_BEFORE_EFFECT"), r.stderr
        assert app.rows() == []
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["params"]["vendor"] == vendor  # kept exactly, not escaped away
    if vendor == "Zürich Müller":
        assert r.returncode == 0, r.stderr + json.dumps(st)  # Latin-1 text is read back: this one must complete


def test_a_huge_string_param_halts_safely_with_a_bounded_message(tmp_path, demo_app):
    app = demo_app("normal")
    vendor = "A" * 5000  # far wider than the field: what is typed cannot be read back
    run_dir, r = demo_replay(tmp_path, app, vendor)
    st = json.loads((run_dir / "state.json").read_text())
    assert (r.returncode, st["transaction_outcome"]) == (3, "HALTED_BEFORE_EFFECT"), r.stderr
    assert app.rows() == []
    assert len(st["message"]) <= 400 and len(r.stderr) < 2000
    pending = json.loads((run_dir / "pending_escalation.json").read_text())
    assert len(pending["message"]) <= 400
    assert json.loads((run_dir / "manifest.json").read_text())["params"]["vendor"] == vendor
