"""The pure parts of the RDP backend: no sockets, no processes, so all of it is unit-tested.

- the X.224 negotiation we send to read a server's TLS certificate before the
  real client connects (MS-RDPBCGR 2.2.1.1 and 2.2.1.2),
- SHA-256 certificate fingerprints in the form FreeRDP pins them,
- xfreerdp's command line, and what its exit codes and log lines mean,
- which characters and keys can be typed over RDP (the shared keysym table, ASCII only),
- the Xauthority record that guards the private display.
"""

from __future__ import annotations

import hashlib
import re
import string
import struct
from dataclasses import dataclass

from openadapt_flow.bundle import keys
from openadapt_flow.errors import AuthFailed, BackendError, BackendTimeout, ConnectionFailed, UsageError

# --- X.224 negotiation -------------------------------------------------------------------------------

PROTOCOL_RDP, PROTOCOL_SSL, PROTOCOL_HYBRID, PROTOCOL_HYBRID_EX = 0, 1, 2, 8
PROTOCOLS_OFFERED = PROTOCOL_SSL | PROTOCOL_HYBRID | PROTOCOL_HYBRID_EX
NEGOTIATION_FAILURES = {
    1: "the server requires TLS security",
    2: "the server does not allow TLS security",
    3: "the server has no TLS certificate",
    4: "the server found our negotiation flags inconsistent",
    5: "the server requires Network Level Authentication",
    6: "the server requires TLS with user authentication",
}


class NegotiationError(ValueError):
    """The server's X.224 reply was not an RDP connection confirm, or it refused every protocol offered."""


def connection_request(protocols: int = PROTOCOLS_OFFERED) -> bytes:
    """A TPKT-framed X.224 Connection Request carrying an RDP Negotiation Request for `protocols`."""
    neg = struct.pack("<BBHI", 0x01, 0, 8, protocols)
    x224 = bytes([6 + len(neg), 0xE0, 0, 0, 0, 0, 0]) + neg
    return struct.pack(">BBH", 3, 0, 4 + len(x224)) + x224


def tpkt_length(header: bytes) -> int:
    """The total length a 4-byte TPKT header announces; NegotiationError if it is not one."""
    if len(header) < 4 or header[0] != 3:
        raise NegotiationError("the reply is not RDP (no TPKT header): is this an RDP port?")
    length = struct.unpack(">H", header[2:4])[0]
    if length < 11:
        raise NegotiationError(f"the reply is not RDP (TPKT length {length})")
    return int(length)


def parse_connection_confirm(data: bytes) -> int:
    """The protocol the server selected (PROTOCOL_RDP when it did not negotiate); NegotiationError otherwise."""
    if len(data) < 11 or len(data) < tpkt_length(data[:4]):
        raise NegotiationError("the server's X.224 reply is truncated")
    if data[5] & 0xF0 != 0xD0:
        raise NegotiationError(f"the server did not confirm the connection (X.224 code 0x{data[5]:02x})")
    neg = data[11 : 5 + data[4]]
    if len(neg) < 8:
        return PROTOCOL_RDP  # a server that predates negotiation: standard RDP security
    kind, _flags, _length, value = struct.unpack("<BBHI", neg[:8])
    if kind == 0x02:
        return int(value)
    if kind == 0x03:
        raise NegotiationError(NEGOTIATION_FAILURES.get(value, f"the server refused negotiation (code {value})"))
    raise NegotiationError(f"unexpected negotiation reply type 0x{kind:02x}")


# --- certificates ------------------------------------------------------------------------------------


def cert_fingerprint(der: bytes) -> str:
    """The SHA-256 fingerprint of a DER certificate as FreeRDP compares it: lower-case, colon-separated."""
    digest = hashlib.sha256(der).hexdigest()
    return ":".join(digest[i : i + 2] for i in range(0, len(digest), 2))


def normalise_fingerprint(text: str) -> str:
    """Accept `sha256:AA:BB:…`, `AA:BB:…` or 64 bare hex digits; return the lower-case colon form."""
    value = text.strip().lower()
    algo, sep, rest = value.partition(":")
    if sep and len(algo) > 2 and algo.isalnum() and not all(c in string.hexdigits for c in algo):
        if algo != "sha256":
            raise UsageError(f"cert_fingerprint {text!r}: only sha256 fingerprints are supported")
        value = rest
    digits = value.replace(":", "").replace(" ", "")
    if len(digits) != 64 or any(c not in string.hexdigits for c in digits):
        raise UsageError(
            f"cert_fingerprint {text!r} is not a SHA-256 fingerprint "
            "(64 hex digits, optionally colon-separated and prefixed with 'sha256:')"
        )
    return ":".join(digits[i : i + 2] for i in range(0, 64, 2))


# --- the xfreerdp command line -----------------------------------------------------------------------

# Logged on: xrdp sends slow-path bitmap updates only once the session runs; Windows sends Save Session Info.
_LOGGED_ON = re.compile(r"recv Update Data PDU|LogonInfoV[12]:|LogonPlainNotify|LogonInfoExtended")
_LOGON_ERROR = re.compile(r"Logon Error Info (\S+) \[(LOGON_FAILED_\w+)\]")
_ERR_NAME = re.compile(r"\b(ERR(?:INFO|CONNECT)_[A-Z0-9_]+)")
_CERT_TROUBLE = re.compile(
    r"CERTIFICATE NAME MISMATCH|Certificate verification failure|certificate .*(?:changed|mismatch)|"
    r"HOST IDENTIFICATION HAS CHANGED|fingerprint",
    re.I,
)
# Our log filters: the base level hides FreeRDP's chatter; these tags say when logon completed or failed.
LOG_FILTERS = (
    "com.freerdp.core.rdp:DEBUG,com.freerdp.core.info:DEBUG,com.freerdp.core:INFO,"
    "com.freerdp.client.x11:INFO,com.freerdp.crypto:WARN"
)


@dataclass(frozen=True)
class ClientOptions:
    """Everything xfreerdp's command line needs; never the password (that goes to its stdin)."""

    host: str
    port: int
    username: str
    width: int
    height: int
    proxy_port: int
    domain: str | None = None
    pinned_fingerprint: str | None = None  # None: /cert:ignore (the user opted out of checking)
    timeout_ms: int = 10000


def xfreerdp_args(exe: str, opts: ClientOptions) -> list[str]:
    """xfreerdp's arguments: one undecorated window of the session's size, US key codes, no redirections."""
    host = f"[{opts.host}]" if ":" in opts.host else opts.host  # an IPv6 literal
    args = [exe, f"/v:{host}", f"/port:{opts.port}", f"/u:{opts.username}"]
    if opts.domain:
        args.append(f"/d:{opts.domain}")
    cert = (
        "/cert:ignore"
        if opts.pinned_fingerprint is None
        else f"/cert:deny,fingerprint:sha256:{opts.pinned_fingerprint}"
    )
    args += [
        "/from-stdin:force",  # the password is read from stdin, never from argv (visible in ps)
        cert,
        f"/proxy:http://127.0.0.1:{opts.proxy_port}",  # our in-process CONNECT proxy: sees every byte, keeps /v: real
        f"/size:{opts.width}x{opts.height}",
        "-decorations",
        "/bpp:32",
        "/kbd:0x00000409",  # US scancodes, matching the key codes we press on the private display
        "-clipboard",
        "/audio-mode:2",
        "-auto-reconnect",  # nothing redirected; a lost connection is reported
        f"/timeout:{opts.timeout_ms}",
        "/log-level:WARN",
        f"/log-filters:{LOG_FILTERS}",
    ]
    return args


def logged_on(line: str) -> bool:
    """True for a log line that proves the remote session is running (not just the connection)."""
    return bool(_LOGGED_ON.search(line))


def logon_error(line: str) -> str | None:
    """The LOGON_FAILED_* type of a Logon Error Info line (a Windows server refusing the logon), else None."""
    m = _LOGON_ERROR.search(line)
    return m.group(2) if m else None


def freerdp_reason(lines: list[str]) -> str:
    """The most telling error name in xfreerdp's last log lines (e.g. ERRINFO_LOGOFF_BY_USER), or ''."""
    for line in reversed(lines):
        m = _ERR_NAME.search(line)
        if m:
            return m.group(1)
    return ""


AUTH_EXITS = {
    132: "authentication failed",
    134: "logon failed",
    135: "the account is locked out",
    148: "the password has expired",
    149: "the password must be changed",
    151: "the account is disabled",
    152: "the password has expired",
    154: "wrong password",
    155: "access denied",
    156: "account restriction",
    157: "the account has expired",
    158: "logon type not granted",
    159: "no or missing credentials",
}
_DNS_EXITS = {139, 140}
_SESSION_ENDED = {1, 2, 3, 5, 11, 12}  # disconnect/logoff error infos xfreerdp passes through as its exit code


def classify_exit(code: int, *, url: str, user: str, logged_on: bool, lines: list[str]) -> BackendError:
    """Map xfreerdp's exit (code and last log lines) to our error family, in one line, naming no secret."""
    reason = freerdp_reason(lines)
    why = f"{reason}, xfreerdp exit {code}" if reason else f"xfreerdp exit {code}"
    if logged_on:
        return ConnectionFailed(f"lost the connection to {url}: the session ended ({why})")
    if code in AUTH_EXITS:
        return AuthFailed(f"authentication failed: {url} refused the logon of {user!r}: {AUTH_EXITS[code]} ({why})")
    if code == 143 or any(_CERT_TROUBLE.search(line) for line in lines):
        return ConnectionFailed(
            f"{url}: the RDP client refused the server's certificate ({why}); "
            "pin it with cert_fingerprint or set ignore_certificate: true"
        )
    if code in _DNS_EXITS:
        return ConnectionFailed(f"cannot resolve the host of {url} ({why})")
    if code == 4:
        return BackendTimeout(f"{url} did not complete the logon in time ({why})")
    if code in _SESSION_ENDED:
        # xrdp (require_credentials, hidelogwindow) logs a failed logon off instead of saying why.
        return AuthFailed(
            f"authentication failed: {url} ended the session during the logon of {user!r} "
            f"(wrong user name or password, or the server could not start a session; {why})"
        )
    return ConnectionFailed(f"cannot connect to {url} ({why})")


# --- keys --------------------------------------------------------------------------------------------

# The keysyms are the shared table's (bundle.keys); the private display's keymap turns them into key codes,
# which xfreerdp sends as RDP scancodes. xfreerdp 2 sends scancodes only (it has no Unicode input), so a
# character outside ASCII has no key to press: refused, never approximated.


def char_keysym(ch: str) -> int:
    """The keysym for one character we can type over RDP here: printable ASCII and the text control keys."""
    if ch.isascii():
        return keys.char_keysym(ch)
    if ch.isprintable():
        raise BackendError(
            f"cannot type {ch!r} over RDP: the FreeRDP 2 client sends key scancodes only, "
            "so non-ASCII text cannot be typed (see docs/rdp.md)"
        )
    raise UsageError(f"cannot type control character {ch!r}")


def key_keysym(name: str) -> int:
    """The keysym for a normalised key name or a single printable ASCII character."""
    if len(name) == 1 and name.isprintable():
        return char_keysym(name)
    return keys.key_keysym(name)


# --- the private display's Xauthority ----------------------------------------------------------------

FAMILY_LOCAL = 256


def xauth_entry(hostname: str, display: int, cookie: bytes) -> bytes:
    """One Xauthority record granting MIT-MAGIC-COOKIE-1 `cookie` for local display `display`."""

    def field(data: bytes) -> bytes:
        return struct.pack(">H", len(data)) + data

    return (
        struct.pack(">H", FAMILY_LOCAL)
        + field(hostname.encode())
        + field(str(display).encode())
        + field(b"MIT-MAGIC-COOKIE-1")
        + field(cookie)
    )
