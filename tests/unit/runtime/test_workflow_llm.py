"""`ctx.llm.generate` against a real local HTTP server: recorded, never re-called on resume, counted in the model budget."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import PosixPath

import pytest

import openadapt_flow
from openadapt_flow.report.model import build_report
from openadapt_flow.runtime.operate.approval import deliver
from openadapt_flow.runtime.runs import resume, start_workflow
from openadapt_flow.runtime.start.launch import WorkflowRequest
from openadapt_flow.runtime.start.runref import open_ref
from tests.unit.runtime.workflow_support import SOURCE, config, journal, state, write_module

pytestmark = pytest.mark.timeout(60)

LLM_WORKFLOWS = (
    SOURCE
    + '''

@workflow
def summarize(ctx, text: str):
    first = ctx.llm.generate("Summarize: " + text, system="Be brief.", max_tokens=20)
    ok = ctx.ask_user("Ship it?", choices=["yes", "no"])
    second = ctx.llm.generate("Title for: " + first)
    return [first, ok, second]
'''
)


class ChatServer:
    """A tiny OpenAI-compatible chat-completions endpoint that records every request."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
                text = "echo: " + body["messages"][-1]["content"]
                reply = json.dumps({"choices": [{"message": {"role": "assistant", "content": text}}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


class Workspace(PosixPath):
    """The test's folder, and the run store its runs go to (`filesystem`, or this process's `memory:`)."""

    store = "filesystem"


@pytest.fixture(params=["filesystem", "memory"])
def ws(request, tmp_path, monkeypatch):
    monkeypatch.setenv("FLOW_KEY_FILE", str(tmp_path / "k"))
    monkeypatch.setenv("FLOW_DECISION_KEY_FILE", str(tmp_path / "dk"))
    monkeypatch.setenv("WF_LOG", str(tmp_path / "wf.log"))
    monkeypatch.setenv("WF_LLM_KEY", "sk-test-123")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    write_module(tmp_path, LLM_WORKFLOWS)
    ws = Workspace(tmp_path)
    ws.store = request.param
    yield ws
    write_module(tmp_path)


@pytest.fixture
def llm():
    server = ChatServer()
    yield server
    server.stop()


def start(ws, url, **policy):
    cfg = config(
        ws,
        ladder={"model": {"url": url, "model": "tiny-chat", "api_key_env": "WF_LLM_KEY", "timeout_s": 5}},
        policy=policy,
        runtime={"runs_root": str(ws / "runs"), **({"store": "memory:"} if ws.store == "memory" else {})},
    )
    ref = f"memory:{ws.name}-run" if ws.store == "memory" else ws / "run"
    return start_workflow(WorkflowRequest("wf_mod:summarize", {"text": "Q3 report"}, None, cfg, run_dir=ref))


def test_model_calls_are_recorded_and_not_repeated_on_resume(ws, llm):
    out = start(ws, llm.url)
    assert state(out.run_dir)["paused_reason"] == "awaiting_user"
    assert len(llm.requests) == 1
    req = llm.requests[0]
    assert req["path"] == "/v1/chat/completions" and req["auth"] == "Bearer sk-test-123"
    assert req["body"]["model"] == "tiny-chat" and req["body"]["max_tokens"] == 20
    assert req["body"]["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Summarize: Q3 report"},
    ]
    deliver(out.run_dir, "answer", "ctl", value="yes")
    assert resume(out.run_dir).state == "COMPLETED"
    assert len(llm.requests) == 2  # the first call came back from the journal
    result = openadapt_flow.wait(out.run_dir).result
    assert result == ["echo: Summarize: Q3 report", "yes", "echo: Title for: echo: Summarize: Q3 report"]
    assert sum(r["data"]["model_calls"] for r in journal(out.run_dir) if r["type"] == "llm_call") == 2
    assert build_report(open_ref(out.run_dir))["model_calls"] == 2
    assert "sk-test-123" not in json.dumps(journal(out.run_dir))


def test_the_model_budget_spans_resumes_and_blocks(ws, llm):
    out = start(ws, llm.url, max_model_calls=1)
    deliver(out.run_dir, "answer", "ctl", value="yes")
    out = resume(out.run_dir)
    assert (out.state, out.exit_code) == ("BLOCKED", 4)
    assert len(llm.requests) == 1
    incident = open_ref(out.run_dir).read_incident()
    assert (incident["rule"], incident["observed"], incident["limit"]) == ("max_model_calls", 2, 1)


def test_an_unreachable_endpoint_pauses_for_an_operator(ws, llm):
    url = llm.url
    llm.stop()
    out = start(ws, url)
    assert (out.state, out.category) == ("PAUSED", "model") and "unreachable" in out.message
