"""What every request to the console or the phone queue meets before routing and sessions: the Host allowlist (a page
whose name an attacker rebinds to this address — DNS rebinding — is refused), the Origin check on state-changing
requests, and HSTS under TLS.

A request is answered only under a Host the server is reached by: the bound address (the address the connection
came in on, or the one given to `--bind`), `localhost`, `127.0.0.1` or `[::1]` on the bound port, or a name the
deployment lists with `--allow-host` (`NAME` on the bound port or without one, behind a proxy; `NAME:PORT` exactly).
Anything else gets 421 and one log line. A POST whose Origin names another site gets 403 and one log line.
"""

from __future__ import annotations

import ipaddress
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from openadapt_flow.errors import UsageError

HSTS = "max-age=31536000"  # a year: a browser that once reached the site over TLS never asks it over plain HTTP
LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARDS = frozenset({"", "0.0.0.0", "::"})  # a bind to every address names none a client reaches the server by
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_NAME = re.compile(r"[a-z0-9]([a-z0-9-]{0,62})(\.[a-z0-9]([a-z0-9-]{0,62}))*")
_AUTHORITY = re.compile(r"(?:\[(?P<v6>[0-9a-f:.]+)\]|(?P<name>[^:\[\]]+))(?::(?P<port>[0-9]{1,5}))?")
log = logging.getLogger("openadapt_flow.web")


def authority(text: str) -> tuple[str, int | None] | None:
    """(name, port) of a Host header or an `--allow-host` entry (`name`, `name:port`, `[v6]`, `[v6]:port`), the name
    in lower case; None if it is not one."""
    m = _AUTHORITY.fullmatch(text.strip().lower())
    if m is None:
        return None
    port = int(m["port"]) if m["port"] else None
    if port is not None and not 0 < port < 65536:
        return None
    if m["v6"] is not None:
        try:
            return str(ipaddress.IPv6Address(m["v6"])), port
        except ValueError:
            return None
    return (m["name"], port) if _NAME.fullmatch(m["name"]) and len(m["name"]) <= 253 else None


@dataclass(frozen=True)
class Hosts:
    """The names a site answers to besides its own address and loopback: bare names (on the bound port, or with no
    port: a proxy in front), and name:port pairs (exactly)."""

    names: frozenset[str] = frozenset()
    pairs: frozenset[tuple[str, int]] = frozenset()

    @classmethod
    def parse(cls, entries: Iterable[str]) -> "Hosts":
        """From `--allow-host` entries and the bind address; UsageError (one line) for an entry that is not a host."""
        names: set[str] = set()
        pairs: set[tuple[str, int]] = set()
        for entry in entries:
            if entry.strip("[]") in WILDCARDS:
                continue
            parsed = authority(entry)
            if parsed is None:
                raise UsageError(
                    f"allowed host {entry!r}: expected a host name or address, optionally with :PORT "
                    f"(--allow-host console.example.com, --allow-host 192.0.2.7:8765)"
                )
            name, port = parsed
            if port is None:
                names.add(name)
            else:
                pairs.add((name, port))
        return cls(frozenset(names), frozenset(pairs))

    def allows(self, name: str, port: int | None, server: tuple[str, int] | None) -> bool:
        """Whether a request for `name`:`port` (port None: not given) is this site's, `server` being the address
        the connection came in on (the ASGI scope's)."""
        if port is not None and (name, port) in self.pairs:
            return True
        own = server is not None and name == str(server[0]).lower().strip("[]")
        if not (own or name in LOOPBACK or name in self.names):
            return False
        return port is None or server is None or port == int(server[1])


def _server(scope: Scope) -> tuple[str, int] | None:
    server = scope.get("server")
    return (str(server[0]), int(server[1])) if server and server[1] is not None else None


def _client(scope: Scope) -> str:
    client = scope.get("client")
    return str(client[0]) if client else "?"


class HostCheck:
    """Refuse, before routing, a request whose Host is not this site's (421) and a state-changing request whose
    Origin is another site's (403); each refusal is one log line."""

    def __init__(self, app: ASGIApp, hosts: Hosts, site: str) -> None:
        self.app, self.hosts, self.site = app, hosts, site

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers, server = Headers(scope=scope), _server(scope)
        given = headers.getlist("host")
        host = authority(given[0]) if len(given) == 1 else None
        if host is None or not self.hosts.allows(host[0], host[1], server):
            why = (
                f"Host {given[0][:200]!r} is not this {self.site}'s (the bound address, localhost, --allow-host)"
                if len(given) == 1
                else "no Host header"
                if not given
                else f"{len(given)} Host headers"
            )
            await self._refuse(scope, receive, send, 421, why)
            return
        origin = headers.get("origin")
        if (
            origin is not None
            and scope.get("method", "GET") not in SAFE_METHODS
            and not self._origin_ok(origin, server)
        ):
            await self._refuse(scope, receive, send, 403, f"Origin {origin[:200]!r} is another site")
            return
        await self.app(scope, receive, send)

    def _origin_ok(self, origin: str, server: tuple[str, int] | None) -> bool:
        try:
            parts = urlsplit(origin)
            port = parts.port
        except ValueError:
            return False
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.path or parts.query:
            return False  # "null" (a sandboxed frame, a file) included
        return self.hosts.allows(parts.hostname.lower(), port, server)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, status: int, why: str) -> None:
        path = str(scope.get("path", ""))[:200]
        log.warning(
            "%s: refused %s %r from %s: %s", self.site, scope.get("method", "WEBSOCKET"), path, _client(scope), why
        )
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        body = b"421 misdirected request: unknown Host\n" if status == 421 else b"403 forbidden: cross-origin request\n"
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"text/plain; charset=utf-8"),
                    (b"content-length", str(len(body)).encode()),
                    (b"cache-control", b"no-store"),
                    (b"x-content-type-options", b"nosniff"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


class Hsts:
    """Every response over TLS carries HSTS, so a browser that once reached the site never asks it over plain HTTP."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {
                    **message,
                    "headers": [*message.get("headers", []), (b"strict-transport-security", HSTS.encode())],
                }
            await send(message)

        await self.app(scope, receive, sending if scope["type"] == "http" else send)


def edge(site: str, *, secure: bool, allowed_hosts: Iterable[str] = ()) -> list[Middleware]:
    """The middleware every site with operator logins runs first: HSTS under TLS (on refusals too), then the Host
    and Origin checks. UsageError for an `allowed_hosts` entry that is not a host."""
    hosts = Hosts.parse(allowed_hosts)
    return [*([Middleware(Hsts)] if secure else []), Middleware(HostCheck, hosts=hosts, site=site)]
