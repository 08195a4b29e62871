"""Console sessions in-process: expiry, CSRF comparison, the login limit, and a Secure cookie under TLS."""

from __future__ import annotations

import re

import pytest
from starlette.testclient import TestClient

from openadapt_flow.auth.sessions import RateLimit, Sessions
from openadapt_flow.console.app import create_app
from openadapt_flow.runtime.operate.operators import add_operator
from openadapt_flow.store import MemoryStore

pytestmark = pytest.mark.timeout(60)


def test_a_session_expires_and_checks_its_csrf_token():
    sessions = Sessions(ttl_s=60)
    s = sessions.open("alice", "approver", now=1000.0)
    assert sessions.get(s.token, now=1059.0) is s
    assert s.csrf_ok(s.csrf) and not s.csrf_ok(None) and not s.csrf_ok(s.csrf + "x")
    assert sessions.get(s.token, now=1060.0) is None and sessions.get(s.token, now=1000.0) is None  # gone for good
    other = sessions.open("bob", "approver")
    sessions.drop_operator("bob")
    assert sessions.get(other.token) is None


def test_the_login_limit_counts_failures_per_key():
    limit = RateLimit(limit=2, window_s=60)
    limit.failed("client:a", "name:x")
    assert not limit.blocked("client:a")
    limit.failed("client:a", "name:y")
    assert limit.blocked("client:a") and not limit.blocked("name:x") and not limit.blocked("client:b")


def test_under_tls_the_session_cookie_is_secure():
    store = MemoryStore()
    cred = add_operator(store, "alice")
    client = TestClient(create_app(store, secure=True), base_url="https://testserver")
    page = client.get("/login")
    assert "secure" in page.headers["set-cookie"].lower()
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
    r = client.post("/login", data={"csrf": csrf, "name": "alice", "credential": cred}, follow_redirects=False)
    cookie = r.headers["set-cookie"].lower()
    assert r.status_code == 303 and "flow_session=" in cookie
    assert all(flag in cookie for flag in ("secure", "httponly", "samesite=strict", "max-age=28800"))
    assert client.get("/").status_code == 200
