"""Issue 25, items 3 and 4 on the console: each decision button says what it does (escalate included), a recorded
decision's message says what happens next, and the page links the run's report, which the console serves."""

from __future__ import annotations

import html
import re
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from starlette.testclient import TestClient

from openadapt_flow.console.app import create_app
from openadapt_flow.report.meanings import DECISIONS
from openadapt_flow.runtime.operate.approval import DECISION_NAMES
from openadapt_flow.runtime.operate.operators import add_operator
from openadapt_flow.runtime.start.runref import open_ref
from openadapt_flow.store import FilesystemStore
from tests.unit.report.report_runs import ambiguous_run, run_env

pytestmark = pytest.mark.timeout(120)


def _hidden(page: str, name: str) -> str:
    m = re.search(rf'name="{name}" value="([^"]*)"', page)
    assert m, f"no {name} on the page"
    return m.group(1)


def test_every_decision_has_its_words():
    assert tuple(DECISIONS) == DECISION_NAMES


def test_buttons_say_what_they_do_and_a_decision_says_what_happens_next(tmp_path, monkeypatch):
    run_env(tmp_path, monkeypatch)
    run_dir = Path(ambiguous_run(tmp_path).run_dir)
    run_id = open_ref(str(run_dir)).manifest()["run_id"]
    store = FilesystemStore(tmp_path)
    cred = add_operator(store, "alice")
    client = TestClient(create_app(store, report_grace_s=0.0), base_url="http://127.0.0.1")
    r = client.post(
        "/login",
        data={"csrf": _hidden(client.get("/login").text, "csrf"), "name": "alice", "credential": cred},
        follow_redirects=False,
    )
    assert r.status_code == 303
    page = client.get(f"/runs/{run_id}").text
    for d in ("continue", "reject", "escalate"):
        button = re.search(rf'<button id="decide-{d}"[^>]*title="([^"]*)"', page)
        assert button and button.group(1) == DECISIONS[d].replace("'", "&#39;"), (d, page)
    assert f'href="/runs/{run_id}/report"' in page
    report = client.get(f"/runs/{run_id}/report")
    assert report.status_code == 200 and "<h1>Run " in report.text
    form = {"csrf": _hidden(page, "csrf"), "pause_id": _hidden(page, "pause_id"), "decision": "continue"}
    r = client.post(f"/runs/{run_id}/decide", data=form, follow_redirects=False)
    assert r.status_code == 303
    query = parse_qs(urlsplit(r.headers["location"]).query)
    assert query["msg"] == ["recorded: continue by alice"]
    (after,) = query["next"]
    assert after.startswith("a `flow worker` watching this run's store picks it up")
    assert f"`flow resume {run_dir} --require-approval`" in after
    shown = client.get(r.headers["location"]).text
    assert 'id="msg-report"' in shown and "Next: a `flow worker` watching this run" in html.unescape(shown)


def test_a_file_planted_as_the_report_is_not_served(tmp_path, monkeypatch):
    run_env(tmp_path, monkeypatch)
    run_dir = Path(ambiguous_run(tmp_path).run_dir)
    run_id = open_ref(str(run_dir)).manifest()["run_id"]
    store = FilesystemStore(tmp_path)
    cred = add_operator(store, "alice")
    client = TestClient(create_app(store, report_grace_s=0.0), base_url="http://127.0.0.1")
    client.post(
        "/login", data={"csrf": _hidden(client.get("/login").text, "csrf"), "name": "alice", "credential": cred}
    )
    secret = tmp_path / "decision.key"
    secret.write_text("the decision key")
    (run_dir / "report.html").unlink()
    (run_dir / "report.html").symlink_to(secret)
    r = client.get(f"/runs/{run_id}/report")
    assert r.status_code == 404 and "decision key" not in r.text
