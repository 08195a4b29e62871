"""Readers of a system of record: one read-only look per call, returned as a `Reading`, never an exception.

A reader is built from an effect (misconfiguration raises `ConfigError` then, before
any input is sent); each call reads once. Every failure to read (driver error,
refused write, timeout, non-2xx, bad JSON, missing path) is an unavailable
`Reading` whose error text is kept as evidence.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import socket
import sqlite3
import time
from collections.abc import Callable, Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlparse

from openadapt_flow.bundle.effect import Effect
from openadapt_flow.bundle.params import PLACEHOLDER
from openadapt_flow.errors import ConfigError
from openadapt_flow.fixture.filetext import UnreadableFile, read_file_text, unreadable_format
from openadapt_flow.records.models import Reading

READ_TIMEOUT_S = 5.0  # one read: connect + query, or one HTTP exchange
MAX_BODY = 8 * 1024 * 1024
# `:name` binds, found outside string literals, quoted identifiers and comments; `::type` casts are not binds.
SQL_TOKENS = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|--[^\n]*|/\*.*?\*/|::|:([A-Za-z_][A-Za-z0-9_]*)", re.S)
INLINE_PASSWORD = re.compile(r"://[^/@]*:[^/@]*@")
NAMED_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")  # a file's contains: only {name} is a placeholder


def sql_binds(query: str) -> list[str]:
    """The `:name` parameters of `query`, in order of first use."""
    names = [m.group(1) for m in SQL_TOKENS.finditer(query) if m.group(1)]
    return list(dict.fromkeys(names))


def to_pyformat(query: str) -> str:
    """`:name` → `%(name)s` for psycopg, with literal `%` doubled; literals and comments untouched except `%`."""

    def repl(m: re.Match[str]) -> str:
        return f"%({m.group(1)})s" if m.group(1) else m.group(0).replace("%", "%%")

    out, last = [], 0
    for m in SQL_TOKENS.finditer(query):
        out.append(query[last : m.start()].replace("%", "%%"))
        out.append(repl(m))
        last = m.end()
    out.append(query[last:].replace("%", "%%"))
    return "".join(out)


def _env_secret(field: str, name: str | None, env: Mapping[str, str], what: str) -> str:
    val = env.get(name or "")
    if not val:
        raise ConfigError(f"effect {field} {name} is not set in the environment (it holds the {what})")
    return val


def plain(value: Any) -> Any:
    """A driver value as something JSON keeps and `judge` compares (Decimal → int/float)."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def check_dsn(effect: Effect) -> None:
    """A sql effect names its database by dsn (no inline password) or dsn_env."""
    if effect.dsn and INLINE_PASSWORD.search(effect.dsn):
        raise ConfigError("passwords are not allowed inline in an effect dsn; use dsn_env")
    if not effect.dsn and not effect.dsn_env:
        raise ConfigError("a sql effect needs dsn or dsn_env")


class SqlSource:
    """A sql effect's database, opened read-only with every wait bounded: the DSN checks (no inline password, a
    scheme we speak) made once, at build time (ConfigError then, before any input)."""

    def __init__(self, effect: Effect, env: Mapping[str, str], read_timeout_s: float = READ_TIMEOUT_S) -> None:
        check_dsn(effect)
        self.dsn = effect.dsn or _env_secret("dsn_env", effect.dsn_env, env, "dsn")
        self.timeout_s = read_timeout_s
        self.scheme = urlparse(self.dsn).scheme
        if self.scheme not in ("sqlite", "postgresql", "postgres"):
            raise ConfigError(f"effect dsn scheme {self.scheme!r} is not supported (sqlite:///PATH or postgresql://…)")
        self.conninfo: dict[str, Any] = {}
        if self.scheme != "sqlite":
            psycopg = _psycopg()
            try:
                self.conninfo = psycopg.conninfo.conninfo_to_dict(self.dsn)
            except psycopg.ProgrammingError as e:
                raise ConfigError(f"effect dsn is not a valid PostgreSQL URL: {self.scrub(str(e))}") from None

    def scrub(self, text: str) -> str:
        password = str(self.conninfo.get("password") or "")
        return text.replace(password, "***") if password else text

    def failed(self, e: Exception) -> Reading:
        """A driver failure as an UNAVAILABLE reading, kept as evidence (no password in it)."""
        return Reading(False, error=self.scrub(f"{type(e).__name__}: {e}".strip()))

    def sqlite(self) -> sqlite3.Connection:
        """A read-only connection to the SQLite file; a query running past the read timeout is aborted."""
        # SQLAlchemy's convention: sqlite:///rel/path is relative, sqlite:////abs/path absolute
        path = unquote(self.dsn[len("sqlite://") :])[1:]
        if not Path(path).exists():
            raise FileNotFoundError(f"database {path} not found")
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=self.timeout_s)
        deadline = time.monotonic() + self.timeout_s
        conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)  # aborts a runaway query
        return conn

    def postgres(self) -> Any:
        """A read-only PostgreSQL connection (not in autocommit): read-only twice over, the session default and
        the transaction itself; statement, lock and connect waits bounded."""
        ms = int(self.timeout_s * 1000)
        info = dict(self.conninfo)
        guard = f"-c default_transaction_read_only=on -c statement_timeout={ms} -c lock_timeout={ms}"
        info["options"] = f"{info.get('options', '')} {guard}".strip()
        info["connect_timeout"] = max(2, math.ceil(self.timeout_s))  # libpq's floor is 2 s
        info.setdefault("application_name", "openadapt-flow verifier")
        conn = _psycopg().connect(**info, autocommit=False)
        conn.read_only = True
        return conn


class SqlReader:
    """Runs the effect's query in a read-only transaction with bound params (never string-formatted); reads the first cell."""

    def __init__(
        self, effect: Effect, params: Mapping[str, Any], env: Mapping[str, str], read_timeout_s: float = READ_TIMEOUT_S
    ) -> None:
        if not effect.query:
            raise ConfigError("a sql effect needs query (or changes:)")
        check_dsn(effect)
        missing = [n for n in sql_binds(effect.query) if n not in params]
        if missing:  # binding NULL instead would read "absent" and wrongly prove nothing landed
            raise ConfigError(
                f"effect query binds {', '.join(':' + n for n in missing)}, which no bound param supplies"
            )
        self.source = SqlSource(effect, env, read_timeout_s)
        self.query = effect.query
        self.binds = {n: params[n] for n in sql_binds(effect.query)}

    def read(self) -> Reading:
        try:
            value = self._read_sqlite() if self.source.scheme == "sqlite" else self._read_postgres()
        except Exception as e:  # any driver failure is an UNAVAILABLE reading, kept as evidence
            return self.source.failed(e)
        return Reading(True, plain(value))

    def _read_sqlite(self) -> Any:
        conn = self.source.sqlite()
        try:
            row = conn.execute(self.query, self.binds).fetchone()
        finally:
            conn.close()
        return row[0] if row else None

    def _read_postgres(self) -> Any:
        with self.source.postgres() as conn:
            with conn.cursor() as cur:
                # prepare=True forces the extended protocol: one statement only, no `; COMMIT; INSERT …` smuggling
                cur.execute(to_pyformat(self.query), self.binds, prepare=True)
                row = cur.fetchone()
            conn.rollback()
        return row[0] if row else None


def fill_url(template: str, params: Mapping[str, Any]) -> str:
    """Fill `{name}` placeholders from params, each URL-quoted; `{{`/`}}` are literal braces."""
    return fill_text(template, params, "url", lambda text: quote(text, safe=""))


def fill_contains(template: str, params: Mapping[str, Any]) -> str:
    """A file effect's `contains` with its `{name}`s filled; any other brace is literal (file content is free text)."""
    return fill_text(template, params, "contains", pattern=NAMED_PLACEHOLDER)


def fill_text(
    template: str,
    params: Mapping[str, Any],
    what: str,
    escape: Callable[[str], str] = str,
    pattern: re.Pattern[str] = PLACEHOLDER,
) -> str:
    """Fill `{name}` placeholders from params (`escape`d); `{{`/`}}` are literal braces; `what` names the field."""

    def repl(m: re.Match[str]) -> str:
        if m.group(1) is None:
            return m.group(0)[0]
        name = m.group(1)
        if name not in params:
            raise ConfigError(f"effect {what} uses {{{name}}}, which no bound param supplies")
        value = params[name]
        return escape(str(int(value)) if isinstance(value, float) and value.is_integer() else str(value))

    return pattern.sub(repl, template)


def dig(doc: Any, path: str) -> Any:
    """Follow a dotted path (`a.b.0.c`) into parsed JSON; LookupError names the first step that is missing."""
    cur = doc
    for i, key in enumerate(path.split(".")):
        where = ".".join(path.split(".")[: i + 1])
        if isinstance(cur, dict):
            if key not in cur:
                raise LookupError(f"json_path {path}: {where} not found")
            cur = cur[key]
        elif isinstance(cur, list):
            try:
                cur = cur[int(key)]
            except (ValueError, IndexError):
                raise LookupError(f"json_path {path}: {where} is not an index of a list of {len(cur)}") from None
        else:
            raise LookupError(f"json_path {path}: {where} goes inside a {type(cur).__name__}")
    return cur


class HttpReader:
    """GETs the effect's url; the reading is the JSON value at `json_path`, or the count of `contains` in the body."""

    def __init__(
        self, effect: Effect, params: Mapping[str, Any], env: Mapping[str, str], read_timeout_s: float = READ_TIMEOUT_S
    ) -> None:
        if not effect.url:
            raise ConfigError("an http effect needs url")
        if effect.json_path is not None and effect.contains is not None:
            raise ConfigError("an http effect reads json_path or counts contains, not both")
        if effect.contains == "":
            raise ConfigError("an http effect's contains must not be empty")
        if INLINE_PASSWORD.search(effect.url):
            raise ConfigError(
                "credentials are not allowed inline in an effect url; put a bearer token in the env var named by token_env"
            )
        self.url = fill_url(effect.url, params)
        if urlparse(self.url).scheme not in ("http", "https"):
            raise ConfigError(f"effect url {effect.url!r} must be http:// or https://")
        self.json_path = effect.json_path
        self.contains = effect.contains
        self.token = _env_secret("token_env", effect.token_env, env, "bearer token") if effect.token_env else None
        self.timeout_s = read_timeout_s
        self.opener = _no_redirect_opener()

    def read(self) -> Reading:
        try:
            return Reading(True, self._value(self._get()))
        except (TimeoutError, socket.timeout):
            return Reading(False, error=f"GET {self.url}: timed out after {self.timeout_s:g}s")
        except Exception as e:  # non-2xx, refused, bad JSON, missing path: UNAVAILABLE, kept as evidence
            return Reading(False, error=f"GET {self.url}: {e}")

    def _get(self) -> str:
        headers = {"Accept": "application/json", "User-Agent": "openadapt-flow verifier"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        deadline = time.monotonic() + self.timeout_s
        request = _urllib()
        try:
            resp = self.opener.open(request.Request(self.url, headers=headers), timeout=self.timeout_s)
        except request.HTTPError as e:
            raise RuntimeError(f"HTTP {e.code} {e.reason}: {_snippet(e.read(2048))}") from None
        except request.URLError as e:
            if isinstance(e.reason, (TimeoutError, socket.timeout)):
                raise TimeoutError() from None
            raise RuntimeError(f"{e.reason}") from None
        with resp:
            chunks, size = [], 0
            while chunk := resp.read(65536):  # a total deadline, not only a per-recv one
                chunks.append(chunk)
                size += len(chunk)
                if size > MAX_BODY:
                    raise RuntimeError(f"body larger than {MAX_BODY} bytes")
                if time.monotonic() > deadline:
                    raise TimeoutError()
            charset = resp.headers.get_content_charset() or "utf-8"
        return b"".join(chunks).decode(charset, errors="replace")

    def _value(self, body: str) -> Any:
        if self.contains is not None:
            return body.count(self.contains)
        try:
            doc = json.loads(body)
        except ValueError as e:
            raise RuntimeError(f"body is not JSON ({e}): {_snippet(body.encode())}") from None
        return dig(doc, self.json_path) if self.json_path else doc


def _snippet(body: bytes) -> str:
    text = body.decode("utf-8", errors="replace").strip()
    return text[:200] + ("…" if len(text) > 200 else "")


class FileReader:
    """Reads a file: occurrences of `contains` (its `{param}`s filled) in what the file says (gzip expanded, told by
    its magic bytes; a format it cannot expand is an unavailable reading that names it, never a count of compressed
    bytes); `sha256:<hex>` of its bytes when the expectation is a hash; else 1 if it exists, 0 if not."""

    def __init__(self, effect: Effect, params: Mapping[str, Any] | None = None) -> None:
        if not effect.path:
            raise ConfigError("a file effect needs path")
        self.path = Path(effect.path)
        if effect.contains == "":
            raise ConfigError("a file effect's contains must not be empty")
        self.contains = fill_contains(effect.contains, params or {}) if effect.contains is not None else None
        if self.contains == "":
            raise ConfigError("a file effect's contains is empty once its params are filled")
        exp = effect.expect.equals
        self.hash = isinstance(exp, str) and exp.startswith("sha256:")
        if self.hash and self.contains is not None:
            raise ConfigError("a file effect counts contains or compares a sha256, not both")

    def read(self) -> Reading:
        try:
            if self.contains is not None:
                return Reading(True, read_file_text(self.path).count(self.contains.encode()))
            if self.hash:
                return Reading(True, self._sha256())
            return Reading(True, 1 if self.path.exists() else 0)
        except FileNotFoundError:
            return Reading(True, None if self.hash else 0)
        except OSError as e:
            return Reading(False, error=f"{self.path}: {type(e).__name__}: {e.strerror or e}")
        except UnreadableFile as e:
            return Reading(False, error=f"{self.path} is {e}: a file effect reads plain or gzip-compressed text")

    def _sha256(self) -> str:
        h = hashlib.sha256()
        with self.path.open("rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
        return "sha256:" + h.hexdigest()


def unreadable_file_effect(effect: Effect) -> str | None:
    """Why a file effect that counts `contains` (or compares `changes`) can never be judged, told before any run (`flow validate`): the file
    is there already, in a format no file effect reads (a zip, bzip2, xz ... file); None when it can be read or is
    not there yet (a run's baseline read says so then, before any input)."""
    if effect.kind != "file" or (effect.contains is None and effect.changes is None) or not effect.path:
        return None
    try:
        with open(effect.path, "rb") as f:
            fmt = unreadable_format(f.read(16))
    except OSError:
        return None
    return (
        None
        if fmt is None
        else f"effect path {effect.path} is {fmt}: a file effect reads plain or gzip-compressed text"
    )


def _urllib() -> Any:
    """urllib.request, imported on first use: only http effects need it, and with http.client and email it costs
    every CLI start ~25 ms (its HTTPError and URLError are urllib.error's)."""
    import urllib.request

    return urllib.request


def _no_redirect_opener() -> Any:
    """An opener that reports a 3xx instead of following it: a redirect could carry the bearer token to another host."""
    request = _urllib()

    class NoRedirect(request.HTTPRedirectHandler):  # type: ignore[misc, name-defined]
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    return request.build_opener(NoRedirect)


def _psycopg() -> Any:
    """psycopg, imported on first use: only PostgreSQL verifiers need it, and it costs every CLI start ~30 ms."""
    import psycopg
    import psycopg.conninfo  # noqa: F401  (submodule used above)

    return psycopg
