"""`flow console` under web attack (SPEC §20): each test is one attack, named after what it tries, against the real app
— in-process (Starlette's TestClient) where the attack is about what the app answers, and served by `flow console`
itself (uvicorn on loopback, plain and TLS) for the Host header, HSTS and redirects a browser would follow.

Runs are paused in-process on the fake desktop (real journal, signed decision tasks); operators are enrolled in the
runs root the console serves. The attacks and what they found are listed in docs/console.md.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from openadapt_flow.auth.sessions import LOGIN_FAILURES, LOGIN_WINDOW_S
from openadapt_flow.console.app import create_app
from openadapt_flow.errors import RefusedError
from openadapt_flow.runtime.operate.approval import check_approval
from openadapt_flow.runtime.operate.operators import add_operator, disable_operator
from openadapt_flow.store import FilesystemStore, RunDir
from openadapt_flow.store.keys import load_decision_key
from tests.attack.web_support import (
    NAME_XSS,
    NOTE_XSS,
    OCR_XSS,
    PARAM_XSS,
    Served,
    assert_inert,
    hidden,
    pause_for_approval,
    pause_on_screen_text,
)
from tests.support.cli import flow_env, run_flow
from tests.support.phone_kit import env  # noqa: F401 (a fixture)
from tests.support.testca import make_test_ca

pytestmark = pytest.mark.timeout(120)
BASE = "http://127.0.0.1:8765"  # the in-process console's own address (TestClient's scope server)
SCRIPTS = {"/console.js"}


def runner_env(mp: pytest.MonkeyPatch, tmp: Path) -> Path:
    """phone_kit's `env` for a module's runs: keys under tmp, the working directory there, LEDGER_DSN; its path."""
    mp.setenv("FLOW_KEY_FILE", str(tmp / "install.key"))
    mp.setenv("FLOW_DECISION_KEY_FILE", str(tmp / "decision.key"))
    mp.chdir(tmp)
    ledger = tmp / "ledger.db"
    with sqlite3.connect(ledger) as c:
        c.execute("create table if not exists posts(vendor text)")
    mp.setenv("LEDGER_DSN", f"sqlite:///{ledger}")
    return ledger


@dataclass
class Desk:
    """A runs root, its operators, and the console's app on it (one app: one session table, one login limit)."""

    tmp: Path
    ledger: Path
    creds: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        (self.tmp / "runs").mkdir(exist_ok=True)
        self.store = FilesystemStore(self.tmp / "runs")
        self.app = create_app(self.store, report_grace_s=0.0)
        for name in ("alice", "bob"):
            self.creds[name] = add_operator(self.store, name)

    def client(self, addr: str = "127.0.0.1") -> TestClient:
        return TestClient(self.app, base_url=BASE, client=(addr, 50000), follow_redirects=False)

    def login(self, name: str, client: TestClient | None = None) -> TestClient:
        c = client or self.client()
        r = c.post(
            "/login", data={"csrf": hidden(c.get("/login").text, "csrf"), "name": name, "credential": self.creds[name]}
        )
        assert r.status_code == 303, r.text
        return c

    def pause(self, name: str, **kw) -> str:
        return pause_for_approval(self.tmp, self.ledger, name, **kw)

    def run(self, name: str) -> RunDir:
        return self.store.open_run(self.tmp / "runs" / name)

    def form(self, client: TestClient, run_id: str, decision: str) -> dict[str, str]:
        page = client.get(f"/runs/{run_id}").text
        return {"csrf": hidden(page, "csrf"), "pause_id": hidden(page, "pause_id"), "decision": decision}

    def audit(self) -> list[dict]:
        path = self.tmp / "runs" / "operator_audit.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def desk(tmp_path, env) -> Desk:
    return Desk(tmp_path, env)


@dataclass
class Gallery:
    """A module's runs root holding what the read-only attacks look at, the console in-process with alice logged in,
    and `flow console` serving the same root over HTTP (`plain`, with --allow-host console.example) and HTTPS (`tls`)."""

    desk: Desk
    alice: TestClient
    approval: str  # run "a": paused before its consequential step
    typed: str  # run "typed": paused on a readback, its message carrying the param typed and the text OCR read
    named: str  # a run whose directory's name is markup
    plain: Served
    tls: Served


@pytest.fixture(scope="module")
def gallery(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("console")
    with pytest.MonkeyPatch.context() as mp, ExitStack() as stack:
        desk = Desk(tmp, runner_env(mp, tmp))
        approval = desk.pause("a")
        typed = pause_on_screen_text(tmp, "typed", PARAM_XSS, OCR_XSS)
        named = desk.pause(NAME_XSS)
        ca = make_test_ca(tmp / "ca")
        served_env = flow_env(
            tmp,
            FLOW_DECISION_KEY_FILE=os.environ["FLOW_DECISION_KEY_FILE"],
            FLOW_STATE_DIR=os.environ["FLOW_STATE_DIR"],
            LEDGER_DSN=os.environ["LEDGER_DSN"],
        )
        plain = Served(["console", "--root", "runs", "--allow-host", "console.example"], tmp, served_env, stack)
        tls = Served(
            ["console", "--root", "runs", "--tls-cert", str(ca.cert), "--tls-key", str(ca.key)],
            tmp,
            served_env,
            stack,
            ca,
        )
        yield Gallery(desk, desk.login("alice"), approval, typed, named, plain.ready(), tls.ready())


def served_login(site: Served, desk: Desk, name: str = "alice"):
    c = site.client()
    r = c.post(
        "/login", data={"csrf": hidden(c.get("/login").text, "csrf"), "name": name, "credential": desk.creds[name]}
    )
    assert r.status_code == 303, r.text
    return c


# every route without a session -----------------------------------------------------------------------------------

ROUTES = [
    ("GET", "/", 303),
    ("GET", "/runs/{run}", 303),
    ("GET", "/frame/{run}?rel=frames/halt-name.png", 401),
    ("GET", "/events", 401),
    ("GET", "/events?run={run}", 401),
    ("POST", "/runs/{run}/decide", 401),
    ("POST", "/logout", 403),
]


@pytest.mark.parametrize("method, path, status", ROUTES, ids=[f"{m} {p}" for m, p, _ in ROUTES])
def test_every_route_without_a_session_is_refused(gallery, method, path, status):
    anon = gallery.desk.client()
    pending = gallery.desk.run("typed").read_pending()
    r = anon.request(
        method,
        path.format(run=gallery.typed),
        data={"csrf": "guess", "pause_id": pending["pause_id"], "decision": "reject"} if method == "POST" else None,
    )
    assert r.status_code == status
    if status == 303:
        assert r.headers["location"] == "/login"
    assert pending["pause_id"] not in r.text and "readback" not in r.text and r.content[:4] != b"\x89PNG"
    assert not gallery.desk.run("typed").has_approval()


def test_the_public_routes_show_nothing_of_the_runs(gallery):
    anon = gallery.desk.client()
    for path in ("/login", "/console.js"):
        r = anon.get(path)
        assert r.status_code == 200
        assert gallery.typed not in r.text and gallery.approval not in r.text and "readback" not in r.text


# CSRF ------------------------------------------------------------------------------------------------------------

POSTS = ["decide", "logout", "login"]


@dataclass
class Posted:
    """A CSRF attack's result: the response, the client that sent it and the run it aimed at (decide)."""

    resp: object
    client: TestClient
    run: str | None = None


def csrf_case(desk: Desk, route: str, token, origin: str | None = None) -> Posted:
    """Post `route` from a client that holds everything else right — a session (decide, logout) or the login form's
    cookie (login) — with `token(own token)` as its CSRF token (None: no token at all) and `origin` as its Origin."""
    headers = {"Origin": origin} if origin else {}
    if route == "login":
        c = desk.client()
        given = token(hidden(c.get("/login").text, "csrf"))
        data = {"name": "alice", "credential": desk.creds["alice"], **({"csrf": given} if given is not None else {})}
        return Posted(c.post("/login", data=data, headers=headers), c)
    c = desk.login("alice")
    name = f"csrf{len(list((desk.tmp / 'runs').iterdir()))}"
    run_id = desk.pause(name)
    form = desk.form(c, run_id, "reject")
    given = token(form.pop("csrf"))
    data = {**form, **({"csrf": given} if given is not None else {})}
    return Posted(
        c.post(f"/runs/{run_id}/decide" if route == "decide" else "/logout", data=data, headers=headers), c, name
    )


def nothing_done(desk: Desk, route: str, posted: Posted) -> None:
    events = [e["event"] for e in desk.audit()]
    if route == "decide":
        assert not desk.run(posted.run).has_approval() and "decision" not in events
    elif route == "logout":
        assert posted.client.get("/").status_code == 200  # still logged in
    else:
        assert "login" not in events and "flow_session" not in posted.client.cookies


@pytest.mark.parametrize("route", POSTS)
def test_a_post_without_its_csrf_token_is_refused(desk, route):
    posted = csrf_case(desk, route, lambda own: None)
    assert posted.resp.status_code == 403
    nothing_done(desk, route, posted)


@pytest.mark.parametrize("route", POSTS)
def test_a_post_with_a_foreign_csrf_token_is_refused(desk, route):
    """Another session's token (bob's), or another login form's."""
    other = desk.login("bob") if route != "login" else desk.client()
    foreign = hidden(other.get("/" if route != "login" else "/login").text, "csrf")
    posted = csrf_case(desk, route, lambda own: foreign)
    assert posted.resp.status_code == 403
    nothing_done(desk, route, posted)


@pytest.mark.parametrize("route", POSTS)
def test_a_post_with_a_truncated_csrf_token_is_refused(desk, route):
    posted = csrf_case(desk, route, lambda own: own[:-1])
    assert posted.resp.status_code == 403
    nothing_done(desk, route, posted)


@pytest.mark.parametrize("origin", ["http://evil.example", "http://127.0.0.1:3000", "null"])
@pytest.mark.parametrize("route", POSTS)
def test_a_post_from_a_foreign_origin_is_refused(desk, route, origin):
    """With the right cookie and token: a page of another site, of another service on this machine (another port
    is the same site for SameSite, so the cookie goes along), or of no origin (a sandboxed frame)."""
    posted = csrf_case(desk, route, lambda own: own, origin=origin)
    assert posted.resp.status_code == 403 and b"cross-origin" in posted.resp.content
    nothing_done(desk, route, posted)
    assert csrf_case(desk, route, lambda own: own, origin=BASE).resp.status_code == 303  # the console's own pages


def test_the_pages_let_a_browser_name_their_own_origin(gallery):
    """Under `Referrer-Policy: no-referrer` a browser sends `Origin: null` on the page's own form posts, which the
    Origin check refuses (any page can send null): the console's forms would stop working in a real browser
    (tests/e2e/test_console_browser.py logs in and decides in Chromium)."""
    for r in (
        gallery.desk.client().get("/login"),
        gallery.alice.get("/"),
        gallery.alice.get(f"/runs/{gallery.approval}"),
    ):
        assert r.headers["referrer-policy"] == "same-origin"


# sessions --------------------------------------------------------------------------------------------------------


def test_a_session_cookie_fixed_before_login_is_replaced_and_worthless(desk):
    c = desk.client()
    c.cookies.set("flow_session", "fixed-by-the-attacker", domain="127.0.0.1")
    desk.login("alice", c)
    assert c.cookies.get("flow_session", domain="127.0.0.1") != "fixed-by-the-attacker"  # a new token at login
    attacker = desk.client()
    attacker.cookies.set("flow_session", "fixed-by-the-attacker")
    assert attacker.get("/").status_code == 303 and attacker.get("/events").status_code == 401


def test_logout_ends_the_session_on_the_server(desk):
    c = desk.login("alice")
    token = c.cookies.get("flow_session")
    r = c.post("/logout", data={"csrf": hidden(c.get("/").text, "csrf")})
    assert r.status_code == 303 and r.headers["location"] == "/login"
    replay = desk.client()
    replay.cookies.set("flow_session", token)  # the cookie kept by someone who copied it before the logout
    assert replay.get("/").status_code == 303 and replay.get("/events").status_code == 401


def test_a_disabled_operators_session_cannot_decide(desk):
    run_id = desk.pause("d")
    c = desk.login("alice")
    form = desk.form(c, run_id, "continue")
    disable_operator(desk.store, "alice")
    assert c.post(f"/runs/{run_id}/decide", data=form).status_code == 401
    assert not desk.run("d").has_approval()


# login brute force -------------------------------------------------------------------------------------------------


def failed_login(c: TestClient, name: str, credential: str = "wrong") -> int:
    return c.post(
        "/login", data={"csrf": hidden(c.get("/login").text, "csrf"), "name": name, "credential": credential}
    ).status_code


def test_login_brute_force_stops_at_five_failures_a_minute(desk):
    assert (LOGIN_FAILURES, LOGIN_WINDOW_S) == (5, 60.0)  # the figure docs/console.md states
    c = desk.client()
    codes = [failed_login(c, "alice") for _ in range(LOGIN_FAILURES)] + [failed_login(c, "alice", desk.creds["alice"])]
    assert codes == [401] * 5 + [429]  # then even the right credential waits
    events = [(e["event"], e.get("why")) for e in desk.audit() if e.get("operator") == "alice"]
    assert events[-1] == ("login_failed", "rate limited") and not any(e == "login" for e, _ in events)


def test_login_brute_force_from_many_addresses_stops_per_name(desk):
    codes = [failed_login(desk.client(f"10.0.0.{i}"), "alice") for i in range(LOGIN_FAILURES)]
    assert codes == [401] * 5 and failed_login(desk.client("10.0.1.1"), "alice", desk.creds["alice"]) == 429


def test_login_brute_force_over_many_names_stops_per_address(desk):
    c = desk.client("10.0.2.1")
    assert [failed_login(c, f"guess{i}") for i in range(LOGIN_FAILURES)] == [401] * 5
    assert failed_login(c, "bob", desk.creds["bob"]) == 429
    assert failed_login(desk.client("10.0.2.2"), "bob", desk.creds["bob"]) == 303  # another address is not held


# Host header: DNS rebinding ----------------------------------------------------------------------------------------

FOREIGN = ["evil.example", "evil.example:{port}", "attacker.rebind.test", "localhost:{other}"]


@pytest.mark.parametrize("with_session", [False, True], ids=["anonymous", "with-session"])
@pytest.mark.parametrize("host", FOREIGN)
def test_a_foreign_host_is_refused_before_routing(gallery, host, with_session):
    """A page whose name was rebound to 127.0.0.1 reaches the console with its own name in Host: refused before any
    page, login or session is looked at, and logged in one line."""
    site = gallery.plain
    host = host.format(port=site.port, other=site.port + 1)
    c = served_login(site, gallery.desk) if with_session else site.client()
    path = f"/runs/{gallery.approval}" if with_session else "/login"
    assert c.get(path).status_code == 200  # under its own address the same client is served
    before = len(site.refusals())
    r = c.get(path, headers={"Host": host})
    assert r.status_code == 421 and gallery.approval not in r.text and "csrf" not in r.text
    assert "set-cookie" not in r.headers
    r = c.post("/login", data={"name": "alice", "credential": "x"}, headers={"Host": host})
    assert r.status_code == 421
    lines = site.refusals()[before:]
    assert len(lines) == 2 and all(repr(host) in line and "console" in line for line in lines), lines


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1:{port}",
        "localhost:{port}",
        "[::1]:{port}",
        "localhost",
        "console.example",
        "console.example:{port}",
        "CONSOLE.example:{port}",
    ],
)
def test_the_bound_address_loopback_and_listed_names_are_served(gallery, host):
    site = gallery.plain
    c = served_login(site, gallery.desk)
    r = c.get(f"/runs/{gallery.approval}", headers={"Host": host.format(port=site.port)})
    assert r.status_code == 200 and gallery.approval in r.text


@pytest.mark.parametrize("entry", ["evil example", "evil.example:99999", "*.example"])
@pytest.mark.parametrize("command", ["console", "queue serve"])
def test_an_allow_host_that_is_not_a_host_is_one_line_and_exit_2(tmp_path, command, entry):
    ca = make_test_ca(tmp_path / "ca")
    args = (
        ["console", "--root", "runs"]
        if command == "console"
        else ["queue", "serve", "--tls-cert", str(ca.cert), "--tls-key", str(ca.key), "--db", "q.sqlite3"]
    )
    r = run_flow([*args, "--allow-host", entry, "--bind", "127.0.0.1:9"], tmp_path, timeout=60)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    assert repr(entry) in r.stderr and not (tmp_path / "q.sqlite3").exists()  # refused before anything was made


def test_a_request_without_one_host_is_refused(gallery):
    site = gallery.plain
    for raw in (
        b"GET /login HTTP/1.0\r\n\r\n",
        b"GET /login HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n",
    ):
        with socket.create_connection(("127.0.0.1", site.port), timeout=10) as s:
            s.sendall(raw)
            head = s.recv(4096).split(b"\r\n", 1)[0]
        assert head.split()[1] in (b"400", b"421"), head  # h11 itself refuses two Host headers (400)


def test_a_trailing_slash_redirect_cannot_send_a_browser_to_a_foreign_host(gallery):
    """Starlette answers /login/ with a redirect built from the Host header: under a rebound name it pointed the
    browser at the attacker's origin (an open redirect). Now the request never reaches the router."""
    c = gallery.plain.client()
    r = c.get("/login/", headers={"Host": "evil.example"})
    assert r.status_code == 421 and "location" not in r.headers
    own = c.get("/login/")
    assert own.status_code in (307, 404) and not own.headers.get("location", "/").startswith("http://evil")


# HSTS --------------------------------------------------------------------------------------------------------------


def test_the_tls_console_sends_hsts_on_every_response(gallery):
    site = gallery.tls
    c, anon = site.client(), site.client()
    form = c.get("/login")
    login = c.post(
        "/login", data={"csrf": hidden(form.text, "csrf"), "name": "alice", "credential": gallery.desk.creds["alice"]}
    )
    assert "secure" in login.headers["set-cookie"].lower()
    responses = [
        form,
        login,
        anon.get("/"),
        anon.get(f"/frame/{gallery.typed}?rel=frames/halt-name.png"),
        c.get(f"/runs/{gallery.approval}"),
        c.get("/nowhere"),
        anon.get("/login", headers={"Host": "evil.example"}),
    ]
    for r in responses:
        hsts = r.headers.get("strict-transport-security", "")
        assert hsts.startswith("max-age=") and int(hsts.split("=")[1].split(";")[0]) >= 180 * 86400, (r.url, hsts)
    assert [r.status_code for r in responses] == [200, 303, 303, 401, 200, 404, 421]


def test_the_plain_console_sends_no_hsts(gallery):
    """Over plain HTTP a browser ignores HSTS (RFC 6797 §8.1); the console does not pretend."""
    assert "strict-transport-security" not in gallery.plain.client().get("/login").headers


# open redirects ----------------------------------------------------------------------------------------------------


def test_login_never_redirects_off_the_console(desk):
    c = desk.client()
    csrf = hidden(c.get("/login?next=https://evil.example").text, "csrf")
    for url in (
        "/login?next=https://evil.example",
        "/login?next=//evil.example",
        "/login?return_to=https://evil.example",
    ):
        r = c.post(
            url, data={"csrf": csrf, "name": "alice", "credential": desk.creds["alice"], "next": "https://evil.example"}
        )
        assert r.status_code == 303 and r.headers["location"] == "/"
        csrf = hidden(c.get("/login").text, "csrf")


def test_decide_and_logout_redirect_only_within_the_console(desk):
    run_id = desk.pause("r")
    c = desk.login("alice")
    r = c.post(f"/runs/{run_id}/decide", data={**desk.form(c, run_id, "continue"), "next": "https://evil.example"})
    assert r.status_code == 303 and r.headers["location"].startswith(f"/runs/{run_id}?msg=")
    r = c.post("/logout", data={"csrf": hidden(c.get("/").text, "csrf"), "next": "//evil.example"})
    assert r.status_code == 303 and r.headers["location"] == "/login"


# path traversal ----------------------------------------------------------------------------------------------------

TRAVERSALS = [
    "frames/../manifest.json",
    "frames/../../operators.json",
    "frames/../../../../../../etc/passwd",
    "frames%2F..%2Fmanifest.json",
    "frames/%2e%2e/manifest.json",
    "frames/%252e%252e/manifest.json",
    "/etc/passwd",
    "%2Fetc%2Fpasswd",
    "frames//etc/passwd",
    "frames/..%5Cmanifest.json",
    "frames/halt-name.png%00.json",
    "manifest.json",
    "journal.jsonl",
    "frames/",
]


@pytest.mark.parametrize("rel", TRAVERSALS)
def test_frame_path_traversal_is_refused(gallery, rel):
    r = gallery.alice.get(f"/frame/{gallery.typed}?rel={rel}")
    assert r.status_code == 404 and b"run_id" not in r.content and b"root:" not in r.content
    ok = gallery.alice.get(f"/frame/{gallery.typed}?rel=frames/halt-name.png")
    assert ok.status_code == 200 and ok.content.startswith(b"\x89PNG")


@pytest.mark.parametrize(
    "path",
    [
        "/frame/%2e%2e?rel=frames/halt-name.png",
        "/frame/%2e%2e%2ftyped?rel=frames/halt-name.png",
        "/frame/typed?rel=frames/halt-name.png",
        "/frame/%2Ftmp?rel=frames/halt-name.png",
        "/runs/%2e%2e",
        "/runs/typed",
        "/runs/%2e%2e%2fruns%2ftyped",
    ],
)
def test_a_run_named_by_a_path_is_refused(gallery, path):
    """Runs are found by run id (a manifest's), never by a path: `typed` is the run's directory, not its id."""
    r = gallery.alice.get(path)
    assert r.status_code == 404 and not r.content.startswith(b"\x89PNG") and "readback" not in r.text


@pytest.mark.parametrize("target", ["operators", "decision-key", "etc-passwd", "another-runs-manifest"])
def test_a_symlink_in_the_run_dir_serves_no_other_file(gallery, target):
    """Whoever can write into the runs root plants frames/<x>.png → a file the console's user can read: the
    operators' hashes, the decision key (which signs approvals), any file. The console serves PNG frames only."""
    run = gallery.desk.tmp / "runs" / "typed"
    aim = {
        "operators": gallery.desk.tmp / "runs" / "operators.json",
        "decision-key": Path(os.environ["FLOW_DECISION_KEY_FILE"]),
        "etc-passwd": Path("/etc/passwd"),
        "another-runs-manifest": gallery.desk.tmp / "runs" / "a" / "manifest.json",
    }[target]
    assert aim.is_file()
    link = run / "frames" / f"zz-{target}.png"
    link.symlink_to(aim)
    try:
        r = gallery.alice.get(f"/frame/{gallery.typed}?rel=frames/zz-{target}.png")
        assert r.status_code == 404 and aim.read_bytes()[:16] not in r.content
    finally:
        link.unlink()


# stored XSS under the CSP ------------------------------------------------------------------------------------------


def test_stored_xss_through_param_values_and_ocr_text_is_inert(gallery):
    """The param typed and the text the application showed (read by OCR) are in the pause's message, on the run
    page, its live part and the runs list."""
    message = gallery.desk.run("typed").read_pending()["message"]
    assert PARAM_XSS in message and OCR_XSS in message  # both reached the page's data
    for path in (f"/runs/{gallery.typed}", f"/runs/{gallery.typed}?part=1", "/", "/?part=1"):
        r = gallery.alice.get(path)
        assert r.status_code == 200 and "&lt;script&gt;alert(2)&lt;/script&gt;" in r.text
        assert_inert(r, [PARAM_XSS, OCR_XSS], SCRIPTS)


def test_stored_xss_through_an_operator_note_is_inert(desk):
    run_id = desk.pause("n")
    c = desk.login("alice")
    r = c.post(f"/runs/{run_id}/decide", data={**desk.form(c, run_id, "reject"), "note": NOTE_XSS})
    assert r.status_code == 303
    assert desk.run("n").read_incident()["note"] == NOTE_XSS
    page = c.get(f"/runs/{run_id}")
    assert "&lt;svg onload" in page.text
    assert_inert(page, [NOTE_XSS], SCRIPTS)


def test_stored_xss_through_a_run_directory_name_is_inert(gallery):
    for path in ("/", f"/runs/{gallery.named}"):
        r = gallery.alice.get(path)
        assert r.status_code == 200 and "&lt;b onmouseover" in r.text
        assert_inert(r, [NAME_XSS], SCRIPTS)


def test_stored_xss_through_a_bundles_intent_and_step_names_is_inert(gallery):
    """The intent (INTENT_XSS, in the typed run's bundle) is never shown by the console; a step id cannot carry
    markup (the bundle refuses it: [a-z0-9-]+). Neither appears as markup."""
    r = gallery.alice.get(f"/runs/{gallery.typed}")
    assert_inert(r, ["<iframe", 'javascript:alert(3)'], SCRIPTS)


def test_a_reflected_message_is_inert(gallery):
    r = gallery.alice.get(f"/runs/{gallery.approval}?msg={OCR_XSS}")
    assert "&lt;script&gt;" in r.text
    assert_inert(r, [OCR_XSS], SCRIPTS)


def test_a_reflected_error_is_inert(desk):
    run_id = desk.pause("u")
    c = desk.login("alice")
    r = c.post(f"/runs/{run_id}/decide", data={**desk.form(c, run_id, "reject"), "decision": PARAM_XSS})
    assert r.status_code == 400 and "unknown decision" in r.text
    assert_inert(r, [PARAM_XSS], SCRIPTS)


# decisions: another run or pause, replayed, expired ---------------------------------------------------------------


def test_a_decision_for_another_runs_pause_is_refused(desk):
    a, b = desk.pause("a"), desk.pause("b")
    c = desk.login("alice")
    r = c.post(f"/runs/{b}/decide", data=desk.form(c, a, "reject"))  # a's pause, sent to b
    assert r.status_code == 409 and "not open on this run" in r.text
    assert not desk.run("a").has_approval() and not desk.run("b").has_approval()


def test_a_decision_for_a_reissued_pause_is_refused(desk):
    run_id = desk.pause("e")
    c = desk.login("alice")
    old = desk.form(c, run_id, "continue")
    assert c.post(f"/runs/{run_id}/decide", data=desk.form(c, run_id, "escalate")).status_code == 303  # a new pause
    r = c.post(f"/runs/{run_id}/decide", data=old)
    assert r.status_code == 409 and "not open" in r.text
    run = desk.run("e")  # the escalation re-issued the pause at once; nothing stands for the new one
    assert run.read_pending()["pause_id"] != old["pause_id"] and not run.has_approval()


def test_a_replayed_decision_is_not_recorded_twice(desk):
    run_id = desk.pause("p", quorum=2)
    c = desk.login("alice")
    form = desk.form(c, run_id, "continue")
    assert c.post(f"/runs/{run_id}/decide", data=form).status_code == 303
    again = c.post(f"/runs/{run_id}/decide", data=form)
    assert again.status_code == 303 and "already%20recorded" in again.headers["location"].replace("+", "%20")
    assert len(desk.run("p").read_approval()["votes"]) == 1
    assert [e["event"] for e in desk.audit()].count("decision") == 1


def test_a_decision_after_the_pause_expired_is_refused(desk):
    run_id = desk.pause("x", ttl_s=1)
    c = desk.login("alice")
    form = desk.form(c, run_id, "continue")
    expires = datetime.fromisoformat(desk.run("x").read_pending()["expires_at"].replace("Z", "+00:00")).timestamp()
    while time.time() <= expires + 0.05:  # waiting for the task's own expiry, not for a guess
        time.sleep(0.05)
    r = c.post(f"/runs/{run_id}/decide", data=form)
    assert r.status_code == 409 and "expired" in r.text
    assert not desk.run("x").has_approval()


# who may decide ----------------------------------------------------------------------------------------------------


def test_an_operator_not_listed_in_approvals_operators_is_refused(desk):
    run_id = desk.pause("o", operators=["alice"])
    bob = desk.login("bob")
    r = bob.post(f"/runs/{run_id}/decide", data=desk.form(bob, run_id, "continue"))
    assert r.status_code == 409 and "not among approvals.operators" in r.text
    assert not desk.run("o").has_approval()
    alice = desk.login("alice")
    assert alice.post(f"/runs/{run_id}/decide", data=desk.form(alice, run_id, "continue")).status_code == 303


def test_one_operator_cannot_meet_a_quorum_of_two_alone(desk):
    run_id = desk.pause("q", quorum=2)
    phone_sized, desktop = desk.login("alice"), desk.login("alice")  # two sessions, two devices: one operator
    for c in (phone_sized, desktop):
        assert c.post(f"/runs/{run_id}/decide", data=desk.form(c, run_id, "continue")).status_code == 303
    run = desk.run("q")
    assert len(run.read_approval()["votes"]) == 1
    with pytest.raises(RefusedError, match="quorum not met: 1 of 2"):
        check_approval(run, run.read_pending(), load_decision_key(False))
    bob = desk.login("bob")
    assert bob.post(f"/runs/{run_id}/decide", data=desk.form(bob, run_id, "continue")).status_code == 303
    assert len(run.read_approval()["votes"]) == 2
