"""Which desktop to drive and how: a backend spec, parsed from a URL or built from config.

A spec holds no secret values, only the *name* of the environment variable that
holds a password, so it can be written into a run's manifest as it is.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, fields
from typing import Any, Literal, cast, get_args
from urllib.parse import urlsplit

from openadapt_flow.backends.rdp_wire import normalise_fingerprint
from openadapt_flow.errors import UsageError, control_char, shown

Kind = Literal["vnc", "screen", "fake", "fixture", "rdp"]
KINDS: tuple[str, ...] = get_args(Kind)
DEFAULT_PORTS = {"vnc": 5900, "rdp": 3389}
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
MAX_URL_CHARS = 2048  # far past any real backend URL; a 100 KB one is a mistake, named and refused
MAX_HOST_CHARS = 253  # a DNS name's limit (RFC 1035); an IP literal is shorter
_LABEL = r"\w(?:[\w-]{0,61}\w)?"  # letters (an IDN's too), digits, '_' and inner '-'
_HOST = re.compile(rf"^{_LABEL}(?:\.{_LABEL})*\.?$")


def host_problem(host: str) -> str | None:
    """Why `host` is no host name or IP address (bad input, exit 2 — never a connect that fails and reads as
    retryable), or None."""
    bad = control_char(host)
    if bad is not None:
        return f"the host holds a control character ({bad[1]} at position {bad[0] + 1})"
    if len(host) > MAX_HOST_CHARS:
        return f"the host is {len(host)} characters (a host name has at most {MAX_HOST_CHARS})"
    if ":" in host:  # an IPv6 literal
        return None if re.fullmatch(r"[0-9A-Fa-f:.]+(%[A-Za-z0-9_.-]+)?", host) else "not a valid IPv6 address"
    if not _HOST.match(host):
        return "not a valid host name (letters, digits, '-' and '.'; labels of at most 63)"
    return None


@dataclass(frozen=True)
class BackendSpec:
    """Where the desktop is and the bounds on every wait; never a secret value."""

    kind: Kind
    host: str | None = None
    port: int | None = None
    path: str | None = None  # fixture folder
    password_env: str | None = None  # name of the env var holding the password
    display: str | None = None  # X11 display for `screen`; default $DISPLAY
    monitor: int | None = None  # `screen`: 1-based monitor to pin to; None = whole desktop
    username: str | None = None  # rdp: the account to log on as
    domain: str | None = None  # rdp: its domain, if any
    ignore_certificate: bool = False  # rdp: accept any server certificate (default: trusted by a CA, or pinned)
    cert_fingerprint: str | None = None  # rdp: pin the server certificate's SHA-256 fingerprint
    width: int | None = None  # rdp: session size requested from the server; default 1024x768
    height: int | None = None
    connect_timeout_s: float = 10.0
    io_timeout_s: float = 5.0  # bound on any one reply (liveness ping, input flush)
    freshness_limit_s: float = 2.0  # a frame not known current for longer is refused

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise UsageError(f"unknown backend kind {self.kind!r} (expected one of {', '.join(KINDS)})")
        if self.kind in DEFAULT_PORTS and not self.host:
            raise UsageError(f"{self.kind} backend needs a host")
        if self.host is not None:
            why = host_problem(self.host)
            if why is not None:
                raise UsageError(f"backend host {shown(self.host)}: {why}")
        if self.port is not None and not 0 < self.port < 65536:
            raise UsageError(f"port {self.port} is out of range 1-65535")
        if self.kind == "fixture" and not self.path:
            raise UsageError("fixture backend needs a path (fixture:PATH)")
        if self.password_env is not None and not _ENV_NAME.match(self.password_env):
            raise UsageError(f"password_env {self.password_env!r} is not an environment variable name")
        if self.monitor is not None and self.monitor < 1:
            raise UsageError(f"monitor {self.monitor} must be 1 or more (1 is the first monitor)")
        self._check_rdp()
        for name in ("connect_timeout_s", "io_timeout_s", "freshness_limit_s"):
            if not getattr(self, name) > 0:
                raise UsageError(f"{name} must be positive, got {getattr(self, name)!r}")

    def _check_rdp(self) -> None:
        for name in ("username", "domain"):
            value = getattr(self, name)
            if value is not None and (not value or any(not ch.isprintable() for ch in value)):
                raise UsageError(f"backend {name} {value!r} must be non-empty printable text")
        if self.cert_fingerprint is not None:
            if self.ignore_certificate:
                raise UsageError("give either ignore_certificate or cert_fingerprint, not both")
            object.__setattr__(self, "cert_fingerprint", normalise_fingerprint(self.cert_fingerprint))
        for name in ("width", "height"):
            value = getattr(self, name)
            if value is not None and not 64 <= value <= 8192:
                raise UsageError(f"{name} {value} must be between 64 and 8192 pixels")

    @property
    def effective_port(self) -> int | None:
        return self.port if self.port is not None else DEFAULT_PORTS.get(self.kind)

    @property
    def url(self) -> str:
        """A human-readable address for messages: vnc://host:port, fixture:PATH, screen:DISPLAY."""
        if self.kind in DEFAULT_PORTS:
            host = f"[{self.host}]" if self.host and ":" in self.host else self.host
            return f"{self.kind}://{host}:{self.effective_port}"
        if self.kind == "fixture":
            return f"fixture:{self.path}"
        if self.kind == "screen":
            return f"screen:{self.display or ''}"
        return self.kind

    def to_json(self) -> dict[str, Any]:
        """Plain JSON for the manifest. Holds no secret: only the password's env var name."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BackendSpec:
        """Inverse of `to_json`; unknown keys are a UsageError."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise UsageError(f"unknown backend spec key(s): {', '.join(unknown)}")
        if "kind" not in data:
            raise UsageError("backend spec needs a kind")
        return cls(**data)


def _redacted(url: str) -> str:
    """The URL with any userinfo blanked, so a password typed into it is never echoed."""
    return re.sub(r"^([a-z]+://)[^@/]*@", r"\1***@", url.strip(), flags=re.I)


def parse_url(url: str) -> BackendSpec:
    """Parse `vnc://host[:port]`, `rdp://host[:port]` or `fixture:PATH` into a spec."""
    text = url.strip()
    if len(text) > MAX_URL_CHARS:
        raise UsageError(f"bad backend URL {shown(_redacted(text))}: longer than {MAX_URL_CHARS} characters")
    bad = control_char(text)
    if bad is not None:
        raise UsageError(
            f"bad backend URL {shown(_redacted(text))}: it holds a control character ({bad[1]} at "
            f"position {bad[0] + 1})"
        )
    lower = text.lower()
    if lower.startswith("fixture:"):
        path = text[len("fixture:") :]
        if path.startswith("//"):
            path = path[2:]
        if not path:
            raise UsageError(f"bad backend URL {text!r}: fixture URL needs a path (fixture:PATH)")
        return BackendSpec(kind="fixture", path=path)
    scheme = lower.split("://", 1)[0] if "://" in lower else ""
    if scheme not in DEFAULT_PORTS:
        raise UsageError(
            f"bad backend URL {shown(_redacted(text), 120)}: expected vnc://host[:port], rdp://host[:port] or fixture:PATH"
        )
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise UsageError(f"bad backend URL {shown(_redacted(text), 120)}: {exc}") from None
    if "@" in parts.netloc:
        raise UsageError(
            f"bad backend URL {shown(_redacted(text), 120)}: credentials are not allowed in URLs; "
            "name an environment variable in password_env instead"
        )
    if not parts.hostname:
        raise UsageError(f"bad backend URL {shown(_redacted(text), 120)}: no host")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise UsageError(f"bad backend URL {shown(_redacted(text), 120)}: only {scheme}://host[:port] is accepted")
    if port == 0:
        raise UsageError(f"bad backend URL {shown(_redacted(text), 120)}: port 0 is not a port")
    return BackendSpec(kind=cast(Kind, scheme), host=parts.hostname, port=port)
