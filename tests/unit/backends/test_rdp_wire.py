"""The pure parts of the rdp backend: negotiation bytes, fingerprints, xfreerdp's command line and exits, keys."""

from __future__ import annotations

import hashlib
import struct
from pathlib import Path

import pytest

from openadapt_flow.backends import rdp_wire as w
from openadapt_flow.errors import AuthFailed, BackendError, BackendTimeout, ConnectionFailed, UsageError

pytestmark = pytest.mark.timeout(30)

URL, USER = "rdp://winbox:3389", "alice"


def confirm(neg: bytes = b"") -> bytes:
    x224 = bytes([6 + len(neg), 0xD0, 0, 0, 0, 0, 0]) + neg
    return struct.pack(">BBH", 3, 0, 4 + len(x224)) + x224


def test_connection_request_is_the_documented_19_bytes() -> None:
    # MS-RDPBCGR 4.1.1 without the cookie: TPKT, X.224 CR, RDP_NEG_REQ for TLS | CredSSP | CredSSP-EX
    assert w.connection_request().hex() == "030000130ee00000000000010008000b000000"
    assert w.connection_request(w.PROTOCOL_SSL)[-4:] == b"\x01\x00\x00\x00"


def test_parse_connection_confirm() -> None:
    assert w.parse_connection_confirm(confirm(struct.pack("<BBHI", 2, 0, 8, w.PROTOCOL_SSL))) == w.PROTOCOL_SSL
    assert w.parse_connection_confirm(confirm(struct.pack("<BBHI", 2, 0x1F, 8, w.PROTOCOL_HYBRID))) == w.PROTOCOL_HYBRID
    assert w.parse_connection_confirm(confirm()) == w.PROTOCOL_RDP  # a server that predates negotiation
    with pytest.raises(w.NegotiationError, match="Network Level Authentication"):
        w.parse_connection_confirm(confirm(struct.pack("<BBHI", 3, 0, 8, 5)))
    with pytest.raises(w.NegotiationError, match="not RDP"):
        w.tpkt_length(b"SSH-2.0-OpenSSH")
    with pytest.raises(w.NegotiationError, match="truncated"):
        w.parse_connection_confirm(confirm(struct.pack("<BBHI", 2, 0, 8, 1))[:12])
    with pytest.raises(w.NegotiationError, match="did not confirm"):
        w.parse_connection_confirm(bytes([3, 0, 0, 11, 6, 0x80, 0, 0, 0, 0, 0]))


def test_fingerprints() -> None:
    der = b"not really a certificate"
    fp = w.cert_fingerprint(der)
    assert fp.replace(":", "") == hashlib.sha256(der).hexdigest() and fp.count(":") == 31
    for form in (fp, fp.upper(), "sha256:" + fp.upper(), "SHA256:" + fp, fp.replace(":", ""), " " + fp + " "):
        assert w.normalise_fingerprint(form) == fp
    for bad in ("sha1:" + fp, fp[:-3], fp.replace("a", "z"), "", "md5:00"):
        with pytest.raises(UsageError, match="cert_fingerprint"):
            w.normalise_fingerprint(bad)


def opts(**kw: object) -> w.ClientOptions:
    base: dict = dict(
        host="winbox",
        port=3389,
        username=USER,
        width=1024,
        height=768,
        proxy_port=4242,
        pinned_fingerprint="ab:" * 31 + "ab",
    )
    base.update(kw)
    return w.ClientOptions(**base)


def test_xfreerdp_args_never_carry_the_password_and_pin_the_certificate() -> None:
    args = w.xfreerdp_args("xfreerdp", opts(domain="CORP"))
    assert "/v:winbox" in args and "/port:3389" in args and "/u:alice" in args and "/d:CORP" in args
    assert "/from-stdin:force" in args and not any(a.startswith("/p:") for a in args)
    assert "/cert:deny,fingerprint:sha256:" + "ab:" * 31 + "ab" in args
    assert "/proxy:http://127.0.0.1:4242" in args and "/size:1024x768" in args and "-auto-reconnect" in args
    assert "/cert:ignore" in w.xfreerdp_args("xfreerdp", opts(pinned_fingerprint=None))
    assert "/v:[::1]" in w.xfreerdp_args("xfreerdp", opts(host="::1"))


# Lines as xfreerdp 2.11 printed them against xrdp 0.9 (docs/rdp.md), and its Logon Error Info format.
UPDATE = "[15:36:36:211] [31870:31876] [DEBUG][com.freerdp.core.rdp] - recv Update Data PDU (0x02), length: 16258"
LOGOFF = (
    "[15:36:33:890] [31797:31798] [ERROR][com.freerdp.core] - rdp_set_error_info:freerdp_set_last_error_ex "
    "ERRINFO_LOGOFF_BY_USER [0x0001000C]"
)
CERT = "[15:37:58:947] [1407:1411] [ERROR][com.freerdp.crypto] - @           WARNING: CERTIFICATE NAME MISMATCH!"


def test_log_lines() -> None:
    assert w.logged_on(UPDATE)
    assert w.logged_on("[DEBUG][com.freerdp.core.info] - LogonInfoV2: SessionId: 0x00000002 UserName: [a] Domain: [b]")
    assert not w.logged_on(LOGOFF) and not w.logged_on("recv Synchronize Data PDU (0x1F), length: 22")
    assert (
        w.logon_error(
            "[INFO][com.freerdp.client.x11] - Logon Error Info LOGON_MSG_SESSION_CONTINUE [LOGON_FAILED_BAD_PASSWORD]"
        )
        == "LOGON_FAILED_BAD_PASSWORD"
    )
    assert w.logon_error(UPDATE) is None
    assert w.freerdp_reason([UPDATE, LOGOFF, "backtrace"]) == "ERRINFO_LOGOFF_BY_USER"
    assert w.freerdp_reason([UPDATE]) == ""


@pytest.mark.parametrize(
    ("code", "logged_on", "lines", "kind", "words"),
    [
        (12, False, [LOGOFF], AuthFailed, "authentication failed"),  # xrdp: a failed logon is logged off
        (132, False, [], AuthFailed, "authentication failed"),
        (154, False, [], AuthFailed, "wrong password"),
        (143, False, [CERT], ConnectionFailed, "certificate"),
        (140, False, [], ConnectionFailed, "resolve"),
        (4, False, [], BackendTimeout, "in time"),
        (147, False, [], ConnectionFailed, "cannot connect"),
        (12, True, [LOGOFF], ConnectionFailed, "lost the connection"),
        (131, True, [], ConnectionFailed, "lost the connection"),
    ],
)
def test_classify_exit(code: int, logged_on: bool, lines: list[str], kind: type, words: str) -> None:
    error = w.classify_exit(code, url=URL, user=USER, logged_on=logged_on, lines=lines)
    assert type(error) is kind
    assert words in str(error) and URL in str(error) and "\n" not in str(error)


def test_keys() -> None:
    assert [w.char_keysym(c) for c in "aZ~ \n\t"] == [0x61, 0x5A, 0x7E, 0x20, 0xFF0D, 0xFF09]
    with pytest.raises(BackendError, match="non-ASCII"):
        w.char_keysym("é")
    with pytest.raises(UsageError, match="control"):
        w.char_keysym("\x07")
    assert w.key_keysym("enter") == 0xFF0D and w.key_keysym("f12") == 0xFFC9 and w.key_keysym("+") == 0x2B
    with pytest.raises(UsageError, match="unknown key"):
        w.key_keysym("hyper")


def test_xauth_entry_reads_back_with_python_xlib(tmp_path: Path) -> None:
    xauth = pytest.importorskip("Xlib.xauth")
    path = tmp_path / "Xauthority"
    path.write_bytes(w.xauth_entry("host1", 42, b"\x01" * 16))
    entries = list(xauth.Xauthority(str(path)).entries)
    assert entries == [(w.FAMILY_LOCAL, b"host1", b"42", b"MIT-MAGIC-COOKIE-1", b"\x01" * 16)]
