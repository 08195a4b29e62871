"""The queue in-process (Starlette TestClient): the relay API needs the relay token, takes a closed context and
nothing more, signs an operator's decision with its Ed25519 key, hands it to a long-poll and takes its ack; it keeps
every body it received. And the context's bytes, keys and signatures."""

from __future__ import annotations

import re

import pytest
from starlette.testclient import TestClient

from openadapt_flow.auth.sessions import RateLimit
from openadapt_flow.errors import RefusedError, UsageError
from openadapt_flow.phone.context import PROOF_PREFIX, canonical, load_public, parse_context, public_text, verify_bytes
from openadapt_flow.phone.queue.keys import key_paths
from tests.support.phone_kit import queue  # noqa: F401 (a fixture)

pytestmark = pytest.mark.timeout(60)
CONTEXT = {
    "schema": "openadapt-flow/phone-context@1",
    "run_id": "run-1",
    "pause_id": "pause-1",
    "bundle": "b",
    "step": "save",
    "intent": "Save {vendor}",
    "category": "approval",
    "transaction_outcome": None,
    "allowed": ["continue", "reject"],
    "expires_at": "2099-01-01T00:00:00Z",
    "checkpoint_digest": "sha256:" + "ab" * 32,
    "idempotency_scope": "run-1/pause-1",
}


def test_keys_are_private_files_and_the_public_key_round_trips(tmp_path, queue):
    _, key, *_ = queue
    for path in key_paths(tmp_path / "q.sqlite3"):
        assert path.stat().st_mode & 0o777 == 0o600
    assert public_text(load_public(public_text(key))) == public_text(key)
    with pytest.raises(UsageError):
        load_public("ed25519:short")
    sig = key.sign(b"x").hex()
    with pytest.raises(RefusedError):
        verify_bytes(key.public_key(), b"y", sig, "test")


def test_a_context_with_any_other_field_is_refused():
    assert parse_context(CONTEXT).intent == "Save {vendor}"
    for extra in ({"message": "ACME Corp"}, {"evidence": []}, {"allowed": ["teach"]}):
        with pytest.raises(UsageError):
            parse_context({**CONTEXT, **extra})
    assert canonical({"b": 1, "a": "é"}) == '{"a":"é","b":1}'.encode()


def test_publish_decide_poll_ack(queue):
    db, key, client, token, credential = queue
    auth = {"Authorization": f"Bearer {token}"}
    assert client.post("/api/tasks", content=canonical(CONTEXT)).status_code == 401
    r = client.post("/api/tasks", content=canonical({**CONTEXT, "message": "ACME"}), headers=auth)
    assert r.status_code == 400 and db.tasks() == []
    assert client.post("/api/tasks", content=canonical(CONTEXT), headers=auth).status_code == 201
    assert client.post("/api/tasks", content=canonical(CONTEXT), headers=auth).json()["new"] is False
    proof = client.get("/api/key?nonce=" + "a" * 32, headers=auth).json()
    verify_bytes(key.public_key(), PROOF_PREFIX + b"a" * 32, proof["proof"], "proof")

    page = client.get("/login").text
    csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
    r = client.post("/login", data={"csrf": csrf, "name": "pat", "credential": credential}, follow_redirects=False)
    assert r.status_code == 303
    page = client.get("/").text
    assert "Save {vendor}" in page
    csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
    assert client.post("/decide", data={"csrf": csrf, "task": "run-1/pause-1", "operation": "skip"}).status_code == 409
    assert (
        client.post("/decide", data={"csrf": "x", "task": "run-1/pause-1", "operation": "continue"}).status_code == 403
    )
    r = client.post("/decide", data={"csrf": csrf, "task": "run-1/pause-1", "operation": "continue"})
    assert r.status_code == 200 and "sent: continue by pat" in r.text
    assert (
        client.post("/decide", data={"csrf": csrf, "task": "run-1/pause-1", "operation": "reject"}).status_code == 409
    )

    [item] = client.get("/api/decisions?wait=0", headers=auth).json()["decisions"]
    d = item["decision"]
    verify_bytes(key.public_key(), canonical(d), item["signature"], "decision")
    assert (d["run_id"], d["pause_id"], d["operation"], d["operator"]) == ("run-1", "pause-1", "continue", "pat")
    assert (d["checkpoint_digest"], d["expires_at"], d["idempotency_scope"]) == (
        CONTEXT["checkpoint_digest"],
        CONTEXT["expires_at"],
        "run-1/pause-1",
    )
    ack = {"status": "recorded", "reason": "free text from the runner"}
    assert client.post(f"/api/decisions/{d['decision_id']}/ack", json=ack, headers=auth).status_code == 400
    ack["reason"] = "recorded"
    assert client.post(f"/api/decisions/{d['decision_id']}/ack", json=ack, headers=auth).status_code == 200
    assert client.get("/api/decisions?wait=0", headers=auth).json()["decisions"] == []
    bodies = [b for (b,) in db._q("SELECT body FROM requests")]
    assert credential.encode() not in b"".join(bodies) and any(b"[withheld]" in b for b in bodies)


def test_a_withdrawn_task_is_no_longer_offered(queue):
    db, _, client, token, _ = queue
    auth = {"Authorization": f"Bearer {token}"}
    assert client.post("/api/tasks", content=canonical(CONTEXT), headers=auth).status_code == 201
    assert client.post("/api/withdraw?task=nope", headers=auth).status_code == 404
    assert client.post("/api/withdraw?task=run-1/pause-1").status_code == 401
    assert client.post("/api/withdraw?task=run-1/pause-1", headers=auth).status_code == 200
    assert db.tasks("open") == [] and db.tasks("withdrawn")[0]["pause_id"] == "pause-1"


def test_the_phone_page_is_an_installable_web_app(queue):
    _, _, client, _, _ = queue
    manifest = client.get("/manifest.webmanifest")
    assert manifest.headers["content-type"].startswith("application/manifest+json")
    m = manifest.json()
    assert (m["start_url"], m["display"]) == ("/", "standalone") and m["icons"][0]["src"] == "/icon.svg"
    assert client.get("/icon.svg").status_code == 200
    sw = client.get("/sw.js")
    assert sw.headers["content-type"].startswith("text/javascript")
    assert 'addEventListener("push"' in sw.text and "showNotification" in sw.text
    assert 'rel="manifest"' in client.get("/login").text


def test_the_login_rate_limit_forgets_keys_whose_failures_aged_out():
    limit = RateLimit(limit=2, window_s=0.0)  # every failure ages out at once
    for i in range(100):
        limit.failed(f"name:made-up-{i}")
        assert not limit.blocked(f"name:made-up-{i}")
    assert limit._fails == {}
    held = RateLimit(limit=2, window_s=3600.0)
    held.failed("client:a"), held.failed("client:a")
    assert held.blocked("client:a", "name:x") and not held.blocked("client:b")
