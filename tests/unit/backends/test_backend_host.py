"""A backend host or URL that is no host is bad input (exit 2), never a connect failure a retry loop retries (75)."""

from __future__ import annotations

import pytest

from openadapt_flow.backends.spec import BackendSpec, host_problem, parse_url
from openadapt_flow.errors import UsageError

pytestmark = pytest.mark.timeout(30)


@pytest.mark.parametrize(
    "host",
    [
        "localhost",
        "127.0.0.1",
        "::1",
        "fe80::1%eth0",
        "desk-01.corp.example.",
        "my_host",
        "bücher.de",
        "a" * 63 + ".example",
    ],
)
def test_real_hosts_pass(host):
    assert host_problem(host) is None


@pytest.mark.parametrize(
    "host, why",
    [
        ("de\x00sk", "control character (NUL"),
        ("a" * 254, "254 characters"),
        ("a" * 64 + ".example", "not a valid host name"),
        ("-x", "not a valid host name"),
        ("a b", "not a valid host name"),
        ("::g", "not a valid IPv6"),
    ],
)
def test_hosts_that_are_none_are_named(host, why):
    assert why in (host_problem(host) or "")
    with pytest.raises(UsageError) as err:
        BackendSpec(kind="vnc", host=host)
    assert err.value.exit_code == 2 and len(str(err.value)) < 300


@pytest.mark.parametrize("url", ["vnc://" + "h" * 100_000, "vnc://h\x01st:5900", "rdp://\x00"])
def test_a_url_too_long_or_holding_a_control_character_is_one_short_line(url):
    with pytest.raises(UsageError) as err:
        parse_url(url)
    assert err.value.exit_code == 2 and len(str(err.value)) < 300 and "\x00" not in str(err.value)
