"""The http reader's pure parts (url filling, json_path), its configuration checks, and its timeout; a real server is in tests/e2e."""

import socket
import time

import pytest

from openadapt_flow.bundle.effect import Effect
from openadapt_flow.errors import ConfigError
from openadapt_flow.verify.effects import make_reader
from openadapt_flow.verify.readers import dig, fill_url

pytestmark = pytest.mark.timeout(30)


def http(**kw):
    return Effect.model_validate({"kind": "http", **kw})


def test_fill_url_quotes_each_value():
    url = fill_url(
        "http://h/api/{vendor}/runs/{run_id}?amount={amount}&q={{x}}",
        {"vendor": "A&B /..?#", "run_id": "r-1", "amount": 10.0},
    )
    assert url == "http://h/api/A%26B%20%2F..%3F%23/runs/r-1?amount=10&q={x}"


def test_fill_url_refuses_an_unbound_placeholder():
    with pytest.raises(ConfigError, match=r"\{vendor\}"):
        fill_url("http://h/{vendor}", {})


@pytest.mark.parametrize(
    "path, value", [("a", {"b": [1, {"c": "x"}]}), ("a.b.0", 1), ("a.b.1.c", "x"), ("a.b.-1.c", "x"), ("n", None)]
)
def test_dig(path, value):
    assert dig({"a": {"b": [1, {"c": "x"}]}, "n": None}, path) == value


@pytest.mark.parametrize(
    "path, message",
    [
        ("a.x", "a.x not found"),
        ("a.b.7", "a.b.7 is not an index of a list of 2"),
        ("a.b.z", "a.b.z is not an index"),
        ("a.b.0.c", "a.b.0.c goes inside a int"),
    ],
)
def test_dig_names_the_missing_step(path, message):
    with pytest.raises(LookupError, match=message):
        dig({"a": {"b": [1, {"c": "x"}]}}, path)


@pytest.mark.parametrize(
    "fields, env, message",
    [
        ({"url": "file:///etc/passwd"}, {}, "must be http"),
        ({"url": "http://u:p@h/x"}, {}, "not allowed inline"),
        ({"url": "http://h/x", "json_path": "a", "contains": "b"}, {}, "not both"),
        ({"url": "http://h/x", "contains": ""}, {}, "must not be empty"),
        ({"url": "http://h/x", "token_env": "TOKEN"}, {}, "TOKEN is not set.*bearer token"),
    ],
)
def test_misconfigured_http_is_a_config_error(fields, env, message):
    with pytest.raises(ConfigError, match=message):
        make_reader(http(**fields), {}, env=env)


def test_a_server_that_never_answers_is_unavailable_at_the_timeout():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(8)  # the connection lands in the backlog; no response ever comes
        read = make_reader(http(url=f"http://127.0.0.1:{s.getsockname()[1]}/x"), {}, env={}, read_timeout_s=0.3)
        t0 = time.monotonic()
        r = read()
        took = time.monotonic() - t0
    assert not r.ok and "timed out after 0.3s" in r.error and took < 2


def test_nothing_listening_is_unavailable():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = make_reader(http(url=f"http://127.0.0.1:{port}/x"), {}, env={})()
    assert not r.ok and "refused" in r.error.lower()
