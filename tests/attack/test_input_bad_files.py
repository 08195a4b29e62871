"""Damaged inputs get the right exit code and one line of our own: bad bundle files are bad input (2), a damaged
run file is a refusal (6) for commands that act on it, and read-only `flow status` shows the damage (exit 0) — on
every store (a memory run's records damaged where the store holds them, its commands run in this process; a
PostgreSQL run's rows edited in SQL, its commands processes naming the store)."""

from __future__ import annotations

import json
import resource
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.attack.attack_support import STORES, RunFiles, forked_flow, pg_store
from tests.e2e.demo_harness import BUNDLE_DIR
from tests.support import memcrash
from tests.support.bundles import minimal_flow, write_bundle
from tests.support.cli import flow_env, run_flow

pytestmark = pytest.mark.timeout(120)


def one_error_line(r) -> str:
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in r.stderr, r.stderr
    return lines[0]


def test_a_template_symlink_loop_is_bad_input(tmp_path):
    root = write_bundle(tmp_path / "b", minimal_flow())
    (root / "templates/ok.png").unlink()
    (root / "templates/ok.png").symlink_to("ok.png")
    r = run_flow(["validate", str(root)], tmp_path)
    assert r.returncode == 2, r.stderr
    assert "symlink loop" in one_error_line(r)


@pytest.mark.parametrize("damage", ["truncated", "bad-crc"])
def test_a_broken_png_template_is_our_one_line_and_no_decoder_warning(tmp_path, damage):
    root = write_bundle(tmp_path / "b", minimal_flow())
    png = root / "templates/ok.png"
    data = bytearray(png.read_bytes())
    if damage == "truncated":
        data = data[: len(data) // 2]
    else:
        i = data.index(b"IDAT") + 6
        data[i] ^= 0xFF  # one byte of image data flipped: the chunk's checksum no longer matches
    png.write_bytes(bytes(data))
    r = run_flow(["validate", str(root)], tmp_path)
    assert r.returncode == 2, r.stderr
    assert "is not a readable PNG" in one_error_line(r)  # and nothing from OpenCV or libpng


@pytest.fixture(params=STORES)
def paused(request, tmp_path, monkeypatch) -> tuple[Path, dict, Any]:
    """A durable run paused awaiting approval (an `approval: before` tool step: no desktop needed), on each store:
    (run, env, flow) where `flow(args, cwd, env=…)` runs a command as the store needs (a process, or this one); on
    PostgreSQL a forked process naming a schema of the session's server, its rows damaged in SQL."""
    root = tmp_path / "ab"
    root.mkdir()
    flow = {
        "schema": "openadapt-flow/bundle@1",
        "name": "approve-me",
        "screen": {"width": 100, "height": 100},
        "steps": [{"id": "post", "action": "tool", "call": "json:dumps", "args": {"obj": 1}, "approval": "before"}],
    }
    (root / "flow.yaml").write_text(yaml.safe_dump(flow))
    env = flow_env(tmp_path, FLOW_DECISION_KEY_FILE=str(tmp_path / "decision.key"))
    memory = request.param == "memory"
    run_dir = Path(f"memory:{tmp_path.name}-run") if memory else tmp_path / "run"
    flow = memcrash.flow if memory else run_flow
    where = ["--store", "memory:"] if memory else []
    if request.param == "postgres":
        spec, env["PGPASSWORD"] = pg_store(request, monkeypatch)
        run_dir = Path("pg:run")

        def flow(args: list[str], cwd: Path, env: dict[str, str]) -> Any:
            return forked_flow([*args, "--store", spec], cwd, env)

    r = flow(["replay", str(root), "--run-dir", str(run_dir), *where], tmp_path, env=env)
    assert r.returncode == 3, r.stderr
    return run_dir, env, flow


@pytest.mark.parametrize("content", ["garbage", "[1, 2]", ""])
def test_a_damaged_state_file_is_shown_by_status_and_refused_by_resume_and_approve(tmp_path, paused, content):
    run_dir, env, run_flow = paused
    RunFiles(run_dir).write("state.json", content.encode())
    st = run_flow(["status", str(run_dir), "--json"], tmp_path, env=env)
    assert st.returncode == 0, st.stderr  # read-only: shows the problem
    info = json.loads(st.stdout)
    assert info["state"] == "UNREADABLE" and "state.json" in info["message"]
    plain = run_flow(["status", str(run_dir)], tmp_path, env=env)
    assert plain.returncode == 0 and "UNREADABLE" in plain.stdout
    for args in (["resume", str(run_dir)], ["approve", str(run_dir), "--decision", "continue", "--operator", "ops"]):
        r = run_flow(args, tmp_path, env=env)
        assert r.returncode == 6, (args, r.returncode, r.stderr)
        assert "state.json" in one_error_line(r)
    assert not RunFiles(run_dir).exists("approval.json")


def test_a_decision_on_a_garbage_checkpoint_is_refused(tmp_path, paused):
    run_dir, env, run_flow = paused
    RunFiles(run_dir).write("checkpoint.json", b'{"seq": garb')
    r = run_flow(["approve", str(run_dir), "--decision", "continue", "--operator", "ops"], tmp_path, env=env)
    assert r.returncode == 6, r.stderr
    assert "checkpoint" in one_error_line(r)
    assert not RunFiles(run_dir).exists("approval.json")  # nothing recorded
    # without the damage (this pause never had a checkpoint) the same decision is taken: the refusal was about it
    RunFiles(run_dir).delete("checkpoint.json")
    ok = run_flow(["approve", str(run_dir), "--decision", "continue", "--operator", "ops"], tmp_path, env=env)
    assert ok.returncode == 0, ok.stderr


# --- issue 34 (finding 6): bad files and paths, each one line, the right exit code, no traceback, no content echoed ---

NOWHERE = "vnc://127.0.0.1:1"  # exit 2, not 75: refused before any connection, so nothing can have been sent
LEAK = "SECRET-HASH-q7Zx"
CHILD_MEMORY = 1536 * 1024 * 1024  # bytes of address space the `flow` process of a bounded-read test may take
SHADOW = f"root:$6${LEAK}$:20228:0:99999:7:::\ndaemon:*:20228:0:99999:7:::\n"
TOOL_FLOW = {
    "schema": "openadapt-flow/bundle@1",
    "name": "tool",
    "screen": {"width": 100, "height": 100},
    "steps": [{"id": "note", "action": "tool", "call": "json:dumps", "args": {"obj": 1}}],
}


def test_a_nul_byte_in_a_template_path_is_bad_input(tmp_path):
    flow = minimal_flow()
    flow["steps"][0]["target"]["template"] = "templates/ok\x00.png"
    root = write_bundle(tmp_path / "b", flow)
    for args in (["validate", str(root)], ["replay", str(root), "--url", NOWHERE, "--param", "vendor=ACME"]):
        r = run_flow(args, tmp_path)
        assert r.returncode == 2, (args, r.returncode, r.stderr)  # exit 70, "embedded null byte", before
        line = one_error_line(r)
        assert "flow.yaml:" in line and "control character (NUL" in line
    assert not (tmp_path / "runs").exists()


def tool_bundle(tmp_path: Path) -> Path:
    root = tmp_path / "tool"
    root.mkdir()
    (root / "flow.yaml").write_text(yaml.safe_dump(TOOL_FLOW))
    return root


@pytest.mark.parametrize(
    "run_dir", ["x" * 5000, "deep/" + "y" * 300 + "/run", "/proc/self/run", "/proc/flow-run", "/sys/flow-run"]
)
def test_a_run_dir_that_cannot_hold_a_run_is_bad_input(tmp_path, run_dir):
    r = run_flow(["replay", str(tool_bundle(tmp_path)), "--run-dir", run_dir], tmp_path)
    assert r.returncode == 2, (r.returncode, r.stderr[-300:])  # 70 (ENAMETOOLONG), or a run that failed, before
    line = one_error_line(r)
    assert "run directory" in line and len(line) < 400
    assert not (tmp_path / "deep").exists() and not (tmp_path / ("x" * 200)[:200]).exists()


@pytest.fixture
def unwritable(tmp_path) -> Path:
    """A folder no one may create anything in, root included (the immutable attribute: EPERM)."""
    folder = tmp_path / "locked"
    folder.mkdir()
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode:
        pytest.skip("this filesystem cannot make a folder immutable (chattr +i), the only EPERM root cannot pass")
    try:
        yield folder
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=True)


@pytest.mark.parametrize("where", ["--run-dir", "runs root"])
def test_a_run_store_that_may_not_be_written_is_a_storage_fault(tmp_path, unwritable, where):
    bundle = tool_bundle(tmp_path)
    if where == "--run-dir":
        r = run_flow(["replay", str(bundle), "--run-dir", str(unwritable / "run")], tmp_path)
    else:  # the default runs/ under a working directory that may not be written
        r = run_flow(["replay", str(bundle)], unwritable, env=flow_env(tmp_path))
    assert r.returncode == 5, (r.returncode, r.stderr)  # exit 70, a PermissionError, before
    line = one_error_line(r)
    assert "nothing was sent" in line and "locked" in line
    assert list(unwritable.iterdir()) == []


@pytest.mark.parametrize("content", [SHADOW, "[" * 100_000 + "\n", f'{{"{LEAK}": [1]}}\n'])
def test_an_items_file_error_is_one_line_per_problem_and_never_its_content(tmp_path, content):
    items = tmp_path / "items.jsonl" if content.startswith(("[", "{")) else tmp_path / "shadow"
    items.write_text(content)
    r = run_flow(
        ["batch", str(BUNDLE_DIR), "--items", str(items), "--url", NOWHERE, "--runs", str(tmp_path / "runs")], tmp_path
    )
    assert r.returncode == 2, (r.returncode, r.stderr[-300:])
    assert "Traceback" not in r.stderr and LEAK not in r.stderr and "20228" not in r.stderr, r.stderr
    assert all(line.startswith(f"error: {items}:") for line in r.stderr.strip().splitlines()), r.stderr
    assert not (tmp_path / "runs").exists()


def test_items_file_reads_are_bounded(tmp_path):
    """Read until memory ran out before: the `flow` process runs with its address space capped, so an unbounded read
    fails this test instead of taking the machine's memory."""

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY, CHILD_MEMORY))

    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "openadapt_flow",
            "batch",
            str(BUNDLE_DIR),
            "--items",
            "/dev/zero",
            "--url",
            NOWHERE,
            "--runs",
            str(tmp_path / "runs"),
        ],
        cwd=tmp_path,
        env=flow_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=cap,
    )
    assert r.returncode == 2 and "limit" in one_error_line(r), (r.returncode, r.stderr[-300:])


@pytest.mark.parametrize(
    "option, content", [("--params-file", SHADOW), ("--config", f"schema: openadapt-flow/config@1\n{LEAK}: 1\n")]
)
def test_a_file_that_is_not_a_config_or_params_file_is_never_echoed(tmp_path, option, content):
    secret = tmp_path / "shadow"
    secret.write_text(content)
    r = run_flow(["replay", str(tool_bundle(tmp_path)), option, str(secret)], tmp_path)
    assert r.returncode == 2, r.stderr
    line = one_error_line(r)
    assert str(secret) in line and LEAK not in line and "20228" not in line
