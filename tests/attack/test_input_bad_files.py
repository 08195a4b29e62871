"""Damaged inputs get the right exit code and one line of our own: bad bundle files are bad input (2), a damaged
run file is a refusal (6) for commands that act on it, and read-only `flow status` shows the damage (exit 0)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

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


@pytest.fixture
def paused(tmp_path) -> tuple[Path, dict]:
    """A durable run paused awaiting approval (an `approval: before` tool step: no desktop needed)."""
    root = tmp_path / "ab"
    root.mkdir()
    flow = {"schema": "openadapt-flow/bundle@1", "name": "approve-me", "screen": {"width": 100, "height": 100},
            "steps": [{"id": "post", "action": "tool", "call": "json:dumps", "args": {"obj": 1}, "approval": "before"}]}
    (root / "flow.yaml").write_text(yaml.safe_dump(flow))
    env = flow_env(tmp_path, FLOW_DECISION_KEY_FILE=str(tmp_path / "decision.key"))
    run_dir = tmp_path / "run"
    r = run_flow(["replay", str(root), "--run-dir", str(run_dir)], tmp_path, env=env)
    assert r.returncode == 3, r.stderr
    return run_dir, env


@pytest.mark.parametrize("content", ["garbage", "[1, 2]", ""])
def test_a_damaged_state_file_is_shown_by_status_and_refused_by_resume_and_approve(tmp_path, paused, content):
    run_dir, env = paused
    (run_dir / "state.json").write_text(content)
    st = run_flow(["status", str(run_dir), "--json"], tmp_path, env=env)
    assert st.returncode == 0, st.stderr  # read-only: shows the problem
    info = json.loads(st.stdout)
    assert info["state"] == "UNREADABLE" and "state.json" in info["message"]
    plain = run_flow(["status", str(run_dir)], tmp_path, env=env)
    assert plain.returncode == 0 and "UNREADABLE" in plain.stdout
    for args in (["resume", str(run_dir)], ["approve", str(run_dir), "--operator", "ops"]):
        r = run_flow(args, tmp_path, env=env)
        assert r.returncode == 6, (args, r.returncode, r.stderr)
        assert "state.json" in one_error_line(r)
    assert not (run_dir / "approval.json").exists()


def test_a_decision_on_a_garbage_checkpoint_is_refused(tmp_path, paused):
    run_dir, env = paused
    (run_dir / "checkpoint.json").write_text('{"seq": garb')
    r = run_flow(["approve", str(run_dir), "--decision", "continue", "--operator", "ops"], tmp_path, env=env)
    assert r.returncode == 6, r.stderr
    assert "checkpoint" in one_error_line(r)
    assert not (run_dir / "approval.json").exists()  # nothing recorded
    # without the damage (this pause never had a checkpoint) the same decision is taken: the refusal was about it
    (run_dir / "checkpoint.json").unlink()
    ok = run_flow(["approve", str(run_dir), "--decision", "continue", "--operator", "ops"], tmp_path, env=env)
    assert ok.returncode == 0, ok.stderr
