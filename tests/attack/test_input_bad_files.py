"""Damaged inputs get the right exit code and one line of our own: bad bundle files are bad input (2), a damaged
run file is a refusal (6) for commands that act on it, and read-only `flow status` shows the damage (exit 0) — on
every store (a memory run's records damaged where the store holds them, its commands run in this process; a
PostgreSQL run's rows edited in SQL, its commands processes naming the store)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.attack.attack_support import STORES, RunFiles, forked_flow, pg_store
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
    flow = {"schema": "openadapt-flow/bundle@1", "name": "approve-me", "screen": {"width": 100, "height": 100},
            "steps": [{"id": "post", "action": "tool", "call": "json:dumps", "args": {"obj": 1}, "approval": "before"}]}
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
