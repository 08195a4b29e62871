"""The hosted phone lane under web attack (SPEC §21): the queue (`flow queue serve`) as a browser-facing site and as
the relay's counterpart, and the relay's checks on what a queue hands it. Each test is one attack, named after what it
tries: in-process (Starlette's TestClient over https://testserver, relays routed to it) where the attack is about what
the app answers or records, and served by `flow queue serve` itself (uvicorn on loopback, TLS from a test CA) for the
Host header, HSTS and redirects. The attacks are listed in docs/phone-lane.md; test_phone_attacks.py holds the review's
earlier findings, whose setup (pause, relay, forged) several tests here reuse.
"""

from __future__ import annotations

import json
import re
import secrets
import socket
import ssl
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import cv2
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from starlette.testclient import TestClient

from openadapt_flow.auth.sessions import LOGIN_FAILURES, LOGIN_WINDOW_S
from openadapt_flow.errors import RefusedError
from openadapt_flow.phone.context import canonical, sign_bytes
from openadapt_flow.phone.queue.db import QueueDB
from openadapt_flow.runtime.operate.approval import approve, check_approval
from openadapt_flow.store import FilesystemStore
from openadapt_flow.store.keys import load_decision_key
from openadapt_flow.vision.ocr import OcrEngine
from tests.attack.test_phone_attacks import Routed, forged, pause, relay
from tests.attack.web_support import INTENT_XSS, OCR_XSS, PARAM_XSS, Served, assert_inert, hidden, pause_on_screen_text
from tests.support.cli import flow_env
from tests.support.phone_kit import env, queue  # noqa: F401 (fixtures)
from tests.support.pushservice import PushService
from tests.support.testca import make_test_ca
from tests.unit.phone.test_phone_queue import CONTEXT

pytestmark = pytest.mark.timeout(120)
BASE = "https://testserver"  # the in-process queue's own address (TestClient's scope server)
SCRIPTS = {"/app.js"}


@dataclass
class Q:
    """The in-process queue of phone_kit's `queue` fixture: its database, key, app, a relay token and pat's
    credential; clients that do not follow redirects, from any address."""

    db: QueueDB
    key: Ed25519PrivateKey
    app: object
    token: str
    credential: str

    def client(self, addr: str = "127.0.0.1") -> TestClient:
        return TestClient(self.app, base_url=BASE, client=(addr, 50000), follow_redirects=False)

    def login(self, name: str = "pat", credential: str | None = None, client: TestClient | None = None) -> TestClient:
        c = client or self.client()
        r = c.post(
            "/login",
            data={
                "csrf": hidden(c.get("/login").text, "csrf"),
                "name": name,
                "credential": credential or self.credential,
            },
        )
        assert r.status_code == 303, r.text
        return c

    def publish(self, **change) -> str:
        """A closed context published by the relay token; its task id."""
        ctx = {**CONTEXT, **change}
        r = self.client().post("/api/tasks", content=canonical(ctx), headers={"Authorization": f"Bearer {self.token}"})
        assert r.status_code in (200, 201), r.text  # 200: published before
        return str(ctx["idempotency_scope"])

    def bodies(self) -> bytes:
        return b"".join(bytes(b) for (b,) in self.db._q("SELECT body FROM requests"))


@pytest.fixture
def q(queue) -> Q:
    db, key, client, token, credential = queue
    return Q(db, key, client.app, token, credential)


def csrf_of(c: TestClient) -> str:
    return hidden(c.get("/").text, "csrf")


# every route without a session or a relay token ----------------------------------------------------------------

ROUTES = [
    ("GET", "/", 303),
    ("POST", "/decide", 401),
    ("POST", "/subscribe", 401),
    ("POST", "/logout", 403),
    ("GET", "/api/key?nonce=" + "a" * 16, 401),
    ("POST", "/api/tasks", 401),
    ("GET", "/api/decisions?wait=0", 401),
    ("POST", "/api/withdraw?task=run-1/pause-1", 401),
    ("POST", "/api/decisions/d-1/ack", 401),
]


@pytest.mark.parametrize("method, path, status", ROUTES, ids=[f"{m} {p.split('?')[0]}" for m, p, _ in ROUTES])
def test_every_route_without_a_session_or_relay_token_is_refused(q, method, path, status):
    task = q.publish(intent="Approve the quarterly close")
    before = q.bodies()
    r = q.client().request(
        method,
        path,
        content=b"task=" + task.encode() + b"&operation=continue&csrf=x&ACME Corp" if method == "POST" else None,
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert r.status_code == status
    assert "quarterly" not in r.text and task not in r.text
    assert q.bodies() == before and b"ACME" not in q.bodies()  # an anonymous body is not kept
    assert q.db.decision_status(task) is None


def test_the_public_routes_show_nothing_of_the_tasks(q):
    q.publish(intent="Approve the quarterly close")
    anon = q.client()
    for path in ("/login", "/app.js", "/sw.js", "/manifest.webmanifest", "/icon.svg"):
        r = anon.get(path)
        assert r.status_code == 200 and "quarterly" not in r.text and "run-1" not in r.text


# CSRF ------------------------------------------------------------------------------------------------------------

POSTS = ["decide", "logout", "login", "subscribe"]


def csrf_case(q: Q, route: str, token, origin: str | None = None, push: PushService | None = None):
    """Post `route` from a client that holds everything else right, with `token(own)` as its CSRF token (None: no
    token) and `origin` as its Origin; (response, client)."""
    headers = {"Origin": origin} if origin else {}
    if route == "login":
        c = q.client()
        given = token(hidden(c.get("/login").text, "csrf"))
        data = {"name": "pat", "credential": q.credential, **({"csrf": given} if given is not None else {})}
        return c.post("/login", data=data, headers=headers), c
    c = q.login()
    given = token(csrf_of(c))
    if route == "subscribe":
        sub = {"endpoint": "https://push.example/p/1", "keys": {"p256dh": "BPk", "auth": "au"}}
        return c.post("/subscribe", json=sub, headers={**headers, **({"X-CSRF-Token": given} if given else {})}), c
    data = {"task": q.publish(), "operation": "continue"} if route == "decide" else {}
    data.update({"csrf": given} if given is not None else {})
    return c.post(f"/{route}", data=data, headers=headers), c


def nothing_done(q: Q, route: str, c: TestClient) -> None:
    if route == "decide":
        assert q.db.decision_status(CONTEXT["idempotency_scope"]) is None
    elif route == "logout":
        assert c.get("/").status_code == 200
    elif route == "login":
        assert "queue_session" not in c.cookies
    else:
        assert q.db.devices() == []


@pytest.mark.parametrize("route", POSTS)
def test_a_post_without_its_csrf_token_is_refused(q, route):
    r, c = csrf_case(q, route, lambda own: None)
    assert r.status_code == 403
    nothing_done(q, route, c)


@pytest.mark.parametrize("route", POSTS)
def test_a_post_with_a_foreign_csrf_token_is_refused(q, route):
    other = q.login() if route != "login" else q.client()  # another session of the same operator, another form
    foreign = csrf_of(other) if route != "login" else hidden(other.get("/login").text, "csrf")
    r, c = csrf_case(q, route, lambda own: foreign)
    assert r.status_code == 403
    nothing_done(q, route, c)


@pytest.mark.parametrize("route", POSTS)
def test_a_post_with_a_truncated_csrf_token_is_refused(q, route):
    r, c = csrf_case(q, route, lambda own: own[:-1])
    assert r.status_code == 403
    nothing_done(q, route, c)


@pytest.mark.parametrize("origin", ["https://evil.example", "https://127.0.0.1:3000", "null"])
@pytest.mark.parametrize("route", POSTS)
def test_a_post_from_a_foreign_origin_is_refused(q, route, origin):
    r, c = csrf_case(q, route, lambda own: own, origin=origin)
    assert r.status_code == 403 and b"cross-origin" in r.content
    nothing_done(q, route, c)
    r, _ = csrf_case(q, route, lambda own: own, origin=BASE)  # the queue's own pages post this way
    assert r.status_code in (201, 303), r.text


def test_the_pages_let_a_browser_name_their_own_origin(q):
    """As the console's: under `no-referrer` the phone page's login, decisions and subscription would carry
    `Origin: null` and be refused (tests/e2e/test_phone_lane.py logs in and decides in Chromium)."""
    for r in (q.client().get("/login"), q.login().get("/")):
        assert r.headers["referrer-policy"] == "same-origin"


# sessions --------------------------------------------------------------------------------------------------------


def test_a_session_cookie_fixed_before_login_is_replaced_and_worthless(q):
    c = q.client()
    c.cookies.set("queue_session", "fixed-by-the-attacker", domain="testserver.local")
    q.login(client=c)
    values = [ck.value for ck in c.cookies.jar if ck.name == "queue_session"]
    assert len(values) == 1 and values[0] != "fixed-by-the-attacker"  # a new token at login
    attacker = q.client()
    attacker.cookies.set("queue_session", "fixed-by-the-attacker", domain="testserver.local")
    assert attacker.get("/").status_code == 303 and attacker.post("/decide", data={"csrf": "x"}).status_code == 401


def test_logout_ends_the_session_on_the_server(q):
    c = q.login()
    token = [ck.value for ck in c.cookies.jar if ck.name == "queue_session"][0]
    r = c.post("/logout", data={"csrf": csrf_of(c)})
    assert r.status_code == 303 and r.headers["location"] == "/login"
    replay = q.client()
    replay.cookies.set("queue_session", token, domain="testserver.local")
    assert replay.get("/").status_code == 303


def test_a_disabled_operators_session_cannot_decide_and_their_phone_gets_no_push(q):
    task = q.publish()
    c = q.login()
    csrf = csrf_of(c)
    assert (
        c.post(
            "/subscribe",
            json={"endpoint": "https://push.example/p/1", "keys": {"p256dh": "k", "auth": "a"}},
            headers={"X-CSRF-Token": csrf},
        ).status_code
        == 201
    )
    q.db.disable_operator("pat")
    assert c.post("/decide", data={"csrf": csrf, "task": task, "operation": "continue"}).status_code == 401
    assert q.db.decision_status(task) is None and q.db.devices() == []


# login brute force -------------------------------------------------------------------------------------------------


def failed_login(c: TestClient, name: str, credential: str = "wrong") -> int:
    return c.post(
        "/login", data={"csrf": hidden(c.get("/login").text, "csrf"), "name": name, "credential": credential}
    ).status_code


def test_login_brute_force_stops_at_five_failures_a_minute(q):
    assert (LOGIN_FAILURES, LOGIN_WINDOW_S) == (5, 60.0)  # the figure docs/phone-lane.md states
    c = q.client()
    assert [failed_login(c, "pat") for _ in range(5)] + [failed_login(c, "pat", q.credential)] == [401] * 5 + [429]
    events = [json.loads(e)["event"] for (e,) in q.db._q("SELECT event FROM audit")]
    assert events.count("login_failed") == 5 and "login" not in events  # the sixth was not even checked


def test_login_brute_force_from_many_addresses_stops_per_name(q):
    assert [failed_login(q.client(f"10.0.0.{i}"), "pat") for i in range(5)] == [401] * 5
    assert failed_login(q.client("10.0.1.1"), "pat", q.credential) == 429


def test_login_brute_force_over_many_names_stops_per_address(q):
    c = q.client("10.0.2.1")
    assert [failed_login(c, f"guess{i}") for i in range(5)] == [401] * 5
    assert failed_login(c, "pat", q.credential) == 429
    assert failed_login(q.client("10.0.2.2"), "pat", q.credential) == 303


# the queue served: Host header (DNS rebinding), HSTS ----------------------------------------------------------------


@dataclass
class Hosted:
    site: Served
    db: QueueDB
    token: str
    credential: str

    def login(self):
        c = self.site.client()
        r = c.post(
            "/login", data={"csrf": hidden(c.get("/login").text, "csrf"), "name": "pat", "credential": self.credential}
        )
        assert r.status_code == 303, r.text
        return c


@pytest.fixture(scope="module")
def hosted(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("queue")
    ca = make_test_ca(tmp / "ca")
    path = tmp / "queue.sqlite3"
    db = QueueDB(path)
    token, credential = db.add_relay_token(), db.add_operator("pat")
    with ExitStack() as stack:
        site = Served(
            [
                "queue",
                "serve",
                "--tls-cert",
                str(ca.cert),
                "--tls-key",
                str(ca.key),
                "--db",
                str(path),
                "--allow-host",
                "queue.example",
            ],
            tmp,
            flow_env(tmp),
            stack,
            ca,
        )
        yield Hosted(site.ready(), db, token, credential)


FOREIGN = ["evil.example", "evil.example:{port}", "attacker.rebind.test", "localhost:{other}"]


@pytest.mark.parametrize("who", ["anonymous", "with-session", "with-relay-token"])
@pytest.mark.parametrize("host", FOREIGN)
def test_a_foreign_host_is_refused_before_routing(hosted, host, who):
    site = hosted.site
    host = host.format(port=site.port, other=site.port + 1)
    c = hosted.login() if who == "with-session" else site.client()
    path, headers = (
        ("/api/decisions?wait=0", {"Authorization": f"Bearer {hosted.token}"})
        if who == "with-relay-token"
        else ("/" if who == "with-session" else "/login", {})
    )
    assert c.get(path, headers=headers).status_code == 200  # under its own address the same client is served
    before = len(site.refusals())
    r = c.get(path, headers={**headers, "Host": host})
    assert r.status_code == 421 and "csrf" not in r.text and "decisions" not in r.text and "set-cookie" not in r.headers
    r = c.post("/login", data={"name": "pat", "credential": "x"}, headers={"Host": host})
    assert r.status_code == 421
    lines = site.refusals()[before:]
    assert len(lines) == 2 and all(repr(host) in line and "queue" in line for line in lines), lines


@pytest.mark.parametrize(
    "host", ["127.0.0.1:{port}", "localhost:{port}", "[::1]:{port}", "queue.example", "queue.example:{port}"]
)
def test_the_bound_address_loopback_and_listed_names_are_served(hosted, host):
    c = hosted.login()
    assert c.get("/", headers={"Host": host.format(port=hosted.site.port)}).status_code == 200


def test_a_request_without_one_host_is_refused(hosted):
    tls = ssl.create_default_context(cafile=str(hosted.site.ca.ca))
    for raw in (
        b"GET /login HTTP/1.0\r\n\r\n",
        b"GET /login HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n",
    ):
        with socket.create_connection(("127.0.0.1", hosted.site.port), timeout=10) as raw_sock:
            with tls.wrap_socket(raw_sock, server_hostname="127.0.0.1") as s:
                s.sendall(raw)
                head = s.recv(4096).split(b"\r\n", 1)[0]
        assert head.split()[1] in (b"400", b"421"), head


def test_a_trailing_slash_redirect_cannot_send_a_browser_to_a_foreign_host(hosted):
    r = hosted.site.client().get("/login/", headers={"Host": "evil.example"})
    assert r.status_code == 421 and "location" not in r.headers


def test_the_queue_sends_hsts_on_every_response(hosted):
    c, anon = hosted.login(), hosted.site.client()
    responses = [
        anon.get("/login"),
        anon.get("/"),
        anon.get("/app.js"),
        anon.get("/api/decisions?wait=0"),
        anon.post("/decide", data={"csrf": "x"}),
        c.get("/"),
        c.get("/nowhere"),
        anon.get("/login", headers={"Host": "evil.example"}),
    ]
    for r in responses:
        hsts = r.headers.get("strict-transport-security", "")
        assert hsts.startswith("max-age=") and int(hsts.split("=")[1].split(";")[0]) >= 180 * 86400, (r.url, hsts)
    assert [r.status_code for r in responses] == [200, 303, 200, 401, 401, 200, 404, 421]


# open redirects ----------------------------------------------------------------------------------------------------


def test_login_never_redirects_off_the_queue(q):
    c = q.client()
    for url in ("/login?next=https://evil.example", "/login?next=//evil.example"):
        r = c.post(
            url,
            data={
                "csrf": hidden(c.get("/login").text, "csrf"),
                "name": "pat",
                "credential": q.credential,
                "next": "https://evil.example",
            },
        )
        assert r.status_code == 303 and r.headers["location"] == "/"


def test_decide_and_logout_redirect_only_within_the_queue(q):
    c = q.login()
    r = c.post(
        "/decide", data={"csrf": csrf_of(c), "task": q.publish(), "operation": "continue", "next": "//evil.example"}
    )
    assert r.status_code == 303 and r.headers["location"].startswith("/?msg=")
    r = c.post("/logout", data={"csrf": csrf_of(c), "next": "//evil.example"})
    assert r.status_code == 303 and r.headers["location"] == "/login"


# path traversal ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/%2e%2e/q.sqlite3",
        "/..%2fq.sqlite3.ed25519.pem",
        "/app.js%2f..%2f..%2fq.sqlite3",
        "/sw.js%00",
        "/%2e%2e%2f%2e%2e%2fetc%2fpasswd",
        "/api/decisions/..%2f..%2fapp.js/ack",
        "/icon.svg/..%2fq.sqlite3.vapid.pem",
    ],
)
def test_static_and_api_path_traversal_is_refused(q, path):
    c = q.login()
    r = c.request("POST" if path.endswith("/ack") else "GET", path, headers={"Authorization": f"Bearer {q.token}"})
    assert r.status_code in (404, 405) and b"PRIVATE KEY" not in r.content and b"SQLite" not in r.content
    assert b"root:" not in r.content


# stored XSS under the CSP ------------------------------------------------------------------------------------------


def test_stored_xss_through_a_published_intent_and_bundle_name_is_inert(q):
    """A relay (or whoever holds its token) publishes markup in the two free-text fields of a closed context."""
    q.publish(intent=INTENT_XSS, bundle=PARAM_XSS)
    r = q.login().get("/")
    assert r.status_code == 200 and "&lt;iframe" in r.text and "&lt;img src=x" in r.text
    assert_inert(r, ["<iframe", PARAM_XSS], SCRIPTS)


def test_reflected_values_are_inert(q):
    c = q.login()
    r = c.get(f"/?msg={OCR_XSS}")
    assert "&lt;script&gt;" in r.text
    assert_inert(r, [OCR_XSS], SCRIPTS)
    r = c.post("/decide", data={"csrf": csrf_of(c), "task": OCR_XSS, "operation": PARAM_XSS})
    assert r.status_code == 409
    assert_inert(r, [OCR_XSS, PARAM_XSS], SCRIPTS)


# decisions at the queue: another task, replayed, expired -----------------------------------------------------------


def test_a_decision_on_an_unknown_task_is_refused(q):
    q.publish()
    c = q.login()
    r = c.post("/decide", data={"csrf": csrf_of(c), "task": "run-2/pause-1", "operation": "continue"})
    assert r.status_code == 409 and q.db._q("SELECT count(*) FROM decisions")[0][0] == 0


def test_a_decision_replayed_at_the_queue_is_refused(q):
    task = q.publish()
    c = q.login()
    form = {"csrf": csrf_of(c), "task": task, "operation": "continue"}
    assert c.post("/decide", data=form).status_code == 303
    assert c.post("/decide", data=form).status_code == 409
    assert c.post("/decide", data={**form, "operation": "reject"}).status_code == 409
    assert q.db._q("SELECT count(*) FROM decisions")[0][0] == 1


def test_a_decision_on_an_expired_task_is_refused(q):
    task = q.publish(expires_at="2020-01-01T00:00:00Z")
    c = q.login()
    assert task not in c.get("/").text  # not offered
    r = c.post("/decide", data={"csrf": csrf_of(c), "task": task, "operation": "continue"})
    assert r.status_code == 409 and "expired" in r.text and q.db.decision_status(task) is None


def test_an_operation_the_pause_does_not_allow_is_refused(q):
    task = q.publish(allowed=["continue", "reject"])
    c = q.login()
    for op in ("skip", "teach", "reconcile"):
        assert c.post("/decide", data={"csrf": csrf_of(c), "task": task, "operation": op}).status_code == 409
    assert q.db.decision_status(task) is None


def test_another_relays_token_sees_and_acknowledges_no_decision(q):
    task = q.publish()
    c = q.login()
    c.post("/decide", data={"csrf": csrf_of(c), "task": task, "operation": "continue"})
    other = {"Authorization": f"Bearer {q.db.add_relay_token()}"}
    assert q.client().get("/api/decisions?wait=0", headers=other).json()["decisions"] == []
    [item] = q.client().get("/api/decisions?wait=0", headers={"Authorization": f"Bearer {q.token}"}).json()["decisions"]
    ack = q.client().post(
        f"/api/decisions/{item['decision']['decision_id']}/ack",
        json={"status": "refused", "reason": "run"},
        headers=other,
    )
    assert ack.status_code == 404 and q.db.decision_status(task) == ("pending", None)


# the queue forging or replaying a decision: what the relay accepts ---------------------------------------------------


def test_a_decision_signed_by_another_key_is_refused(tmp_path, env):
    store, run = pause(tmp_path, env)
    queue_key, forger = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    assert relay(store, queue_key).apply(forged(run, forger)) == ("refused", "signature")
    assert not run.has_approval()


def test_a_decision_altered_after_signing_is_refused(tmp_path, env):
    store, run = pause(tmp_path, env)
    key = Ed25519PrivateKey.generate()
    item = forged(run, key, operation="continue")
    item["decision"]["operation"] = "reject"  # changed on the way, the signature kept
    assert relay(store, key).apply(item) == ("refused", "signature")
    assert not run.has_approval()


def test_a_decision_replayed_to_the_relay_is_recorded_once(tmp_path, env):
    store, run = pause(tmp_path, env, quorum=2)
    key = Ed25519PrivateKey.generate()
    item = forged(run, key)
    assert relay(store, key).apply(item) == ("recorded", "recorded")
    assert relay(store, key).apply(item) == ("recorded", "replayed")  # a fresh relay: the approval's note names it
    assert len(run.read_approval()["votes"]) == 1


def test_a_decision_replayed_at_a_later_pause_is_refused(tmp_path, env):
    store, run = pause(tmp_path, env)
    key = Ed25519PrivateKey.generate()
    old = forged(run, key)
    approve(run, "escalate", "bob", os_user="bob")  # the pause is re-issued at the same step
    assert relay(store, key).apply(old) == ("refused", "pause")
    assert run.read_approval() is None


def test_a_decision_for_another_run_is_refused(tmp_path, env):
    store, one = pause(tmp_path, env, name="one")
    _, two = pause(tmp_path, env, name="two")
    key = Ed25519PrivateKey.generate()
    item = forged(one, key, run_id=two.manifest()["run_id"])  # one's pause and bindings, two's run id
    assert relay(store, key).apply(item)[0] == "refused"
    assert not one.has_approval() and not two.has_approval()


def test_a_decision_after_its_expiry_is_refused(tmp_path, env):
    store, run = pause(tmp_path, env)
    key = Ed25519PrivateKey.generate()
    item = forged(run, key)
    late = relay(store, key)
    late.now = lambda: 4102444800.0  # the relay's clock in 2100: past the task's expiry
    assert late.apply(item) == ("refused", "expired")
    assert not run.has_approval()


@pytest.mark.parametrize(
    "field, value",
    [
        ("checkpoint_digest", "sha256:" + "0" * 64),
        ("idempotency_scope", "other/scope"),
        ("expires_at", "2099-12-31T00:00:00Z"),
    ],
)
def test_a_decision_with_another_binding_is_refused(tmp_path, env, field, value):
    store, run = pause(tmp_path, env)
    key = Ed25519PrivateKey.generate()
    status, reason = relay(store, key).apply(forged(run, key, **{field: value}))
    assert status == "refused" and reason in ("checkpoint", "scope", "expired")
    assert not run.has_approval()


@pytest.mark.parametrize("operation", ["teach", "reconcile", "answer", "signal"])
def test_a_decision_the_phone_may_not_take_is_refused(tmp_path, env, operation):
    store, run = pause(tmp_path, env)
    key = Ed25519PrivateKey.generate()
    assert relay(store, key).apply(forged(run, key, operation=operation)) == ("refused", "signature")
    assert not run.has_approval()


def test_a_compromised_queue_cannot_meet_a_quorum_of_two_alone(tmp_path, env):
    store, run = pause(tmp_path, env, quorum=2)
    key = Ed25519PrivateKey.generate()
    r = relay(store, key)
    assert r.apply(forged(run, key, operator="pat")) == ("recorded", "recorded")
    assert r.apply(forged(run, key, operator="sam")) == ("refused", "quorum")
    with pytest.raises(RefusedError, match="quorum not met: 1 of 2"):
        check_approval(run, run.read_pending(), load_decision_key(False))


def test_a_phone_vote_in_a_console_voters_name_is_not_counted_twice(tmp_path, env):
    store, run = pause(tmp_path, env, quorum=2)
    approve(run, "continue", "alice", os_user="svc", channel="console")
    key = Ed25519PrivateKey.generate()
    assert relay(store, key).apply(forged(run, key, operator="alice")) == ("refused", "quorum")
    assert len(run.read_approval()["votes"]) == 1


# the closed context, audited by value ------------------------------------------------------------------------------


class Recorded(Routed):
    """A routed relay that keeps every request it sends: method, path, headers and body."""

    sent: list[tuple[str, str, dict, bytes]]

    def call(self, method, path, body=None, timeout=30.0, data=None):
        raw = data if data is not None else (canonical(body) if body is not None else b"")
        self.sent.append((method, path, {"Authorization": f"Bearer {self.token}"}, raw))
        return super().call(method, path, body, timeout, data)


PARAM_CANARY = "Qarthex Vendor 4409.17"
SCREEN_CANARY = "Zorblax Quintor 7731"


def test_canary_params_and_ocr_text_never_leave_the_runner(tmp_path, env, queue, monkeypatch):
    """A run whose param and screen carry canaries pauses; the relay publishes to the queue, a phone is pushed to,
    pat decides, the relay records and acknowledges. Then every byte that left the runner — each request the relay
    sent (path, headers, body), the queue's database file and every push (decrypted) — is searched for the param,
    every word OCR reads on the run's frames, the pause's message, and image bytes."""
    db, key, client, token, credential = queue
    ca = make_test_ca(tmp_path / "ca")
    push = PushService()
    push.start(ca)
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(ca.ca))
    try:
        phone = Q(db, key, client.app, token, credential).login()
        assert (
            phone.post("/subscribe", json=push.subscription(), headers={"X-CSRF-Token": csrf_of(phone)}).status_code
            == 201
        )
        run_id = pause_on_screen_text(tmp_path, "canary", PARAM_CANARY, SCREEN_CANARY, intent="Post it for {vendor}")
        store = FilesystemStore(tmp_path / "runs")
        run = store.find_run(run_id)
        r = Recorded("https://queue.invalid", key.public_key(), token, store, log=lambda line: None)
        r.client, r.sent = client, []
        assert r.publish() == 1 and push.arrived.wait(30)
        task = db.tasks()[0]["idempotency_scope"]
        assert (
            phone.post("/decide", data={"csrf": csrf_of(phone), "task": task, "operation": "continue"}).status_code
            == 303
        )
        assert r.poll(0.0) == 1 and run.read_approval()["channel"] == "phone"
    finally:
        push.stop()

    frames = sorted((tmp_path / "runs" / "canary" / "frames").glob("*.png"))
    ocr = OcrEngine()
    written = {w.lower() for w in re.findall(r"\w+", "Post it for {vendor} post name")}  # the intent as written, ids
    words = {
        w.text
        for f in frames
        for w in ocr.read(cv2.imread(str(f)))
        if len(w.text) >= 3 and w.text.lower() not in written
    }
    assert {"Zorblax", "7731"} <= words, words  # the audit searches what the screen really showed, as OCR read it
    message = run.read_pending()["message"] if run.has_pending() else ""
    searched = {PARAM_CANARY, *PARAM_CANARY.split(), *SCREEN_CANARY.split(), *words} | ({message} if message else set())
    sent = [b" ".join([m.encode(), p.encode(), json.dumps(h).encode(), body]) for m, p, h, body in r.sent]
    pushed = [push.decrypt(m) + json.dumps(m.headers).encode() for m in push.messages]
    places = {
        "relay request": b"\n".join(sent),
        "queue database": Path(db.path).read_bytes(),
        "push": b"\n".join(pushed),
    }
    assert [m for m, _, _, _ in r.sent] == ["POST", "GET", "POST"]  # publish, poll, acknowledge
    for where, data in places.items():
        for value in searched:
            assert value.encode() not in data, f"{value!r} left the runner in the {where}"
        assert b"\x89PNG" not in data and b"\xff\xd8\xff" not in data, where
    assert json.loads(push.decrypt(push.messages[0]))["intent"] == "Post it for {vendor}"
