"""A console decision is answered before the run's reports are rendered, and the reports are still written after it
(as `flow approve` writes them); the run page reads the report's halt view, not its whole fold."""

from __future__ import annotations

import re
import threading

import pytest
from starlette.testclient import TestClient

import openadapt_flow.console.app as console_app
from openadapt_flow.console.decide import decide_from_form, refresh_reports
from openadapt_flow.errors import RefusedError
from openadapt_flow.report.model import build_report, halt_view
from openadapt_flow.runtime.operate.approval import approve
from openadapt_flow.runtime.operate.operators import add_operator
from openadapt_flow.runtime.start.runref import open_ref
from openadapt_flow.store import FilesystemStore
from tests.unit.runtime.test_durable import App, env, go, home, start  # noqa: F401

pytestmark = pytest.mark.timeout(120)


def _hidden(page: str, name: str) -> str:
    m = re.search(rf'name="{name}" value="([^"]*)"', page)
    assert m, f"no {name} on the page"
    return m.group(1)


class _Order:
    """ASGI middleware noting when the response's last body part is sent."""

    def __init__(self, app, events: list[str]) -> None:
        self.app, self.events = app, events

    async def __call__(self, scope, receive, send):
        async def noting(message):
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body"):
                self.events.append(f"answered {scope.get('path')}")

        await self.app(scope, receive, noting)


def _console(tmp_path, events: list[str]):
    store = FilesystemStore(tmp_path)
    cred = add_operator(store, "alice")
    client = TestClient(_Order(console_app.create_app(store, report_grace_s=0.0), events), base_url="http://127.0.0.1")
    r = client.post(
        "/login",
        data={"csrf": _hidden(client.get("/login").text, "csrf"), "name": "alice", "credential": cred},
        follow_redirects=False,
    )
    assert r.status_code == 303
    return client


def test_the_decision_is_answered_first_and_the_report_is_written_after(tmp_path, env, monkeypatch):
    out = start(tmp_path, App(env, refute=True))
    run = open_ref(out.run_dir)
    run_id = run.manifest()["run_id"]
    assert not (out.run_dir / "report.html").exists()
    events: list[str] = []
    real = console_app.refresh_reports

    def noted(*a):
        events.append("render")
        return real(*a)

    monkeypatch.setattr(console_app, "refresh_reports", noted)
    client = _console(tmp_path, events)
    page = client.get(f"/runs/{run_id}").text
    assert 'id="halt-frame"' in page
    form = {"csrf": _hidden(page, "csrf"), "pause_id": _hidden(page, "pause_id"), "decision": "continue"}
    events.clear()
    r = client.post(f"/runs/{run_id}/decide", data=form, follow_redirects=False)
    assert r.status_code == 303 and "recorded" in r.headers["location"]
    assert events == [f"answered /runs/{run_id}/decide", "render"]  # the operator is not kept waiting for the render
    html = (out.run_dir / "report.html").read_text()
    report = build_report(run)
    assert [(d["decision"], d["operator"], d.get("unused")) for d in report["decisions"]] == [
        ("continue", "alice", True)
    ]
    assert "alice" in html and (out.run_dir / "report.json").exists() and (out.run_dir / "REPORT.md").exists()


def test_a_report_is_not_rendered_over_a_run_that_moved_on(tmp_path, env):
    out = start(tmp_path, App(env, refute=True))
    run = open_ref(out.run_dir)
    stamp = run.stamp()
    approve(run, "continue", "alice")  # the run moved on after the stamp was taken (as a resume would move it)
    assert refresh_reports(run, stamp, grace_s=0.0) is False and not (out.run_dir / "report.html").exists()
    assert refresh_reports(run, run.stamp(), grace_s=0.0) is True and (out.run_dir / "report.html").exists()


def test_a_resume_that_takes_the_decision_up_within_the_grace_writes_the_report_itself(tmp_path, env):
    app = App(env, refute=True)
    out = start(tmp_path, app)
    run = open_ref(out.run_dir)
    app.refute = False
    app.show(home())
    approve(run, "continue", "alice")
    stamp = run.stamp()
    moved: list[bool] = []
    t = threading.Thread(target=lambda: moved.append(refresh_reports(run, stamp, grace_s=60.0)))
    t.start()
    assert go(out.run_dir, app).state == "COMPLETED"  # the resume moves the run on: the console leaves the report
    t.join(60)
    assert moved == [False] and not (out.run_dir / "report.html").exists()


def test_the_halt_view_is_the_reports_halt(tmp_path, env):
    out = start(tmp_path, App(env, refute=True))
    run = open_ref(out.run_dir)
    view = halt_view(run)
    assert view is not None and view["step"] == "post" and view == build_report(run)["halt"]


def test_a_console_decision_that_comes_too_late_is_told_who_decided(tmp_path, env):
    """Issue 34 (5): the loser of a race on the console is told the winner's name, whether the pause is still open
    (its approval holds the winner's vote) or already used by a resume (the pause is closed)."""
    app = App(env, refute=True)
    out = start(tmp_path, app)
    store, run = FilesystemStore(tmp_path), open_ref(out.run_dir)
    pause_id = run.read_pending()["pause_id"]
    assert decide_from_form(store, run, "alice", {"pause_id": pause_id, "decision": "continue"}).summary.startswith(
        "recorded"
    )
    for decision in ("reject", "continue"):
        with pytest.raises(RefusedError, match=r"already decided by alice at \S+: continue"):
            decide_from_form(store, run, "bob", {"pause_id": pause_id, "decision": decision})
    app.refute = False
    app.show(home())
    assert go(out.run_dir, app).state == "COMPLETED"  # the decision is used and the pause closed
    with pytest.raises(RefusedError, match=rf"pause {pause_id} is already decided by alice at \S+: continue"):
        decide_from_form(store, run, "bob", {"pause_id": pause_id, "decision": "continue"})
