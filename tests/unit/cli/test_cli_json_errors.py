"""SPEC §13: with --json, an error is a CliError object on stdout as well as the one line on stderr, same exit code."""

import json

import pytest

from openadapt_flow.cli.errdoc import CliError

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def ws(tmp_path):
    (tmp_path / "notarun").mkdir()
    (tmp_path / "notarun" / "x").write_text("x")
    (tmp_path / "cfg.yaml").write_text("schema: openadapt-flow/config@1\nbackend: {kind: vnc, colour: red}\n")
    return tmp_path


CASES = [
    (["validate", "nope", "--json"], 2, "usage", "BundleError", "bundle folder not found"),
    (["status", "nowhere", "--json"], 2, "usage", "RunDirError", "run directory not found"),
    (["runs", "nowhere", "--json"], 2, "usage", "RunDirError", "runs root not found"),
    (["report", "notarun", "--json"], 2, "usage", "RunDirError", "not a run directory"),
    (["schema", "colour", "--json"], 2, "usage", "CommandError", "unknown schema 'colour'"),
    (
        ["replay", "nope", "--url", "vnc://127.0.0.1:5999", "--json"],
        2,
        "usage",
        "BundleError",
        "bundle folder not found",
    ),
    (["replay", "nope", "--config", "cfg.yaml", "--json"], 2, "usage", "ConfigError", "unknown key 'colour'"),
    (
        ["approve", "notarun", "--decision", "continue", "--operator", "al", "--json"],
        2,
        "usage",
        "RunDirError",
        "not a run directory",
    ),
    (["patch", "apply", "notarun", "b", "--json"], 2, "usage", "RunDirError", "not a run directory"),
    (["worker", "nowhere", "--once", "--json"], 2, "usage", "RunDirError", "runs root not found"),
    (["fixture", "serve", "nope", "--port", "0", "--json"], 2, "usage", "FixtureError", "fixture folder not found"),
    (["compile", "nope", "--out", "b", "--json"], 2, "usage", None, "nope"),
    (["status", "--colour", "red", "--json"], 2, "usage", "NoSuchOption", "--colour"),
    (["replay", "--json"], 2, "usage", "MissingParameter", "Missing argument 'bundle'"),
]


@pytest.mark.parametrize(
    ("argv", "code", "kind", "error_type", "needle"), CASES, ids=[" ".join(c[0][:2]) for c in CASES]
)
def test_an_error_under_json_is_a_json_object_on_stdout_and_one_line_on_stderr(
    flow, ws, argv, code, kind, error_type, needle
):
    r = flow(*argv)
    assert r.code == code, (r.out, r.err)
    err = CliError.model_validate(json.loads(r.out))
    assert (err.exit_code, err.kind) == (code, kind)
    assert error_type is None or err.type == error_type, err
    assert needle in err.error
    lines = r.err.strip().splitlines()
    assert lines == [f"error: {err.error}"], r.err  # the same text, one line
    assert "Traceback" not in r.out + r.err


def test_without_json_an_error_leaves_stdout_empty(flow, ws):
    r = flow("status", "nowhere")
    assert r.code == 2 and r.out == "" and r.err.strip() == "error: nowhere: run directory not found"


def test_wait_timeout_under_json_is_kind_timeout_exit_124(flow, ws, monkeypatch):
    from openadapt_flow.cli import durable

    def never(run, timeout, poll_s):
        raise TimeoutError(f"still RUNNING after {timeout}s")

    monkeypatch.setattr(durable, "open_run_arg", lambda run, store: type("R", (), {"ref": str(run)})())
    monkeypatch.setattr(durable, "wait", never)
    r = flow("wait", "somerun", "--timeout", "0.1", "--json")
    assert r.code == 124
    assert json.loads(r.out)["kind"] == "timeout" and "timed out: still RUNNING after 0.1s" in r.err


def test_the_error_object_has_a_json_schema(flow):
    r = flow("schema", "error")
    assert r.code == 0
    schema = json.loads(r.out)
    assert schema["$id"] == "openadapt-flow/error" and {"error", "exit_code", "kind", "type"} <= set(schema["required"])
