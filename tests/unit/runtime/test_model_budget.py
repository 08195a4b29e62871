"""The model rung's bound (SPEC §4, §11): one model call per step however long the screen keeps changing, and
`policy.max_model_calls` exact — never one call past it, across resumes. A real HTTP model server on loopback
counts the requests that actually leave the runner."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from openadapt_flow.backends.fake import FakeBackend
from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.runtime.operate.approval import approve
from openadapt_flow.runtime.runs import replay, resume
from openadapt_flow.runtime.start.launch import ReplayRequest
from tests.support.screens import Canvas
from tests.unit.runtime.test_engine import POST, make_bundle

pytestmark = pytest.mark.timeout(90)


class ModelServer:
    """A chat-completions endpoint that always points at an empty corner (its proposal never passes the check)."""

    def __init__(self) -> None:
        self.requests = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server API)
                self.rfile.read(int(self.headers["Content-Length"]))
                server.requests += 1
                data = json.dumps(
                    {"choices": [{"message": {"role": "assistant", "content": '{"x": 5, "y": 470}'}}]}
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


@pytest.fixture
def model() -> Iterator[ModelServer]:
    m = ModelServer()
    try:
        yield m
    finally:
        m.close()


@pytest.fixture(autouse=True)
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("FLOW_KEY_FILE", str(tmp_path / "install.key"))
    monkeypatch.setenv("FLOW_DECISION_KEY_FILE", str(tmp_path / "decision.key"))
    monkeypatch.chdir(tmp_path)


def loading() -> np.ndarray:
    return Canvas().text(20, 20, "Ledger").text(100, 300, "Loading").array()


class Spinner(FakeBackend):
    """A screen that never stops changing (a spinner pixel moves every 20 ms) and never shows the target."""

    def __init__(self) -> None:
        super().__init__(loading())
        self.tick = threading.Event()

    def wait_for_update(self, timeout: float) -> bool:
        self._enter()
        self.tick.wait(min(timeout, 0.02))  # the next spinner frame arrives after 20 ms
        frame = self.frame.copy()
        frame[470, 630 - len(self.events) % 2] = (self.captures * 37) % 256
        self.set_frame(frame)
        self._seen_version = self._version
        return True


def config(tmp_path, model: ModelServer, **policy: Any) -> DeployConfig:
    return DeployConfig.model_validate(
        {
            "schema": "openadapt-flow/config@1",
            "runtime": {"runs_root": str(tmp_path / "runs"), "settle_quiet_s": 0.05, "settle_timeout_s": 0.3},
            "ladder": {"model": {"enabled": True, "url": model.url, "model": "grounder", "timeout_s": 5}},
            "policy": policy,
        }
    )


def start(tmp_path, model, durable=False, **policy):
    bundle = make_bundle(tmp_path / "b", [dict(POST, timeout_s=2)])
    req = ReplayRequest(
        bundle=bundle,
        params={"vendor": "ACME"},
        backend=BackendSpec(kind="fake"),
        config=config(tmp_path, model, **policy),
        run_dir=tmp_path / "run",
        durable=durable,
    )
    return replay(req, backend_factory=lambda spec: Spinner())


def model_calls_journaled(run_dir) -> int:
    recs = [json.loads(line) for line in (run_dir / "journal.jsonl").read_text().splitlines()]
    return sum(int(r["data"].get("model_calls") or 0) for r in recs if r["type"] == "resolved")


def test_a_screen_that_keeps_changing_gets_one_model_call_per_step(tmp_path, model):
    out = start(tmp_path, model)
    assert (out.state, out.category) == ("FAILED", "resolution"), out.message
    recs = [json.loads(line) for line in (out.run_dir / "journal.jsonl").read_text().splitlines()]
    assert sum(1 for r in recs if r["type"] == "resolved") > 1  # the ladder was re-run while the screen changed
    assert model.requests == 1 and model_calls_journaled(out.run_dir) == 1
    skipped = [
        e
        for r in recs
        if r["type"] == "resolved"
        for e in r["data"]["evidence"]
        if e["rung"] == "model" and e["verdict"] == "skipped"
    ]
    assert skipped and "one model call" in skipped[0]["detail"]


def test_max_model_calls_zero_allows_no_call(tmp_path, model):
    out = start(tmp_path, model, max_model_calls=0)
    assert (out.state, out.exit_code) == ("BLOCKED", 4), out.message
    assert model.requests == 0
    incident = json.loads((out.run_dir / "incident.json").read_text())
    assert (incident["rule"], incident["observed"], incident["limit"]) == ("max_model_calls", 1, 0)


def test_the_model_budget_is_exact_across_a_resume(tmp_path, model):
    out = start(tmp_path, model, durable=True, max_model_calls=1)
    assert (out.state, out.category) == ("PAUSED", "resolution"), out.message
    assert model.requests == 1
    approve(out.run_dir, "continue", "alice")
    res = resume(out.run_dir, backend_factory=lambda spec: Spinner())
    assert (res.state, res.exit_code) == ("BLOCKED", 4), res.message
    assert model.requests == 1 and model_calls_journaled(out.run_dir) == 1  # never a second call past the budget of 1
