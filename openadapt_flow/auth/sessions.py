"""Web sessions, CSRF tokens and the login rate limit (the console and the phone queue), held in the serving
process's memory.

A session is a random token in an HttpOnly, SameSite=Strict cookie (Secure under TLS) naming one logged-in operator,
with its own CSRF token and an expiry; restarting the console logs everyone out.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections import deque
from dataclasses import dataclass, field

SESSION_TTL_S = 8 * 3600.0
LOGIN_WINDOW_S = 60.0
MAX_KEYS = 10_000  # past this many remembered keys, those with no recent failure are swept
LOGIN_FAILURES = 5  # failed logins per client (and per operator name) in the window before logins are refused


@dataclass
class Session:
    token: str
    operator: str
    role: str
    csrf: str
    expires: float

    def csrf_ok(self, given: str | None) -> bool:
        return bool(given) and hmac.compare_digest(self.csrf, str(given))


@dataclass
class Sessions:
    ttl_s: float = SESSION_TTL_S
    _by_token: dict[str, Session] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def open(self, operator: str, role: str, now: float | None = None) -> Session:
        s = Session(
            secrets.token_urlsafe(32), operator, role, secrets.token_urlsafe(32), (now or time.time()) + self.ttl_s
        )
        with self._lock:
            self._by_token[s.token] = s
        return s

    def get(self, token: str | None, now: float | None = None) -> Session | None:
        if not token:
            return None
        with self._lock:
            s = self._by_token.get(token)
            if s is not None and s.expires <= (now or time.time()):
                del self._by_token[token]
                return None
            return s

    def close(self, token: str | None) -> None:
        with self._lock:
            self._by_token.pop(token or "", None)

    def drop_operator(self, operator: str) -> None:
        """End every session of `operator` (disabled since their login)."""
        with self._lock:
            for token in [t for t, s in self._by_token.items() if s.operator == operator]:
                del self._by_token[token]


@dataclass
class RateLimit:
    """At most `limit` failures per key in a sliding window."""

    limit: int = LOGIN_FAILURES
    window_s: float = LOGIN_WINDOW_S
    _fails: dict[str, deque[float]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _recent(self, key: str, now: float) -> deque[float]:
        q = self._fails.setdefault(key, deque())
        while q and q[0] <= now - self.window_s:
            q.popleft()
        return q

    def blocked(self, *keys: str) -> bool:
        """Whether any key is over its limit. A key whose failures all aged out is forgotten, so a stream of made-up
        names or clients does not grow the table without bound."""
        now = time.monotonic()
        with self._lock:
            out = any(len(self._recent(k, now)) >= self.limit for k in keys)
            for k in keys:
                if not self._fails.get(k):
                    self._fails.pop(k, None)
            if len(self._fails) > MAX_KEYS:
                for k in [k for k, q in self._fails.items() if not self._recent(k, now)]:
                    del self._fails[k]
            return out

    def failed(self, *keys: str) -> None:
        now = time.monotonic()
        with self._lock:
            for k in keys:
                self._recent(k, now).append(now)
