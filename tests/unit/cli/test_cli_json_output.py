"""--json on the commands that lacked it: worker, fixture serve (JSON Lines while it runs), patch apply, schema."""

import json
import signal
import subprocess
import sys

import pytest

from openadapt_flow.cli.demo import DEMO_FIXTURES
from tests.support.cli import flow_env

pytestmark = pytest.mark.timeout(120)


def test_worker_once_json_is_the_list_of_runs_it_resumed(flow, tmp_path):
    (tmp_path / "runs").mkdir()
    r = flow("worker", "runs", "--once", "--json")
    assert r.code == 0, r.err
    assert json.loads(r.out) == []


def test_fixture_serve_json_prints_a_listening_then_a_stopped_event(tmp_path):
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "openadapt_flow",
            "fixture",
            "serve",
            str(DEMO_FIXTURES / "normal"),
            "--port",
            "0",
            "--json",
        ],
        cwd=tmp_path,
        env=flow_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = json.loads(proc.stdout.readline())  # one line, printed once the port is bound
        assert first["event"] == "listening" and first["port"] > 0 and first["url"].endswith(f":{first['port']}")
        proc.send_signal(signal.SIGTERM)
        rest, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    assert proc.returncode == 0, err
    assert [json.loads(line) for line in rest.splitlines()] == [{"event": "stopped", "connections": 0, "unmatched": 0}]


def test_patch_apply_json_lists_the_patches_applied(flow, tmp_path, monkeypatch):
    from openadapt_flow.cli import durable

    seen = {}
    monkeypatch.setattr(durable, "open_run_arg", lambda run, store: f"handle:{run}")
    monkeypatch.setattr(
        durable, "apply_patches", lambda run, bundle: seen.setdefault("call", (run, bundle)) and ["p-001", "p-002"]
    )
    r = flow("patch", "apply", "run-1", "bundle", "--json")
    assert r.code == 0, r.err
    assert json.loads(r.out) == {"bundle": "bundle", "applied": ["p-001", "p-002"]}
    assert seen["call"][0] == "handle:run-1"


def test_schema_accepts_json(flow):
    r = flow("schema", "config", "--json")
    assert r.code == 0 and json.loads(r.out)["$id"] == "openadapt-flow/config"


def test_worker_json_prints_one_resumed_event_per_line_until_stopped(flow, tmp_path, monkeypatch):
    import threading

    from openadapt_flow.cli import durable

    class OneScanWorker:
        def __init__(self, store, reporter, log):
            self.stop = threading.Event()

        def run_once(self):
            self.stop.set()  # as SIGTERM would after this scan
            return [
                {"run_dir": "runs/a", "state": "COMPLETED", "message": None},
                {"run_dir": "runs/b", "state": "SKIPPED", "message": "owned by a live process"},
            ]

    monkeypatch.setattr(durable, "Worker", OneScanWorker)
    (tmp_path / "runs").mkdir()
    r = flow("worker", "runs", "--poll", "0.01", "--json")
    assert r.code == 0, r.err
    assert [json.loads(line) for line in r.out.splitlines()] == [
        {"event": "resumed", "run_dir": "runs/a", "state": "COMPLETED", "message": None},
        {"event": "resumed", "run_dir": "runs/b", "state": "SKIPPED", "message": "owned by a live process"},
    ]
