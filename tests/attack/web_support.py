"""What the web attack suites (test_web_console.py, test_web_queue.py) share: runs paused in-process on the fake
desktop (real journal, signatures and decision tasks), the console and the queue served for real by their CLI
(`flow console`, `flow queue serve`: uvicorn on loopback, TLS from a test CA), logins, the values an attacker plants,
and the check that a page carrying them stays inert under its content security policy.
"""

from __future__ import annotations

import re
import ssl
import subprocess
import sys
import time
from contextlib import ExitStack
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import httpx

from openadapt_flow.backends.fake import FakeBackend
from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.runtime.runs import replay
from openadapt_flow.runtime.start.launch import ReplayRequest
from openadapt_flow.store import FilesystemStore
from tests.e2e.test_console_browser import free_port
from tests.support.screens import Canvas
from tests.support.testca import TestCerts
from tests.unit.runtime.test_durable import AFTER, SAVE, App, make_bundle
from tests.unit.runtime.test_engine import POST

# what an attacker plants, each where a page shows it; every one would run if a page put it in the markup as is
PARAM_XSS = '<img src=x onerror=alert("param")>'
OCR_XSS = "<script>alert(2)</script>"  # drawn on the application's screen; Tesseract reads it exactly
NOTE_XSS = '<svg onload=alert("note")>'
INTENT_XSS = 'Post it for {vendor} <iframe src="javascript:alert(3)">'
NAME_XSS = "<b onmouseover=alert(4)>run"  # a run directory's name (no slash)


def hidden(page: str, name: str) -> str:
    m = re.search(rf'name="{name}" value="([^"]*)"', page)
    assert m, f"no {name} in the page"
    return m.group(1)


def runs_config(tmp: Path, runtime: dict[str, Any] | None = None, **approvals: Any) -> DeployConfig:
    return DeployConfig.model_validate(
        {
            "schema": "openadapt-flow/config@1",
            "approvals": approvals,
            "runtime": {"runs_root": str(tmp / "runs"), "settle_quiet_s": 0.01, "durable": True, **(runtime or {})},
        }
    )


def pause_for_approval(
    tmp: Path,
    ledger: Path,
    name: str,
    *,
    params: dict[str, str] | None = None,
    intent: str = "Post it for {vendor}",
    ttl_s: float | None = None,
    **approvals: Any,
) -> str:
    """A run under tmp/runs paused before its consequential step (`approval: before`); its run_id."""
    bundle = make_bundle(tmp / f"bundle-{name}", [dict(SAVE, approval="before", intent=intent), AFTER])
    config = runs_config(tmp, {"pause_ttl_s": ttl_s} if ttl_s is not None else None, **approvals)
    app = App(ledger)
    out = replay(
        ReplayRequest(
            bundle=bundle,
            params=params or {"vendor": "ACME Corp"},
            backend=BackendSpec(kind="fake"),
            config=config,
            run_dir=tmp / "runs" / name,
        ),
        backend_factory=lambda spec: app.connect(),
    )
    assert out.state == "PAUSED", out.message
    return str(FilesystemStore(tmp / "runs").open_run(tmp / "runs" / name).manifest()["run_id"])


def pause_on_screen_text(tmp: Path, name: str, value: str, shown: str, intent: str = INTENT_XSS) -> str:
    """A run that types `value` into a field whose application then shows `shown`: its readback fails and the pause's
    message carries what OCR read there (and the value typed). Its run_id."""
    field = Canvas().text(20, 20, "Ledger").button(100, 100, "Post").array()
    after = Canvas().text(20, 20, "Ledger").button(100, 100, "Post").text(240, 108, shown).array()

    def on_event(fake: FakeBackend, ev: tuple) -> None:
        if ev[0] == "type":
            fake.set_frame(after)

    bundle = make_bundle(
        tmp / f"typed-{name}",
        [
            {
                "id": "name",
                "action": "type",
                "text": "{vendor}",
                "intent": intent,
                "target": POST["target"],
                "timeout_s": 1,
            }
        ],
        frame=field,
    )
    out = replay(
        ReplayRequest(
            bundle=bundle,
            params={"vendor": value},
            backend=BackendSpec(kind="fake"),
            config=runs_config(tmp),
            run_dir=tmp / "runs" / name,
        ),
        backend_factory=lambda spec: FakeBackend(field, on_event),
    )
    assert out.state == "PAUSED", out.message
    return str(FilesystemStore(tmp / "runs").open_run(tmp / "runs" / name).manifest()["run_id"])


class Markup(HTMLParser):
    """Every script element and every attribute that runs code (on…, javascript: URLs) in a page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.scripts: list[dict[str, str | None]] = []
        self.inline: list[str] = []
        self.active: list[tuple[str, str, str | None]] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "script":
            self.scripts.append(dict(attrs))
            self._in_script = True
        for k, v in attrs:
            if k.startswith("on") or (v or "").strip().lower().startswith("javascript:"):
                self.active.append((tag, k, v))

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script and data.strip():
            self.inline.append(data)


def assert_inert(resp: httpx.Response, planted: list[str], scripts: set[str]) -> None:
    """`resp` shows none of `planted` as markup: no planted value verbatim, no script but the site's own files, no
    attribute that runs code, and a content security policy that runs only the site's own scripts."""
    page = resp.text
    for value in planted:
        assert value not in page, f"{value!r} is in the page as markup"
    m = Markup()
    m.feed(page)
    assert all(s.get("src") in scripts for s in m.scripts) and not m.inline, (m.scripts, m.inline)
    assert not m.active, m.active
    csp = {d.split()[0]: d.split()[1:] for d in resp.headers["content-security-policy"].split(";") if d.strip()}
    script_src = csp.get("script-src", csp["default-src"])
    assert script_src == ["'self'"] and "frame-ancestors" in csp, csp


class Served:
    """`flow ARGS --bind 127.0.0.1:PORT` running: the real CLI and its uvicorn on loopback (HTTPS with `ca`). What it
    writes to stderr is kept in a file: each refusal is one line there."""

    def __init__(self, args: list[str], cwd: Path, env: dict[str, str], stack: ExitStack, ca: TestCerts | None = None):
        self.port, self.ca = free_port(), ca
        self.url = f"{'https' if ca else 'http'}://127.0.0.1:{self.port}"
        self.err = cwd / f"served-{self.port}.stderr"
        with self.err.open("wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "openadapt_flow", *args, "--bind", f"127.0.0.1:{self.port}"],
                cwd=cwd,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
        stack.callback(self.stop)

    def ready(self, timeout_s: float = 60) -> "Served":
        """Wait until it answers (or fail with what it wrote)."""
        deadline = time.monotonic() + timeout_s
        with self.client() as c:
            while True:
                try:
                    c.get("/login")
                    return self
                except httpx.TransportError:
                    assert self.proc.poll() is None and time.monotonic() < deadline, self.err.read_text()
                    time.sleep(0.05)  # polling for the socket to listen

    def client(self, **kw: Any) -> httpx.Client:
        verify: Any = ssl.create_default_context(cafile=str(self.ca.ca)) if self.ca else False
        return httpx.Client(base_url=self.url, verify=verify, timeout=30, **kw)

    def refusals(self) -> list[str]:
        """The lines it logged for refused requests (stderr is line-buffered: written before the answer was sent)."""
        return [line for line in self.err.read_text(errors="replace").splitlines() if ": refused " in line]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
