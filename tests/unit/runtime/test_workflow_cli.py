"""`flow run-py` bad input: one line, exit 2, no traceback, no run directory."""

from __future__ import annotations

import pytest

from tests.support.cli import flow_env, run_flow
from tests.unit.runtime.workflow_support import SOURCE

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def ws(tmp_path):
    (tmp_path / "wf_mod.py").write_text(
        SOURCE
        + '''

@workflow
def typed(ctx, n: int, ok: bool = False, tags: list = None):
    return [n, ok, tags]
'''
    )
    return tmp_path


@pytest.mark.parametrize(
    "args, message",
    [
        (["no_such_module_zz:f"], "cannot import no_such_module_zz"),
        (["wf_mod:nope"], "wf_mod has no nope"),
        (["wf_mod"], "expected module:function"),
        (["wf_mod:fetch"], "is not a @workflow"),
        (["wf_mod:report", "--arg", "quarter"], "expected NAME=VALUE"),
        (["wf_mod:report", "--arg", "quarter=Q1", "--arg", "colour=red"], "takes no argument 'colour'"),
        (["wf_mod:report"], "needs --arg quarter=VALUE"),
        (["wf_mod:typed", "--arg", "n=three"], "--arg n='three' is not a valid int"),
        (["wf_mod:typed", "--arg", "n=3", "--arg", "ok=maybe"], "is not a valid bool"),
        (["wf_mod:report", "--arg", "quarter=Q1", "--url", "vnc://"], "bad backend URL 'vnc://'"),
        # unreachable: found before any run dir; the environment, not the input (exit 75, EX_TEMPFAIL: a retry may succeed)
        (["wf_mod:report", "--arg", "quarter=Q1", "--url", "vnc://127.0.0.1:1"], "127.0.0.1:1"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(ws, args, message):
    r = run_flow(["run-py", *args, "--run-dir", str(ws / "run")], ws, env=flow_env(ws, WF_LOG=str(ws / "wf.log")))
    assert r.returncode == (75 if "127.0.0.1:1" in args[-1] else 2), r.stdout + r.stderr
    assert message in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert not (ws / "run").exists()


def test_args_are_coerced_to_the_annotations(ws):
    env = flow_env(ws, WF_LOG=str(ws / "wf.log"), FLOW_DECISION_KEY_FILE=str(ws / "dk"))
    r = run_flow(
        [
            "run-py",
            "wf_mod:typed",
            "--arg",
            "n=3",
            "--arg",
            "ok=yes",
            "--arg",
            'tags=["a"]',
            "--run-dir",
            str(ws / "run"),
            "--json",
        ],
        ws,
        env=env,
    )
    assert r.returncode == 0, r.stderr
    r = run_flow(["wait", str(ws / "run"), "--json"], ws, env=env)
    assert r.returncode == 0
    import json

    returned = [
        json.loads(line)["data"]["result"]
        for line in (ws / "run" / "journal.jsonl").read_text().splitlines()
        if json.loads(line)["type"] == "workflow_returned"
    ]
    assert returned == [[3, True, ["a"]]]
