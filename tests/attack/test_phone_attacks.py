"""Attacks on the phone lane's promises (SPEC §21), in-process: a real paused run on the fake desktop, the queue as a
Starlette app and relays whose HTTPS calls are routed to it (the e2e covers the browser, TLS and the sockets).

(a) nothing but the closed context leaves the runner; (b) a decision with channel `phone` authorises exactly what a
local one does — even when the queue is compromised and signs what it likes with its own key; (c) the queue's own
locks: relay-token auth, login rate limit, CSRF, cookie flags, HSTS, no token or anonymous body kept.
"""

from __future__ import annotations

import re
import secrets
import urllib.request

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from starlette.testclient import TestClient

from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.errors import RefusedError, UsageError
from openadapt_flow.phone.context import (
    PhoneContext,
    PhoneDecision,
    canonical,
    decision_bytes,
    parse_context,
    sign_bytes,
)
from openadapt_flow.phone.project import closed_context
from openadapt_flow.phone.relay import Relay, serve
from openadapt_flow.runtime.operate.approval import DecisionOptions, approve, check_approval
from openadapt_flow.runtime.runs import replay
from openadapt_flow.runtime.start.launch import ReplayRequest
from openadapt_flow.store import FilesystemStore
from openadapt_flow.store.keys import load_decision_key
from tests.support.phone_kit import env, queue  # noqa: F401 (fixtures)
from tests.unit.runtime.test_durable import AFTER, SAVE, App, cfg, make_bundle

pytestmark = pytest.mark.timeout(60)
STEPS = (dict(SAVE, approval="before", intent="Post it for {vendor}"), AFTER)


def pause(tmp_path, env, name="run", **approvals):
    """A run paused before its consequential step (intent naming a param), under `approvals`; (store, run)."""
    bundle = tmp_path / "b"
    if not bundle.exists():
        make_bundle(bundle, list(STEPS))
    config = DeployConfig.model_validate({**cfg(tmp_path).model_dump(by_alias=True), "approvals": approvals})
    app = App(env)
    out = replay(
        ReplayRequest(
            bundle=bundle,
            params={"vendor": "ACME Corp"},
            backend=BackendSpec(kind="fake"),
            config=config,
            run_dir=tmp_path / name,
        ),
        backend_factory=lambda spec: app.connect(),
    )
    assert out.state == "PAUSED"
    store = FilesystemStore(tmp_path)
    return store, store.open_run(name)


class Routed(Relay):
    """A relay whose HTTPS calls go to the in-process queue (the same paths, headers and bodies)."""

    client: TestClient

    def call(self, method, path, body=None, timeout=30.0, data=None):
        raw = data if data is not None else (canonical(body) if body is not None else None)
        r = self.client.request(method, path, content=raw, headers={"Authorization": f"Bearer {self.token}"})
        if r.status_code >= 400:
            raise RefusedError(f"{path}: HTTP {r.status_code}")
        return dict(r.json())


def relay(store, key, client=None, token="t") -> Routed:
    lines: list[str] = []
    r = Routed("https://queue.invalid", key.public_key(), token, store, log=lines.append)
    r.client = client  # type: ignore[assignment]
    r.lines = lines  # type: ignore[attr-defined]
    return r


def forged(run, key, **change) -> dict:
    """What a queue holding `key` can sign: a well-formed decision on the run's open pause, then `change`d."""
    ctx = closed_context(run, run.read_pending())
    body = {
        "schema": "openadapt-flow/phone-decision@1",
        "decision_id": "d-" + secrets.token_hex(8),
        "run_id": ctx.run_id,
        "pause_id": ctx.pause_id,
        "checkpoint_digest": ctx.checkpoint_digest,
        "operation": "continue",
        "expires_at": ctx.expires_at,
        "idempotency_scope": ctx.idempotency_scope,
        "operator": "pat",
        "decided_at": "2026-01-01T00:00:00Z",
        **change,
    }
    return {"decision": body, "signature": sign_bytes(key, canonical(body))}


def login(client, name, credential):
    page = client.get("/login")
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
    return client.post("/login", data={"csrf": csrf, "name": name, "credential": credential}, follow_redirects=False)


# (b) what a decision authorises --------------------------------------------------------------------------------------


def test_a_compromised_queue_cannot_meet_a_quorum_of_two_alone(tmp_path, env):
    store, run = pause(tmp_path, env, quorum=2)
    key = Ed25519PrivateKey.generate()
    r = relay(store, key)
    assert r.apply(forged(run, key, operator="pat")) == ("recorded", "recorded")
    assert r.apply(forged(run, key, operator="sam")) == ("refused", "quorum")  # a second name, a second decision id
    assert len(run.read_approval()["votes"]) == 1
    with pytest.raises(RefusedError, match="quorum not met: 1 of 2"):
        check_approval(run, run.read_pending(), load_decision_key(False))
    # a second, local voter completes it (an authenticated one: a quorum above 1 counts no OS user)
    assert (
        approve(run, "continue", "bob", os_user="bob", options=DecisionOptions(authenticated=True))["complete"] is True
    )


def test_a_phone_vote_does_not_count_a_cli_voter_twice(tmp_path, env):
    store, run = pause(tmp_path, env, quorum=2)
    approve(
        run, "continue", "pat", os_user="pat", options=DecisionOptions(authenticated=True)
    )  # `flow approve` as operator pat
    key = Ed25519PrivateKey.generate()
    assert relay(store, key).apply(forged(run, key, operator="pat")) == ("refused", "quorum")
    assert len(run.read_approval()["votes"]) == 1


def test_a_phone_decision_cannot_change_a_console_operators_decision(tmp_path, env):
    store, run = pause(tmp_path, env)
    approve(run, "continue", "alice", os_user="svc", channel="console")
    key = Ed25519PrivateKey.generate()  # the queue signs "alice rejects": the console's alice did not
    assert relay(store, key).apply(forged(run, key, operator="alice", operation="reject")) == ("refused", "quorum")
    approval = run.read_approval()
    assert (approval["decision"], approval["channel"]) == ("continue", "console")


def test_a_phone_decision_against_a_local_decision_is_refused(tmp_path, env):
    store, run = pause(tmp_path, env)
    approve(run, "continue", "bob", os_user="bob")
    key = Ed25519PrivateKey.generate()
    assert relay(store, key).apply(forged(run, key, operation="reject")) == ("refused", "approve")
    assert run.read_approval()["decision"] == "continue"


def test_a_decision_signed_for_pause_a_is_refused_at_pause_b_on_the_same_step(tmp_path, env):
    store, run = pause(tmp_path, env)
    key = Ed25519PrivateKey.generate()
    old = forged(run, key)
    first = run.read_pending()
    approve(run, "escalate", "bob", os_user="bob")  # the run re-pauses at the same step under a new pause
    assert run.read_pending()["step"] == first["step"] and run.read_pending()["pause_id"] != first["pause_id"]
    assert relay(store, key).apply(old) == ("refused", "pause")
    assert run.read_approval() is None


@pytest.mark.parametrize("operation", ["teach", "reconcile", "answer", "signal"])
def test_a_signed_decision_the_phone_may_not_take_is_refused(tmp_path, env, operation):
    store, run = pause(tmp_path, env)
    key = Ed25519PrivateKey.generate()
    assert relay(store, key).apply(forged(run, key, operation=operation)) == ("refused", "signature")
    assert run.read_approval() is None


def test_a_signed_decision_naming_another_run_in_the_store_is_refused(tmp_path, env):
    store, one = pause(tmp_path, env, name="one")
    _, two = pause(tmp_path, env, name="two")
    key = Ed25519PrivateKey.generate()
    item = forged(two, key, run_id=closed_context(one, one.read_pending()).run_id)  # two's bindings, one's run id
    assert relay(store, key).apply(item)[0] == "refused"
    assert one.read_approval() is None and two.read_approval() is None


def test_a_console_only_pause_is_not_published_and_a_phone_decision_on_it_is_refused(tmp_path, env):
    store, run = pause(tmp_path, env, channels=["console"])
    assert closed_context(run, run.read_pending()) is None
    key = Ed25519PrivateKey.generate()
    r = relay(store, key)
    assert r.contexts() == []
    task = run.read_pending()["task"]
    body = {
        "schema": "openadapt-flow/phone-decision@1",
        "decision_id": "d-1",
        "run_id": task["run_id"],
        "pause_id": task["pause_id"],
        "checkpoint_digest": task["checkpoint_digest"],
        "operation": "continue",
        "expires_at": task["expires_at"],
        "idempotency_scope": task["idempotency_scope"],
        "operator": "pat",
        "decided_at": "2026-01-01T00:00:00Z",
    }
    assert r.apply({"decision": body, "signature": sign_bytes(key, canonical(body))}) == ("refused", "approve")
    assert run.read_approval() is None


def test_two_relays_on_one_store_record_a_decision_once_and_both_keep_running(tmp_path, env, queue):
    db, key, client, token, credential = queue
    store, run = pause(tmp_path, env)
    a, b = relay(store, key, client, token), relay(store, key, client, token)
    a.publish(), b.publish()
    assert len(db.tasks()) == 1
    assert login(client, "pat", credential).status_code == 303
    csrf = re.search(r'name="csrf" value="([^"]+)"', client.get("/").text).group(1)
    client.post("/decide", data={"csrf": csrf, "task": db.tasks()[0]["idempotency_scope"], "operation": "continue"})
    [item] = client.get("/api/decisions?wait=0", headers={"Authorization": f"Bearer {token}"}).json()["decisions"]
    assert a.apply(item) == ("recorded", "recorded")
    a.acknowledge(item["decision"]["decision_id"], "recorded", "recorded")
    assert b.apply(item) == ("recorded", "replayed")  # b fetched it before a's ack: the approval names it
    b.acknowledge(item["decision"]["decision_id"], "recorded", "replayed")  # the queue answers 404: logged, not fatal
    assert any("acknowledging" in line for line in b.lines)
    serve(b, once=True)  # a relay round after it: still running
    assert len(run.read_approval()["votes"]) == 1
    assert db.decision_status(item["decision"]["idempotency_scope"]) == ("recorded", "recorded")


def test_a_relay_restarted_before_its_ack_acknowledges_the_decision_as_recorded(tmp_path, env, queue):
    db, key, client, token, credential = queue
    store, run = pause(tmp_path, env)
    relay(store, key, client, token).publish()
    login(client, "pat", credential)
    csrf = re.search(r'name="csrf" value="([^"]+)"', client.get("/").text).group(1)
    client.post("/decide", data={"csrf": csrf, "task": db.tasks()[0]["idempotency_scope"], "operation": "continue"})
    [item] = client.get("/api/decisions?wait=0", headers={"Authorization": f"Bearer {token}"}).json()["decisions"]
    assert relay(store, key).apply(item) == ("recorded", "recorded")  # then the relay dies before acknowledging
    fresh = relay(store, key, client, token)
    assert fresh.poll(0.0) == 1
    assert db.decision_status(item["decision"]["idempotency_scope"]) == ("recorded", "replayed")
    assert len(run.read_approval()["votes"]) == 1


# (a) nothing but the closed context leaves ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "field, value",
    [
        ("category", "paid ACME Corp"),
        ("transaction_outcome", "1250.50 posted"),
        ("checkpoint_digest", "ACME Corp 1250.50"),
        ("expires_at", "ACME Corp"),
        ("allowed", ["continue"] * 5),
    ],
)
def test_no_free_text_rides_in_a_closed_context_field(field, value):
    ctx = {
        "run_id": "r",
        "pause_id": "p",
        "bundle": "b",
        "step": "s",
        "intent": "Save {vendor}",
        "category": "approval",
        "allowed": ["continue"],
        "expires_at": "2099-01-01T00:00:00Z",
        "checkpoint_digest": "sha256:none",
        "idempotency_scope": "r/p",
    }
    assert parse_context(ctx).category == "approval"
    with pytest.raises(UsageError):
        parse_context({**ctx, field: value})
    with pytest.raises(ValueError):
        PhoneDecision.model_validate(
            {
                "decision_id": "d",
                "run_id": "r",
                "pause_id": "p",
                "operation": "continue",
                "expires_at": "2099-01-01T00:00:00Z",
                "idempotency_scope": "r/p",
                "operator": "ACME Corp 1250.50",
                "decided_at": "2026-01-01T00:00:00Z",
            }
        )


def test_what_the_relay_sends_is_the_closed_context_and_ids_only(tmp_path, env, monkeypatch):
    store, run = pause(tmp_path, env)
    sent: list[urllib.request.Request] = []

    class Answer:
        def __enter__(self):
            return self

        def __exit__(self, *a):
            return False

        def read(self):
            return b'{"decisions": []}'

    monkeypatch.setattr(urllib.request, "urlopen", lambda req, **kw: sent.append(req) or Answer())
    r = Relay("https://queue.invalid", Ed25519PrivateKey.generate().public_key(), "tok", store, log=lambda line: None)
    assert r.publish() == 1 and r.poll(0.0) == 0
    approve(run, "reject", "bob", os_user="bob")  # the pause ends: the relay withdraws it
    r.publish()
    assert [q.get_method() + " " + q.full_url.split("queue.invalid")[1].split("?")[0] for q in sent] == [
        "POST /api/tasks",
        "GET /api/decisions",
        "POST /api/withdraw",
    ]
    for q in sent:
        assert set(q.headers) == {"Authorization", "Content-type"}
        assert b"ACME" not in (q.data or b"") and "ACME" not in q.full_url
    assert PhoneContext.model_validate_json(sent[0].data).intent == "Post it for {vendor}"


# (c) the queue's own locks -------------------------------------------------------------------------------------------


def test_every_relay_endpoint_needs_the_token_and_an_anonymous_body_is_not_kept(queue):
    db, _, client, token, _ = queue
    for method, path in [
        ("GET", "/api/key?nonce=" + "a" * 16),
        ("POST", "/api/tasks"),
        ("GET", "/api/decisions?wait=0"),
        ("POST", "/api/withdraw?task=r/p"),
        ("POST", "/api/decisions/d-1/ack"),
    ]:
        for auth in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": token}):
            assert client.request(method, path, content=b"ACME Corp 1250.50", headers=auth).status_code == 401
    assert client.post("/decide", data={"task": "r/p", "operation": "continue", "csrf": "ACME Corp"}).status_code == 401
    assert client.post("/subscribe", content=b"ACME Corp").status_code == 401
    assert b"ACME" not in b"".join(b for (b,) in db._q("SELECT body FROM requests"))
    assert token.encode() not in db.path.read_bytes()


def test_logins_are_rate_limited_and_the_session_cookie_is_locked(queue):
    _, _, client, _, credential = queue
    r = login(client, "pat", credential)
    cookie = r.headers["set-cookie"].lower()
    assert r.status_code == 303 and all(flag in cookie for flag in ("httponly", "secure", "samesite=strict"))
    assert r.headers["strict-transport-security"].startswith("max-age=")
    assert "strict-transport-security" in client.get("/login").headers
    fresh = TestClient(client.app, base_url="https://testserver")
    assert fresh.post("/login", data={"name": "pat", "credential": credential}).status_code == 403  # no login CSRF
    for _ in range(5):
        assert login(fresh, "pat", "wrong").status_code == 401
    assert login(fresh, "pat", credential).status_code == 429  # even the right credential, for a while
    page = client.get("/").text  # a logged-in session's CSRF token is its own: another's does not decide
    csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
    assert fresh.post("/decide", data={"csrf": csrf, "task": "r/p", "operation": "continue"}).status_code == 401


def test_a_relay_sees_and_touches_only_the_tasks_it_published(tmp_path, env, queue):
    db, key, client, token, credential = queue
    store, run = pause(tmp_path, env)
    relay(store, key, client, token).publish()
    task = db.tasks()[0]["idempotency_scope"]
    other = {"Authorization": f"Bearer {db.add_relay_token()}"}  # another runner's relay on the same queue
    assert client.post(f"/api/withdraw?task={task}", headers=other).status_code == 404
    assert client.post("/api/tasks", content=db._q("SELECT context FROM tasks")[0][0], headers=other).status_code == 409
    login(client, "pat", credential)
    csrf = re.search(r'name="csrf" value="([^"]+)"', client.get("/").text).group(1)
    client.post("/decide", data={"csrf": csrf, "task": task, "operation": "continue"})
    assert client.get("/api/decisions?wait=0", headers=other).json()["decisions"] == []
    [item] = client.get("/api/decisions?wait=0", headers={"Authorization": f"Bearer {token}"}).json()["decisions"]
    ack = {"status": "refused", "reason": "run"}
    assert (
        client.post(f"/api/decisions/{item['decision']['decision_id']}/ack", json=ack, headers=other).status_code == 404
    )
    assert db.decision_status(task) == ("pending", None)
