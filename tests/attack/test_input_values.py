"""Odd values through the real path: non-finite numbers and duplicate flags are refused before anything runs;
non-ASCII and huge strings either arrive exactly or halt safely, never as a wrong row or a giant error line.

The refusals and the number answer run on every store (`store`: a `flow` process on a run directory or naming a
PostgreSQL schema, or commands of this process on its memory store). The typed-text cases stay on the real app on Xvnc: what they test is how a real
toolkit's text field shows non-ASCII and overlong text to OCR, which the recorded fixture renders by its own rules."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
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


def refused(tmp_path: Path, store: Store, *args: str, url: str | None = NOWHERE) -> str:
    run_dir, where, flow = on(store, tmp_path)
    # the demo's system of record is named (its DSN set), so only the input under test can be what is refused
    r = flow(
        [
            "replay",
            str(BUNDLE_DIR),
            *(["--url", url] if url else []),
            "--durable",
            "--run-dir",
            str(run_dir),
            *where,
            *args,
        ],
        tmp_path,
        env=flow_env(tmp_path, DEMO_DB_DSN=f"sqlite:///{tmp_path / 'invoices.db'}"),
    )
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr
    assert not RunFiles(run_dir).exists("journal.jsonl") and not RunFiles(run_dir).exists(
        "manifest.json"
    )  # no run left
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
    flow = {
        "schema": "openadapt-flow/bundle@1",
        "name": "ask",
        "screen": {"width": 100, "height": 100},
        "steps": [{"id": "how-much", "action": "ask_user", "question": "Amount?", "type": "number"}],
    }
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
    r = run_flow(
        [
            "replay",
            str(BUNDLE_DIR),
            "--url",
            app.xvnc.url,
            "--durable",
            "--run-dir",
            str(run_dir),
            "--params-file",
            str(params),
        ],
        tmp_path,
        env=env,
    )
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


# --- issue 34 (finding 6): every one checked before any input, one line, exit 2, no file content echoed ---

CHILD_MEMORY = 1536 * 1024 * 1024  # bytes of address space a `flow` process may take in the bounded-read test
LEAK = "SECRET-HASH-q7Zx"  # what a file the user should not see holds: never in an error line


@pytest.mark.parametrize(
    "content",
    [
        f"root:$6${LEAK}$:20228:0:99999:7:::\ndaemon:*:20228:0:99999:7:::\n",  # /etc/shadow: its first line was the error
        f"vendor: *{LEAK}\n",  # an alias the parser names
        f"vendor: !!python/name:{LEAK}\n",  # a tag the parser names
        f"{LEAK}: 1\namount: 2\n",  # a key that is no param name
    ],
)
def test_a_params_file_error_names_the_file_and_line_never_its_content(tmp_path, store, content):
    secret = tmp_path / "shadow"
    secret.write_text(content)
    err = refused(tmp_path, store, "--params-file", str(secret))
    assert f"{secret}:" in err and LEAK not in err and "20228" not in err, err


def _capped_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY, CHILD_MEMORY))


def test_params_file_reads_are_bounded(tmp_path):
    """`--params-file /dev/zero` was read until MemoryError. The `flow` process runs with its address space capped
    (a process of its own, whatever the store: an unbounded read must fail this test, never take the machine's
    memory)."""
    run = tmp_path / "run"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "openadapt_flow",
            "replay",
            str(BUNDLE_DIR),
            "--url",
            NOWHERE,
            "--run-dir",
            str(run),
            "--params-file",
            "/dev/zero",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env=flow_env(tmp_path, DEMO_DB_DSN=f"sqlite:///{tmp_path / 'invoices.db'}"),
        preexec_fn=_capped_memory,
    )
    assert r.returncode == 2, (r.returncode, r.stderr[-500:])
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr[-500:]
    assert "/dev/zero" in r.stderr and "1024 KiB limit" in r.stderr and not run.exists()


def test_a_params_file_nested_100000_deep_is_bad_input_not_a_crash(tmp_path, store):
    deep = tmp_path / "deep.yaml"
    deep.write_text("[" * 100_000)  # exit 70, a RecursionError's traceback, before
    assert "nested" in refused(tmp_path, store, "--params-file", str(deep))


@pytest.mark.parametrize("url", ["vnc://" + "h" * 100_000, "vnc://ho\x01st:5900"])
def test_a_malformed_backend_host_is_bad_input_not_a_retryable_failure(tmp_path, store, url):
    err = refused(tmp_path, store, "--param", "vendor=ACME", "--param", "amount=1", url=url)  # exit 75 before
    assert "backend" in err and len(err) < 400 and "h" * 100 not in err


def test_a_nul_in_a_configured_host_is_bad_input(tmp_path, store):
    cfg = tmp_path / "deploy.yaml"
    cfg.write_text('schema: openadapt-flow/config@1\nbackend: {kind: vnc, host: "desk\\0.example"}\n')
    err = refused(tmp_path, store, "--param", "vendor=ACME", "--param", "amount=1", "--config", str(cfg), url=None)
    assert "control character (NUL" in err


@pytest.mark.parametrize("how", ["esc-flag", "nul-file", "too-long-file"])
def test_an_untypeable_or_overlong_param_is_refused_before_any_input(tmp_path, demo, how):
    """Refused when the params are bound — before this, after the first click had reached the app."""
    given = {
        "esc-flag": ["--param", "vendor=ACME\x1b[2J"],
        "nul-file": ["--params-file", str(tmp_path / "p.json")],
        "too-long-file": ["--params-file", str(tmp_path / "p.json")],
    }[how]
    vendor = "AC\x00ME" if how == "nul-file" else "A" * 20_000  # 12 MB was typed for 37 s: the cap is 10,000
    (tmp_path / "p.json").write_text(json.dumps({"vendor": vendor, "amount": 1}))
    run = demo.ref("run")
    r = demo.flow(
        [
            "replay",
            demo.bundle,
            "--url",
            demo.url,
            "--durable",
            "--run-dir",
            run,
            *demo.store_args(),
            *given,
            *(["--param", "amount=1"] if how == "esc-flag" else []),
        ]
    )
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr
    assert "param vendor" in r.stderr and ("ESC" in r.stderr or "NUL" in r.stderr or "10000" in r.stderr), r.stderr
    assert demo.on_start_screen() and demo.rows() == []  # nothing reached the desktop
    assert not RunFiles(run).exists("manifest.json")
