"""The hosted phone lane end to end on loopback with real TLS (SPEC §21): a durable run pauses on the recorded demo
app (served over real RFB); `flow relay` publishes its closed context to `flow queue serve`; the queue pushes it,
encrypted, to a push service the test serves; an operator logs in on the phone page in headless Chromium at a phone's
size and taps Continue; the relay verifies the signed decision and records it (channel `phone`); `flow resume`
completes with exactly one row. Then the closed context is audited by value: the queue's database file, every
request body it received and every push payload (decrypted) hold no param value, no word OCR read from the run's
frames, and no image bytes."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import sqlite3
import ssl
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC

from openadapt_flow.cli.demo import DEMO_BUNDLE, DEMO_FIXTURES, PARAMS, _rows
from openadapt_flow.cli.demo_loop import _served
from openadapt_flow.imaging.png import decode_rgb
from openadapt_flow.vision.ocr import OcrEngine
from tests.e2e.test_console_browser import free_port, wait
from tests.support.cli import REPO, flow_env, run_flow
from tests.support.pushservice import PushService, vapid_claims
from tests.support.testca import TestCerts, make_test_ca

pytestmark = pytest.mark.timeout(240)
SCREENSHOT = (
    REPO / "build" / "test-artifacts" / "phone" / "phone-lane.png"
)  # build/ is git-ignored; docs/phone-lane.png is one of these
INTENT = "Save the invoice for {vendor}"  # a placeholder the closed context must keep as written


class Lane:
    """A test CA, a push service, the queue (`flow queue serve`) with one operator and one relay token."""

    def __init__(self, tmp: Path, stack: ExitStack, ca: TestCerts) -> None:
        self.tmp, self.ca = tmp, ca
        self.env = flow_env(tmp, REQUESTS_CA_BUNDLE=str(self.ca.ca))  # the queue trusts the test push service
        self.push = PushService()
        self.push.start(self.ca)
        stack.callback(self.push.stop)
        self.db = tmp / "queue" / "queue.sqlite3"
        self.db.parent.mkdir()
        self.url = f"https://127.0.0.1:{free_port()}"
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "openadapt_flow",
                "queue",
                "serve",
                "--bind",
                self.url.removeprefix("https://"),
                "--tls-cert",
                str(self.ca.cert),
                "--tls-key",
                str(self.ca.key),
                "--db",
                str(self.db),
                "--json",
            ],
            cwd=tmp,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        stack.callback(stop, self.proc)
        started = json.loads(self.proc.stdout.readline() or "{}")
        assert started.get("url") == self.url + "/", self.proc.stderr.read()
        self.vapid = started["vapid"]
        self.http = httpx.Client(
            base_url=self.url, verify=ssl.create_default_context(cafile=str(self.ca.ca)), timeout=30
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                self.http.get("/login")
                break
            except httpx.TransportError:
                assert self.proc.poll() is None and time.monotonic() < deadline, "flow queue serve did not start"
                time.sleep(0.1)
        key, token, operator = self.flow(
            ["queue", "key"], ["queue", "relay-token"], ["queue", "operator", "add", "pat"]
        )
        assert key["key"] == started["key"]
        self.key, self.token, self.credential = key["key"], token["token"], operator["credential"]

    def flow(self, *commands: list[str]) -> list[dict]:
        """Run the `flow` commands side by side (each on the queue's database, with --json); their JSON."""
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "openadapt_flow", *c, "--db", str(self.db), "--json"],
                cwd=self.tmp,
                env=self.env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for c in commands
        ]
        outs = []
        for p in procs:
            out, err = p.communicate(timeout=60)
            assert p.returncode == 0, err
            outs.append(json.loads(out))
        return outs

    def relay(self, root: Path, *extra: str, key: str | None = None) -> subprocess.Popen:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "openadapt_flow",
                "relay",
                "--queue",
                self.url,
                "--queue-key",
                key or self.key,
                "--token-env",
                "RELAY_TOKEN",
                "--ca-file",
                str(self.ca.ca),
                "--root",
                str(root),
                "--poll-s",
                "1",
                *extra,
            ],
            cwd=self.tmp,
            env={**self.env, "RELAY_TOKEN": self.token},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def login(self) -> httpx.Client:
        client = httpx.Client(base_url=self.url, verify=ssl.create_default_context(cafile=str(self.ca.ca)), timeout=30)
        csrf = hidden(client.get("/login").text, "csrf")
        r = client.post("/login", data={"csrf": csrf, "name": "pat", "credential": self.credential})
        assert r.status_code == 303, r.text
        return client


@pytest.fixture(scope="module")
def certs(tmp_path_factory) -> TestCerts:
    return make_test_ca(tmp_path_factory.mktemp("ca"))


@pytest.fixture(scope="module")
def lane(tmp_path_factory, certs):
    """One queue for the module's tests (each test relays its own runs root)."""
    with ExitStack() as stack:
        yield Lane(tmp_path_factory.mktemp("lane"), stack, certs)


@pytest.fixture
def phone(certs):
    """Headless Chromium at a phone's size that trusts the test server's key (and nothing else it would not)."""
    opts = Options()
    opts.binary_location = "/usr/bin/chromium"
    for a in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        f"--ignore-certificate-errors-spki-list={spki_hash(certs.cert)}",
    ):
        opts.add_argument(a)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def spki_hash(cert: Path) -> str:
    """base64(SHA-256(SubjectPublicKeyInfo)): how Chromium names a key it is told to trust."""
    pub = x509.load_pem_x509_certificate(cert.read_bytes()).public_key()
    spki = pub.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return base64.b64encode(hashlib.sha256(spki).digest()).decode("ascii")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def hidden(page: str, name: str) -> str:
    m = re.search(rf'name="{name}" value="([^"]*)"', page)
    assert m, f"no {name} in the page"
    return m.group(1)


def approval_bundle(tmp: Path) -> Path:
    """The demo bundle with its Save step waiting for an approval and an intent naming a param."""
    out = tmp / "bundle"
    shutil.copytree(DEMO_BUNDLE, out)
    text = (out / "flow.yaml").read_text()
    text = text.replace("  intent: Save the invoice\n", f"  intent: {INTENT}\n  approval: before\n")
    assert INTENT in text
    (out / "flow.yaml").write_text(text)
    return out


def paused_run(tmp: Path, env: dict, port: int, name: str) -> Path:
    args = [
        "replay",
        str(approval_bundle(tmp)),
        "--url",
        f"vnc://127.0.0.1:{port}",
        "--durable",
        "--run-dir",
        f"runs/{name}",
    ]
    args += [a for k, v in PARAMS.items() for a in ("--param", f"{k}={v}")]
    r = run_flow(args, tmp, env=env, timeout=180)
    assert r.returncode == 3, r.stdout + r.stderr
    return tmp / "runs" / name


def sockets(pid: int) -> tuple[set[str], set[str]]:
    """(inodes of the sockets `pid` holds, those of them in LISTEN state — TCP state 0A), from /proc."""
    held = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except FileNotFoundError:  # closed meanwhile
            continue
        if target.startswith("socket:["):
            held.add(target[8:-1])
    listening = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            cols = line.split()
            if cols[3] == "0A":
                listening.add(cols[9])
    return held, held & listening


def acked(db: Path) -> list[tuple]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT status, outcome FROM decisions").fetchall()
    finally:
        conn.close()


def ocr_words(run: Path) -> set[str]:
    """Every word OCR reads from the run's frames (3+ characters: shorter ones are everywhere in JSON)."""
    engine, words = OcrEngine(), set()
    for png in sorted((run / "frames").glob("*.png")):
        image = decode_rgb(png.read_bytes())
        assert image is not None, png
        words |= {w.text.strip(".,:;()") for w in engine.read(image)}
    return {w for w in words if len(w) >= 3}


RAW_MIN = (
    5  # a value this long is looked for in the raw bytes too: ciphertext matches it by chance once in ~10^12 bytes
)


def db_texts(db: Path) -> list[str]:
    """Every text the queue's database holds: its text values, and its blobs that are UTF-8 (a blob that is not is
    ciphertext or a hash: it can hold no readable word, and random bytes hold any 3-letter word by chance)."""
    conn = sqlite3.connect(db)
    try:
        out = []
        for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                for v in row:
                    if isinstance(v, str):
                        out.append(v)
                    elif isinstance(v, bytes):
                        try:
                            out.append(v.decode("utf-8"))
                        except UnicodeDecodeError:
                            pass
        return out
    finally:
        conn.close()


def leaked(value: str, texts: dict[str, str], raw: dict[str, bytes]) -> str | None:
    """Where `value` shows: in a text (a one-word value as a whole word, a longer one anywhere in it), or, when it is
    long enough not to turn up in ciphertext by chance, anywhere in the raw bytes."""
    for where, text in texts.items():
        if value in re.findall(r"[^\W_]+", text) if value.isalnum() else value in text:
            return where
    return next((where for where, data in raw.items() if len(value) >= RAW_MIN and value.encode() in data), None)


def test_the_leak_check_finds_words_in_texts_and_long_values_in_any_bytes(tmp_path):
    texts = {"push 0": '{"intent": "Save the invoice (ACME Corp)", "amount": "1250.5"}'}
    assert leaked("Corp", texts, {}) == "push 0" and leaked("1250.5", texts, {}) == "push 0"
    assert leaked("Cor", texts, {}) is None  # part of a word is not the word
    cipher = {"queue db": os.urandom(64) + b"Cor" + os.urandom(64) + b"Katherine" + os.urandom(8)}
    assert leaked("Cor", {}, cipher) is None and leaked("Katherine", {}, cipher) == "queue db"
    db = tmp_path / "q.sqlite3"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE t (a TEXT, b BLOB)")
    conn.execute("INSERT INTO t VALUES (?, ?), (?, ?)", ("note: ACME", b'{"x": "Westside"}', "-", os.urandom(32)))
    conn.commit()
    conn.close()
    assert {"note: ACME", '{"x": "Westside"}', "-"} <= set(db_texts(db))


def test_a_phone_decision_resumes_the_run_and_nothing_but_the_closed_context_left(tmp_path, lane, phone):
    browser = phone
    browser.set_window_size(390, 844)
    with ExitStack() as stack:
        db = tmp_path / "invoices.db"
        run_env = {**lane.env, "DEMO_DB_DSN": f"sqlite:///{db}"}
        port = stack.enter_context(_served(DEMO_FIXTURES / "normal", db))
        run = paused_run(tmp_path, run_env, port, "r1")
        phone = lane.login()  # the phone enrols for push (the test's own subscription: key pair + auth secret)
        page = phone.get("/").text
        r = phone.post("/subscribe", json=lane.push.subscription(), headers={"X-CSRF-Token": hidden(page, "csrf")})
        assert r.status_code == 201, r.text

        relay = lane.relay(tmp_path / "runs")
        stack.callback(stop, relay)
        assert lane.push.arrived.wait(60), relay.stderr.read() if relay.poll() is not None else "no push"
        assert sockets(relay.pid)[1] == set()  # the runner side opens no port, while it runs
        msg = lane.push.messages[0]
        pushed = json.loads(lane.push.decrypt(msg))
        assert pushed["intent"] == INTENT and pushed["step"] == "save" and pushed["bundle"] == "demo-invoice"
        assert pushed["allowed"] == ["continue", "reject", "escalate"]
        claims = vapid_claims(msg, lane.vapid)
        assert claims["aud"] == f"https://127.0.0.1:{lane.push.port}" and claims["exp"] > time.time()

        browser.get(lane.url + "/login")
        browser.find_element(By.ID, "name").send_keys("pat")
        browser.find_element(By.ID, "credential").send_keys(lane.credential)
        browser.find_element(By.ID, "submit").click()
        card = wait(browser, EC.presence_of_element_located((By.CSS_SELECTOR, "section.task")))
        assert INTENT in card.text and "approval" in card.text
        assert browser.execute_script("return document.documentElement.scrollWidth") <= 400  # no sideways scrolling
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(SCREENSHOT))
        card.find_element(By.CSS_SELECTOR, "button.continue").click()
        assert wait(browser, EC.presence_of_element_located((By.ID, "msg"))).text == "sent: continue by pat"

        approval_file = run / "approval.json"
        deadline = time.monotonic() + 60
        while not approval_file.exists():
            assert relay.poll() is None and time.monotonic() < deadline, "the relay did not record the decision"
            time.sleep(0.1)
        approval = json.loads(approval_file.read_text())
        assert (approval["decision"], approval["operator"], approval["channel"]) == ("continue", "pat", "phone")
        while acked(lane.db) != [("recorded", "recorded")]:  # the relay tells the queue, in its closed vocabulary
            assert relay.poll() is None and time.monotonic() < deadline, "the relay did not acknowledge the decision"
            time.sleep(0.1)
        stop(relay)
        r = run_flow(["resume", "runs/r1", "--require-approval"], tmp_path, env=run_env, timeout=180)
        assert r.returncode == 0, r.stdout + r.stderr
        assert len(_rows(db)) == 1

        # the audit, by value
        secrets = {v for v in PARAMS.values()} | {str(float(PARAMS["amount"]))}
        words = ocr_words(run) - {"invoice", "Invoice", "save", "Save"}  # the intent as written names these
        assert len(words) >= 5, words
        conn = sqlite3.connect(lane.db)
        bodies = [bytes(b) for (b,) in conn.execute("SELECT body FROM requests")]
        conn.close()
        payloads = [lane.push.decrypt(m) for m in lane.push.messages]
        corpus = {
            "queue db": lane.db.read_bytes(),
            **{f"request {i}": b for i, b in enumerate(bodies)},
            **{f"push {i}": p for i, p in enumerate(payloads)},
        }
        texts = {f"queue db value {i}": t for i, t in enumerate(db_texts(lane.db))}
        for where, data in corpus.items():
            try:
                texts[where] = data.decode("utf-8")
            except UnicodeDecodeError:
                pass
        for value in secrets | words:
            where = leaked(value, texts, corpus)
            assert where is None, f"{value!r} left the runner in {where}"
        for where, data in corpus.items():
            assert b"\x89PNG" not in data and b"\xff\xd8\xff" not in data, f"image bytes in {where}"
        figures = {
            "db_bytes": len(corpus["queue db"]),
            "requests": len(bodies),
            "request_bytes": sum(map(len, bodies)),
            "pushes": len(payloads),
            "push_fields": sorted(pushed),
            "values_searched": len(secrets | words),
        }
        (REPO / "build").mkdir(exist_ok=True)
        (REPO / "build" / "phone-audit.json").write_text(json.dumps(figures, indent=2))


def test_a_relay_pointed_at_a_queue_with_another_key_refuses_to_start(tmp_path, lane):
    with ExitStack() as stack:
        (tmp_path / "runs").mkdir()
        other = "ed25519:" + "A" * 43  # a well-formed key that is not the queue's
        relay = lane.relay(tmp_path / "runs", key=other)
        stack.callback(stop, relay)
        out, err = relay.communicate(timeout=60)
        assert relay.returncode == 6, err
        assert "not --queue-key" in err and len(err.strip().splitlines()) == 1


def test_the_relay_opens_no_listening_socket(tmp_path, lane):
    (tmp_path / "runs").mkdir()
    relay = lane.relay(tmp_path / "runs")
    try:
        line = relay.stderr.readline()  # printed once the queue proved its key: the relay is in its loop
        assert "proved key" in line, line + (relay.stderr.read() if relay.poll() is not None else "")
        deadline = time.monotonic() + 30
        while not sockets(relay.pid)[0]:  # its long-poll's connection: the check sees the sockets it holds
            assert relay.poll() is None and time.monotonic() < deadline, "the relay never connected"
            time.sleep(0.05)
        held, listening = sockets(relay.pid)
        assert held and listening == set()
        assert sockets(lane.proc.pid)[1]  # the same check does see a listening socket: the queue's
    finally:
        stop(relay)
