"""Backend URLs, specs and the factory: what users type on the command line and what lands in the manifest."""

from __future__ import annotations

import json

import pytest

from openadapt_flow.backends.factory import open_backend
from openadapt_flow.backends.spec import BackendSpec, parse_url
from openadapt_flow.errors import UsageError

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize(
    ("url", "kind", "host", "port"),
    [
        ("vnc://10.0.0.5", "vnc", "10.0.0.5", 5900),
        ("vnc://10.0.0.5:5901", "vnc", "10.0.0.5", 5901),
        ("VNC://Ledger.example:5902/", "vnc", "ledger.example", 5902),
        ("vnc://[::1]:5903", "vnc", "::1", 5903),
        ("rdp://winbox", "rdp", "winbox", 3389),
        ("rdp://winbox:3390", "rdp", "winbox", 3390),
    ],
)
def test_parse_host_urls(url: str, kind: str, host: str, port: int) -> None:
    spec = parse_url(url)
    assert (spec.kind, spec.host, spec.effective_port) == (kind, host, port)


def test_default_port_is_not_stored_but_shown() -> None:
    spec = parse_url("vnc://host")
    assert spec.port is None
    assert spec.url == "vnc://host:5900"
    assert parse_url("vnc://[::1]:5901").url == "vnc://[::1]:5901"


def test_parse_fixture_url() -> None:
    assert parse_url("fixture:demo/fixtures/ledger").path == "demo/fixtures/ledger"
    assert parse_url("fixture:/abs/path").path == "/abs/path"


@pytest.mark.parametrize(
    "url",
    [
        "",
        "screen",
        "http://host",
        "vnc://",
        "vnc:host",
        "vnc://host:99999",
        "vnc://host:0",
        "vnc://host/path",
        "vnc://host?x=1",
        "fixture:",
        "rdp://:3389",
        "vnc://host:abc",
    ],
)
def test_bad_urls_are_one_line_usage_errors_naming_the_url(url: str) -> None:
    with pytest.raises(UsageError) as err:
        parse_url(url)
    message = str(err.value)
    assert "\n" not in message
    assert repr(url.strip()) in message or "fixture" in message


def test_credentials_in_url_are_refused_without_echoing_them() -> None:
    with pytest.raises(UsageError) as err:
        parse_url("vnc://admin:hunter2@host:5900")
    assert "hunter2" not in str(err.value)
    assert "password_env" in str(err.value)


def test_to_json_holds_only_the_env_var_name() -> None:
    spec = BackendSpec(kind="vnc", host="h", port=5901, password_env="LEDGER_VNC_PASSWORD")
    data = spec.to_json()
    assert data["password_env"] == "LEDGER_VNC_PASSWORD"
    assert "password" not in data
    json.dumps(data)
    assert BackendSpec.from_json(data) == spec


def test_from_json_rejects_unknown_keys() -> None:
    with pytest.raises(UsageError, match="password"):
        BackendSpec.from_json({"kind": "vnc", "host": "h", "password": "x"})


@pytest.mark.parametrize(
    "kwargs",
    [
        {"kind": "ssh", "host": "h"},
        {"kind": "vnc"},
        {"kind": "vnc", "host": "h", "port": 70000},
        {"kind": "vnc", "host": "h", "password_env": "not a name"},
        {"kind": "vnc", "host": "h", "connect_timeout_s": 0},
        {"kind": "screen", "monitor": 0},
        {"kind": "fixture"},
    ],
)
def test_invalid_specs_are_usage_errors(kwargs: dict) -> None:
    with pytest.raises(UsageError):
        BackendSpec(**kwargs)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (BackendSpec(kind="rdp", host="h"), "rdp backend needs a username"),  # refused before connecting
        (BackendSpec(kind="fixture", path="x"), "x: fixture folder not found"),  # checked before anything is played
        (BackendSpec(kind="fake"), "FakeBackend"),
    ],
)
def test_open_backend_refuses_kinds_not_built(spec: BackendSpec, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        open_backend(spec)


def test_missing_password_env_var_is_a_usage_error_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FLOW_TEST_NO_SUCH_PW", raising=False)
    spec = BackendSpec(kind="vnc", host="127.0.0.1", port=1, password_env="FLOW_TEST_NO_SUCH_PW")
    with pytest.raises(UsageError, match="FLOW_TEST_NO_SUCH_PW"):
        open_backend(spec)
