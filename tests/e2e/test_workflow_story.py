"""The report-builder story (SPEC §14) end to end: `flow run-py` as real processes, killed and redeployed, posting
through the demo app on a private Xvnc; and code that waits on a run sees every terminal state instead of hanging."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import openadapt_flow
from openadapt_flow.store.fs.lease import try_lock, unlock
from tests.e2e.demo_harness import BUNDLE_DIR
from tests.support.cli import flow_env, run_flow
from tests.support.xserver import wait_until

pytestmark = pytest.mark.timeout(300)

STORY = '''
import os, time
from pathlib import Path
from openadapt_flow import tool, workflow


def _log(name, line):
    with open(os.environ[name], "a") as f:
        f.write(line + "\\n")


@tool
def fetch_report(quarter: str) -> dict:
    _log("STORY_TOOL_LOG", quarter)  # the tool counts its own calls
    return {"quarter": quarter, "vendor": "ACME Corp", "total": 1250.5}


@workflow
def report_builder(ctx, quarter: str):
    data = ctx.tool(fetch_report, quarter)
    if ctx.ask_user("Post to the ledger?", choices=["post", "hold"]) == "post":
        ctx.replay(os.environ["STORY_BUNDLE"], params={"vendor": data["vendor"], "amount": data["total"]})
    return data["total"]


@tool(consequential=True)
def post_ledger(total: float) -> str:
    _log("STORY_POSTS", str(total))
    return "posted"


@workflow
def guarded(ctx, quarter: str):
    data = ctx.tool(fetch_report, quarter)
    return ctx.domain(post_ledger, data["total"], human_in_the_loop=True)


@tool
def long_export(quarter: str) -> str:
    Path(os.environ["STORY_STARTED"]).write_text(quarter)
    deadline = time.monotonic() + 60
    while not Path(os.environ["STORY_RELEASE"]).exists() and time.monotonic() < deadline:
        time.sleep(0.02)  # a long-running job, released by the test
    return "exported " + quarter


@workflow
def nightly(ctx, quarter: str):
    ctx.tool(long_export, quarter)
    ctx.tool(fetch_report, quarter)
    return "done"
'''


@pytest.fixture
def ws(tmp_path):
    (tmp_path / "story_wf.py").write_text(STORY)
    return tmp_path


def env_for(ws: Path, db: Path | None = None, **extra: str) -> dict[str, str]:
    return flow_env(
        ws,
        FLOW_DECISION_KEY_FILE=str(ws / "decision.key"),
        STORY_TOOL_LOG=str(ws / "tool.log"),
        STORY_POSTS=str(ws / "posts.log"),
        STORY_BUNDLE=str(BUNDLE_DIR),
        STORY_STARTED=str(ws / "started"),
        STORY_RELEASE=str(ws / "release"),
        **({"DEMO_DB_DSN": f"sqlite:///{db}"} if db else {}),
        **extra,
    )


def lines(p: Path) -> list[str]:
    return p.read_text().splitlines() if p.exists() else []


def journal(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "journal.jsonl").read_text().splitlines()]


def holds_no_process(run: Path) -> bool:
    fd = try_lock(run)
    if fd is None:
        return False
    unlock(fd)
    return True


def test_report_builder_survives_kills_and_a_redeploy_and_posts_once(ws, demo_app):
    app = demo_app()
    run = ws / "runs" / "q3"
    env = env_for(ws, app.db_path)

    # 1. start; the process is SIGKILLed right after the tool's result is journaled
    r = run_flow(
        [
            "run-py",
            "story_wf:report_builder",
            "--arg",
            "quarter=Q3",
            "--url",
            app.xvnc.url,
            "--run-dir",
            str(run),
            "--json",
        ],
        ws,
        env=dict(env, FLOW_CRASH_AT="after:step_verified@fetch-report"),
    )
    assert r.returncode == -signal.SIGKILL, r.stderr
    assert lines(ws / "tool.log") == ["Q3"]
    assert openadapt_flow.wait(run, timeout=10).state == "INTERRUPTED"  # a dead owner is seen, not waited on forever

    # 2. a new process resumes; it dies again right after journaling its pause, before state.json says so
    r = run_flow(["resume", str(run)], ws, env=dict(env, FLOW_CRASH_AT="after:paused"))
    assert r.returncode == -signal.SIGKILL, r.stderr

    # 3. and again: now the question stands, and no process is held while it waits
    r = run_flow(["resume", str(run), "--json"], ws, env=env)
    assert r.returncode == 3, r.stderr
    w = openadapt_flow.wait(run, timeout=10)
    assert (w.state, w.paused_reason, w.exit_code) == ("PAUSED", "awaiting_user", 3)
    assert holds_no_process(run)
    pending = json.loads((run / "pending_escalation.json").read_text())
    assert pending["task"]["ask"]["choices"] == ["post", "hold"]
    assert lines(ws / "tool.log") == ["Q3"] and app.rows() == []

    # 4. the controller answers; the resume posts through the GUI and is killed right after the save is verified
    assert run_flow(["answer", str(run), "maybe"], ws, env=env).returncode == 2
    assert run_flow(["answer", str(run), "post"], ws, env=env).returncode == 0
    r = run_flow(["resume", str(run)], ws, env=dict(env, FLOW_CRASH_AT="after:step_verified@save"))
    assert r.returncode == -signal.SIGKILL, r.stderr
    assert [(v, a) for _, v, a, _ in app.rows()] == [("ACME Corp", 1250.5)]

    # 5. redeploy: the code is replaced (same calls), a new process rebuilds the backend from the manifest
    (ws / "story_wf.py").write_text("# redeployed build 2\n" + STORY)
    r = run_flow(["resume", str(run), "--json"], ws, env=env)
    assert r.returncode == 0, r.stderr + r.stdout
    done = openadapt_flow.wait(run, timeout=10)
    assert (done.state, done.exit_code, done.result) == ("COMPLETED", 0, 1250.5)

    assert lines(ws / "tool.log") == ["Q3"]  # the tool ran exactly once
    recs = journal(run)
    assert [r["step"] for r in recs if r["type"] == "asked"] == ["ask-user"]  # the question was asked once
    assert len(app.rows()) == 1  # the post landed once
    child = run / "children" / "replay-bundle"
    assert json.loads((child / "state.json").read_text())["state"] == "COMPLETED"
    assert [r["step"] for r in journal(child) if r["type"] == "action_dispatched"].count("save") == 1
    assert (run / "REPORT.md").is_file() and (child / "REPORT.md").is_file()


def test_operator_reject_on_a_domain_approval_ends_blocked_and_waiters_see_it(ws):
    run = ws / "runs" / "guarded"
    env = env_for(ws)
    r = run_flow(["run-py", "story_wf:guarded", "--arg", "quarter=Q1", "--run-dir", str(run)], ws, env=env)
    assert r.returncode == 3, r.stderr
    w = openadapt_flow.wait(run, timeout=10)
    assert (w.state, w.paused_reason) == ("PAUSED", "awaiting_approval")
    assert lines(ws / "posts.log") == []  # the domain action waits for approval before acting
    r = run_flow(
        ["approve", str(run), "--decision", "reject", "--operator", "alice", "--note", "wrong quarter"], ws, env=env
    )
    assert r.returncode == 0, r.stderr
    w = openadapt_flow.wait(run, timeout=10)
    assert (w.state, w.exit_code) == ("BLOCKED", 4)
    assert json.loads((run / "incident.json").read_text())["operator"] == "alice"
    assert run_flow(["resume", str(run)], ws, env=env).returncode == 4  # terminal: nothing to do
    assert run_flow(["wait", str(run)], ws, env=env).returncode == 4
    assert lines(ws / "posts.log") == [] and lines(ws / "tool.log") == ["Q1"]


def test_sigterm_interrupts_at_the_next_call_boundary_and_a_waiter_sees_it(ws):
    run = ws / "runs" / "nightly"
    env = env_for(ws)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "openadapt_flow",
            "run-py",
            "story_wf:nightly",
            "--arg",
            "quarter=Q2",
            "--run-dir",
            str(run),
        ],
        cwd=ws,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(lambda: (ws / "started").exists() or proc.poll() is not None, 30, "the long tool to start")
        seen: list[openadapt_flow.WaitResult] = []
        waiter = threading.Thread(target=lambda: seen.append(openadapt_flow.wait(run, timeout=60)))
        waiter.start()  # code waiting for COMPLETED, started while the run is RUNNING
        proc.send_signal(signal.SIGTERM)
        (ws / "release").write_text("go")
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 5, err
        waiter.join(timeout=30)
        assert [(s.state, s.exit_code) for s in seen] == [("INTERRUPTED", 5)]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    assert lines(ws / "tool.log") == []  # stopped at the boundary: the next call never started
    r = run_flow(["resume", str(run), "--json"], ws, env=env)
    assert r.returncode == 0, r.stderr
    assert lines(ws / "tool.log") == ["Q2"]
    assert [r["step"] for r in journal(run) if r["type"] == "action_dispatched"] == ["long-export", "fetch-report"]
