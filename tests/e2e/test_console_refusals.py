"""What the console refuses (SPEC §20), each over real HTTP to `flow console`: no session → no page, frame or
decision; a POST without or with a wrong CSRF token; a disabled operator; a replayed decision; a decision for another
run or an expired pause; too many failed logins. Nothing refused is recorded."""

from __future__ import annotations

import json
import re
import time
from contextlib import ExitStack
from datetime import datetime

import httpx
import pytest

from tests.e2e.test_console_browser import Desk

pytestmark = pytest.mark.timeout(300)


def hidden(page: str, name: str) -> str:
    m = re.search(rf'name="{name}" value="([^"]*)"', page)
    assert m, f"no {name} in the page"
    return m.group(1)


def logged_in(desk: Desk, name: str, credential: str) -> httpx.Client:
    client = httpx.Client(base_url=desk.url, timeout=30)
    form = client.get("/login").text
    r = client.post("/login", data={"csrf": hidden(form, "csrf"), "name": name, "credential": credential})
    assert r.status_code == 303, r.text
    cookie = r.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie and "max-age=" in cookie and "secure" not in cookie
    return client


def decision_form(client: httpx.Client, run_id: str, decision: str) -> dict:
    page = client.get(f"/runs/{run_id}").text
    return {"csrf": hidden(page, "csrf"), "pause_id": hidden(page, "pause_id"), "decision": decision}


def test_refusals_record_nothing(tmp_path):
    with ExitStack() as stack:
        desk = Desk(tmp_path, stack)
        cred = desk.operator("alice")
        a, b = desk.pause("a"), desk.pause("b")
        approval = {n: tmp_path / "runs" / n / "approval.json" for n in "ab"}
        frame = f"/frame/{a}?rel=frames/halt-save-raw.png"

        anon = httpx.Client(base_url=desk.url, timeout=30)  # no session: no page, no frame, no decision
        assert anon.get("/").status_code == 303 and anon.get(f"/runs/{a}").headers["location"] == "/login"
        assert anon.get(frame).status_code == 401 and anon.get(f"/events?run={a}").status_code == 401
        pause_a = desk.pending("a")["pause_id"]
        assert (
            anon.post(f"/runs/{a}/decide", data={"pause_id": pause_a, "decision": "reject", "csrf": "x"}).status_code
            == 401
        )

        alice = logged_in(desk, "alice", cred)
        got = alice.get(frame)
        assert got.status_code == 200 and got.headers["content-type"] == "image/png"
        assert alice.get(f"/frame/{a}?rel=manifest.json").status_code == 404  # frames only
        form = decision_form(alice, a, "reject")
        assert alice.post(f"/runs/{a}/decide", data={k: v for k, v in form.items() if k != "csrf"}).status_code == 403
        assert alice.post(f"/runs/{a}/decide", data={**form, "csrf": form["csrf"][:-1] + "x"}).status_code == 403
        # a's pause sent to b
        r = alice.post(f"/runs/{b}/decide", data=form)
        assert r.status_code == 409 and "not open on this run" in r.text
        assert not approval["a"].exists() and not approval["b"].exists()

        form_b = decision_form(alice, b, "reject")  # recorded once; the same form again is refused
        assert alice.post(f"/runs/{b}/decide", data=form_b).status_code == 303
        assert json.loads((tmp_path / "runs" / "b" / "state.json").read_text())["message"] == "rejected by alice"
        r = alice.post(f"/runs/{b}/decide", data=form_b)
        assert r.status_code == 409 and "already decided by alice" in r.text and "nothing recorded" in r.text

        assert desk.flow("operator", "disable", "alice", "--root", "runs").returncode == 0  # the session ends with it
        assert alice.post(f"/runs/{a}/decide", data=form).status_code == 401
        assert alice.get(f"/runs/{a}").status_code == 303
        login = httpx.Client(base_url=desk.url, timeout=30)
        r = login.post(
            "/login", data={"csrf": hidden(login.get("/login").text, "csrf"), "name": "alice", "credential": cred}
        )
        assert r.status_code == 401 and "disabled" in r.text
        assert not approval["a"].exists()

        events = [
            e["event"] for e in map(json.loads, (tmp_path / "runs" / "operator_audit.jsonl").read_text().splitlines())
        ]
        assert events == ["operator_added", "login", "decision", "operator_disabled", "login_failed"]


def test_expired_pause_and_login_rate_limit(tmp_path):
    with ExitStack() as stack:
        desk = Desk(tmp_path, stack, {"runtime": {"pause_ttl_s": 5}})
        cred = desk.operator("bob")
        run_id = desk.pause("e")
        bob = logged_in(desk, "bob", cred)
        form = decision_form(bob, run_id, "continue")
        expires = datetime.fromisoformat(desk.pending("e")["expires_at"].replace("Z", "+00:00")).timestamp()
        while time.time() <= expires + 0.5:  # wait for the pause's task to expire
            time.sleep(0.2)
        r = bob.post(f"/runs/{run_id}/decide", data=form)
        assert r.status_code == 409 and "expired" in r.text
        assert not (tmp_path / "runs" / "e" / "approval.json").exists()

        client = httpx.Client(base_url=desk.url, timeout=30)
        codes = []
        for guess in ["wrong"] * 5 + [cred]:  # five failures, then even the right credential waits
            csrf = hidden(client.get("/login").text, "csrf")
            codes.append(client.post("/login", data={"csrf": csrf, "name": "bob", "credential": guess}).status_code)
        assert codes == [401] * 5 + [429]
        r = client.post("/login", data={"csrf": "forged", "name": "bob", "credential": cred})
        assert r.status_code == 403  # the login form's own token
